"""A call run in a process of its own, beside the command, while the command goes on: on
a machine with a second core the call costs the command no time (the comparison plans of
`planner solve` run so, issue #17).

The call and its arguments go to `python -m planner.beside` pickled on its stdin, its
result comes back pickled on its stdout. The process has a session of its own, so a
Ctrl-C on the terminal reaches the command alone, which ends the process (planner.interrupt)
before it exits; output the call's libraries write goes to stderr, never into the result.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import traceback
from contextlib import ExitStack

from planner import interrupt


class BesideFailed(RuntimeError):
    """The call raised, or its process ended without a result."""


class BesideLate(BesideFailed):
    """The call was not done within the time it was given (its process is ended)."""


class Beside:
    """`fn(*args, **kwargs)` in a process of its own, started at once; `result()` waits
    for it. Use as a context manager: leaving it ends a process still running."""

    def __init__(self, fn, *args, **kwargs):
        from planner.solve.work import at_pace

        # at the command's pace: its reckonings, not a new process's default
        call = pickle.dumps((at_pace(fn), args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        self._proc = subprocess.Popen([sys.executable, "-m", "planner.beside"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, start_new_session=True)
        self._out: tuple[bytes, bytes] | None = None
        # the call is written and the answer read in a thread: the command goes on
        self._thread = threading.Thread(target=self._talk, args=(call,), daemon=True,
                                        name="planner-beside")
        self._thread.start()
        self._stack = ExitStack()
        self._stack.enter_context(interrupt.ending(self.end))

    def _talk(self, call: bytes) -> None:
        try:
            self._out = self._proc.communicate(call)
        except (OSError, ValueError):  # ended from outside while talking
            self._out = (b"", b"")

    def result(self, timeout: float | None = None):
        """The call's value; BesideFailed if it raised, its process died, or it was not
        done within `timeout` seconds (then it is ended)."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.end()
            self._thread.join(5)
            raise BesideLate(f"not done within the time limit ({timeout:.1f} s more)")
        out, err = self._out or (b"", b"")
        if self._proc.returncode != 0 or not out:
            lines = err.decode(errors="replace").strip().splitlines()
            raise BesideFailed(lines[-1] if lines else
                               f"the process ended with status {self._proc.returncode}")
        return pickle.loads(out)

    def end(self) -> None:
        """End the process if it is still running."""
        if self._proc.poll() is None:
            self._proc.kill()

    def __enter__(self) -> "Beside":
        return self

    def __exit__(self, *exc) -> None:
        self.end()
        self._thread.join(5)
        self._stack.close()


def _serve() -> None:
    """The process's side: read the call, run it, write its value."""
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything else written to stdout goes to stderr, not into the answer
    fn, args, kwargs = pickle.load(sys.stdin.buffer)
    try:
        value = fn(*args, **kwargs)
    except BaseException:  # noqa: BLE001 - reported to the command through stderr
        traceback.print_exc()
        sys.exit(1)
    pickle.dump(value, answer, protocol=pickle.HIGHEST_PROTOCOL)
    answer.close()


if __name__ == "__main__":
    _serve()
