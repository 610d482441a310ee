"""The `planner` command line (SPEC §4). It only calls the stages in order.

Exit status: 0 solved (optimal, or feasible at the time limit, which is said), 2 bad input,
3 no plan found within the limits, 1 an unexpected error. Progress and listings go to
stderr; stdout carries only the JSON of --json.

Each command lives in a module of this package (inputs, market, solve, whatif), on the one
`app` of planner.cli.common.
"""

from planner.cli import solve, whatif, inputs, market  # noqa: F401, I001 (they register, in this order)
from planner.cli.common import app, default_scenario
from planner.cli.solve import FRESH_SEED

__all__ = ["app", "default_scenario", "FRESH_SEED", "main"]


def main() -> None:
    """The `planner` command. The time limit's clock starts when the process did, before
    Python and the command load their libraries (pandas, PuLP, HiGHS, openpyxl: 1-2 s
    that the command's own clock did not count, so a 10-s limit ended past 12 s; then
    the interpreter's start and typer's, 0.4-0.6 s a wall clock around the command sees)."""
    import gc

    from planner.cli import common

    common.STARTED = common.process_started()
    try:
        app(prog_name="planner")
    finally:
        # the interpreter's exit collects every object the libraries made (pandas, Dask:
        # 0.3-0.45 s after the command's last line, past the clock that keeps it within
        # --time-limit); frozen, they are left to the process's end. Atexit handlers and
        # finalizers of objects freed by reference counting still run.
        gc.freeze()
