"""Output files written atomically: to a temporary name beside the target, then renamed,
so a failed or interrupted run leaves any earlier file as it was (SPEC §5); with the mode
any new file gets under the umask (SPEC §4 v2)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from planner.interrupt import writing


def write_atomically(path: Path, write: Callable[[str], None]) -> None:
    """`write(tmp)` fills a temporary file beside `path`, which then replaces `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    honour_umask(tmp)
    try:
        with writing(tmp):  # Ctrl-C removes it
            write(tmp)
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def honour_umask(path) -> None:
    """Give a file made by mkstemp (always 0600) the mode any new file gets."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)
