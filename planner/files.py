"""Output files written atomically: to a temporary name beside the target, then renamed,
so a failed or interrupted run leaves any earlier file as it was (SPEC §5); with the mode
any new file gets under the umask (SPEC §4 v2), or the mode of the file it replaces."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from planner.interrupt import writing


def write_atomically(path: Path, write: Callable[[str], None]) -> None:
    """`write(tmp)` fills a temporary file beside `path`, which then replaces `path`."""
    write_all_atomically([(path, write)])


def write_all_atomically(files: list[tuple[Path, Callable[[str], None]]]) -> None:
    """Each `write(tmp)` fills a temporary file beside its path; only when all are
    written do they replace their paths (a table that cannot be written leaves every
    other as it was: market import had rewritten three tables before failing on the
    fourth)."""
    done: list[tuple[str, Path]] = []
    with ExitStack() as stack:
        try:
            for path, write in files:
                path = Path(path)
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=path.suffix,
                                           dir=path.parent)
                os.close(fd)
                done.append((tmp, path))
                _mode_of(path, tmp)
                stack.enter_context(writing(tmp))  # Ctrl-C removes it
                write(tmp)
            for tmp, path in done:
                os.replace(tmp, path)
        finally:
            for tmp, _ in done:
                if os.path.exists(tmp):
                    os.unlink(tmp)


def _mode_of(path: Path, tmp: str) -> None:
    """Give `tmp` (mkstemp makes it 0600) the mode of the file it will replace, or the
    mode any new file gets (a user's 0600 offers.csv stays 0600)."""
    try:
        os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
    except FileNotFoundError:
        honour_umask(tmp)


def honour_umask(path) -> None:
    """Give a file made by mkstemp (always 0600) the mode any new file gets."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)
