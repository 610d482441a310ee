import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# The work clock at the fitted machine's pace (planner.solve.pace): the tests' plans and
# rounds are the same on every machine, and no run measures or keeps a pace
os.environ["PLANNER_PACE"] = "1"
# pytest-xdist's workers say COLUMNS=80; without it, as in a log, a problem the command
# reports stays on one line (planner.cli.common.err) whichever way the suite runs
for size in ("COLUMNS", "LINES"):
    os.environ.pop(size, None)


@pytest.fixture(scope="session")
def measured():
    """This machine's pace, measured once for the session (planner.solve.pace), for the
    tests of what a budget holds: at the suite's pace of 1 a machine twice as slow as
    the fitted one runs each step twice as long as reckoned, and the wall clock's
    safety stops, not the work clock, decide what is done."""
    from planner.solve.pace import measured_pace

    return measured_pace()


@pytest.fixture
def own_pace(monkeypatch, measured):
    """Commands run in this test at this machine's pace, as a user's would, never under
    the suite's 1; the suite's pace is back for the tests after it."""
    from planner.solve import work

    monkeypatch.setenv("PLANNER_PACE", str(max(1.0, measured)))
    yield
    work.set_pace(1.0)
