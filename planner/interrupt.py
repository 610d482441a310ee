"""Ctrl-C stops any command at once (issue #21): exit status 130, one line saying what was
stopped, worker processes ended, no file half-written.

A solver deep in its C code does not return to Python for a signal, so the command runs
in a worker thread while the main thread waits where Python can hear SIGINT. On Ctrl-C
the main thread ends every worker process, removes the temporary file of any write under
way (files are written to a temporary name and renamed: the earlier file stays) and exits
the process, solver and all.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
from contextlib import contextmanager

EXIT_INTERRUPTED = 130

_state = {"stage": "starting"}
_writing: set[str] = set()  # temporary files being written
_before_ending: list = []  # called before worker processes are ended (see `ending`)
_lock = threading.Lock()


def set_stage(text: str) -> None:
    """What the command is doing, for the line Ctrl-C prints."""
    _state["stage"] = text


@contextmanager
def writing(tmp: str):
    """Mark `tmp` as a file under way: removed if the command is interrupted."""
    with _lock:
        _writing.add(str(tmp))
    try:
        yield
    finally:
        with _lock:
            _writing.discard(str(tmp))


@contextmanager
def ending(hook):
    """While inside, `hook()` runs on Ctrl-C before the worker processes are ended: a local
    Dask cluster's nannies would otherwise start new workers in their place, whose start-up
    the exit cuts off mid-way (a traceback on the terminal)."""
    with _lock:
        _before_ending.append(hook)
    try:
        yield
    finally:
        with _lock:
            _before_ending.remove(hook)


def run(fn, *args, **kwargs):
    """`fn(*args, **kwargs)` in a worker thread; its result, or its exception re-raised
    here. On Ctrl-C: stop everything and exit 130."""
    if threading.current_thread() is not threading.main_thread():
        return fn(*args, **kwargs)  # already inside (a test runner's thread, say)
    # heard even where the shell started us with SIGINT ignored (a background job)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            outcome["error"] = e

    worker = threading.Thread(target=target, name="planner-command", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.1)
            # (Dask starting its local workers sets SIGINT back to the default at times,
            # which ended the command with no word of what was stopped: ours again)
            if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
                signal.signal(signal.SIGINT, signal.default_int_handler)
    except KeyboardInterrupt:
        stop()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def stop() -> None:
    """End worker processes, remove files under way, say what was stopped, exit 130."""
    end_workers()
    with _lock:
        for tmp in list(_writing):
            try:
                os.unlink(tmp)
            except OSError:
                pass
    sys.stderr.write(f"\ninterrupted while {_state['stage']}: stopped; no file written "
                     "(an earlier one is left as it was)\n")
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def end_workers() -> None:
    """End this process's worker processes, none started again in their place."""
    with _lock:
        hooks = list(_before_ending)
    for hook in hooks:
        try:
            hook()
        except Exception:  # noqa: BLE001 - ending the workers matters more
            pass
    for child in multiprocessing.active_children():
        child.terminate()
    for child in multiprocessing.active_children():
        child.join(0.5)
        if child.is_alive():
            child.kill()
