"""How fast this machine does the planner's work, against the machine the work clock's
rates were fitted on (planner.solve.work).

The work clock makes a run stopped by its budget stop at the same step every time
(SPEC §2: the same scenario, the same plan). Its rates are seconds on one machine; on
a faster one a budget ended with much of it unused (2026-11-27: 50x40x24 at
--time-limit 60 ended at 34 s, 200x40x24 at 20 s had no time for its first master LP
and stated 40.5 % where the wall clock had found 4.9 %), and on a slower one the wall
clock's safety stop decides, as it did before the work clock. So each machine's pace,
wall seconds per reckoned second, is measured once on a small fixed workload (a HiGHS
LP, Python, numpy: the planner's mix) and kept in a file: every later run on the
machine reads the same pace and gives the same plan, and uses its budget.

`PLANNER_PACE` (a number) sets the pace instead (the tests use 1, the fitted machine's).
Where the file cannot be written, the pace is 1: a pace measured on each run would
differ from run to run, and so would the plans.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from pathlib import Path

# Seconds the calibration (`_measure`) is reckoned to take on the machine the rates were
# fitted on, as its LP, Python and numpy parts, each the least of REPEATS runs. On this
# project's machine on 2026-11-27 they took 0.099-0.104, 0.033 and 0.014-0.015 s, and
# the rates reckoned 1.46-1.84 times the wall clock's pool MIPs (default scenario,
# 50x40x24, 200x40x24) and 1.6-2.0 times its large master LPs: its pace is set to 0.77
# (these are its seconds over 0.77), so that the reckoning stays some 10 % long where it
# is closest (one short of the wall clock lets the safety stop decide).
REFERENCE_S = (0.1335, 0.0425, 0.0188)
REPEATS = 3
LEAST_PACE, MOST_PACE = 0.25, 4.0
ENV = "PLANNER_PACE"
FILE = "pace.json"


def machine_pace() -> float:
    """This machine's pace: from PLANNER_PACE, else the file where it was kept, else
    measured now and kept (1.0 where it cannot be kept)."""
    given = os.environ.get(ENV)
    if given is not None:
        return _given(given)
    try:
        folder = cache_folder()
        folder.mkdir(parents=True, exist_ok=True)
        with _locked(folder):
            path = folder / FILE
            kept = _read(path)
            if kept is not None:
                return kept
            pace = measured_pace()
            _write(path, pace)
            return pace
    except (OSError, RuntimeError):  # RuntimeError: no home folder to keep it under
        return 1.0


def cache_folder() -> Path:
    """Where the pace is kept: $XDG_CACHE_HOME/planner (~/.cache/planner)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "planner"


def measured_pace() -> float:
    """The pace measured now: the calibration's seconds over REFERENCE_S, to 1/16 of an
    octave (a tidy number; the file, not the rounding, keeps it the same)."""
    ratio = sum(_measure()) / sum(REFERENCE_S)
    pace = 2.0 ** (round(16 * math.log2(max(ratio, 1e-9))) / 16)
    return min(MOST_PACE, max(LEAST_PACE, pace))


def _given(text: str) -> float:
    try:
        pace = float(text)
    except ValueError:
        pace = math.nan
    if not (math.isfinite(pace) and pace > 0):
        raise ValueError(f"{ENV}={text!r}: give a number above 0 (1: the fitted machine's "
                         f"pace)")
    return pace


def _machine() -> dict:
    """What the pace belongs to: a file kept from another machine, CPU or solver
    version is measured again."""
    import numpy

    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor()
    return {"host": platform.node(), "cpu": cpu, "cores": os.cpu_count(),
            "python": platform.python_version(), "numpy": numpy.__version__,
            "highs": _highs_version()}


def _highs_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("highspy")
    except PackageNotFoundError:
        return ""


def _read(path: Path) -> float | None:
    try:
        kept = json.loads(path.read_text())
        if kept.get("machine") == _machine():
            pace = float(kept["pace"])
            if LEAST_PACE <= pace <= MOST_PACE:
                return pace
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def _write(path: Path, pace: float) -> None:
    """Kept atomically: a run that reads the file sees the whole of it or none."""
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    temp.write_text(json.dumps({"pace": pace, "machine": _machine(),
                                "measured": time.strftime("%Y-%m-%dT%H:%M:%S")}))
    os.replace(temp, path)


class _locked:
    """One process measures while the others wait and then read what it kept (two
    commands started together would otherwise each measure, and differ)."""

    def __init__(self, folder: Path):
        self.path = folder / f"{FILE}.lock"

    def __enter__(self):
        self.file = open(self.path, "a")
        if sys.platform != "win32":
            import fcntl

            fcntl.flock(self.file, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        self.file.close()  # releases the lock


def _measure() -> tuple[float, float, float]:
    """Seconds of the calibration's LP, Python and numpy parts, each the least of
    REPEATS runs (the first run of each is the slowest: caches, imports)."""
    lp = min(_lp() for _ in range(REPEATS))
    py = min(_python() for _ in range(REPEATS))
    arrays = min(_numpy() for _ in range(REPEATS))
    return lp, py, arrays


def _lp(cells: int = 2000, arcs: int = 14) -> float:
    """HiGHS's dual simplex, one thread, no presolve, on a fixed transport-shaped LP:
    `cells` demand rows, each served by `arcs` of cells/5 capacity rows (as a master LP:
    units over sources, each source's GPUs capped)."""
    import highspy
    import numpy as np

    from planner.solve.highs import _use_threads, new_highs

    rng = np.random.default_rng(7)
    sources = cells // 5
    source = rng.integers(0, sources, size=(cells, arcs))
    demand = rng.uniform(1.0, 5.0, size=cells)
    n = cells * arcs
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, cells + sources
    lp.col_cost_ = (rng.uniform(1.0, 10.0, size=(cells, arcs)) + 0.01 * source).ravel()
    lp.col_lower_, lp.col_upper_ = np.zeros(n), np.full(n, highspy.kHighsInf)
    lp.row_lower_ = np.concatenate([demand, np.full(sources, -highspy.kHighsInf)])
    lp.row_upper_ = np.concatenate([np.full(cells, highspy.kHighsInf),
                                    np.full(sources, 1.3 * demand.sum() / sources)])
    # by columns: each arc's demand row (1) and its source's capacity row (GPUs a unit)
    index = np.empty(2 * n, dtype=np.int32)
    index[0::2] = np.repeat(np.arange(cells), arcs)
    index[1::2] = cells + source.ravel()
    value = np.empty(2 * n)
    value[0::2] = 1.0
    value[1::2] = rng.uniform(0.5, 2.0, size=n)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.arange(0, 2 * n + 1, 2, dtype=np.int32)
    lp.a_matrix_.index_, lp.a_matrix_.value_ = index, value
    _use_threads(1)  # HiGHS's one scheduler a process, as every solve here keeps it
    h = new_highs()
    for option, setting in (("threads", 1), ("random_seed", 0), ("presolve", "off"),
                            ("simplex_strategy", 1)):
        h.setOptionValue(option, setting)
    h.passModel(lp)
    started = time.perf_counter()
    h.run()
    return time.perf_counter() - started


def _python(n: int = 150_000) -> float:
    """Python's own work (dicts of tuples, a sort), as the plan's pools and MIPs are
    built."""
    started = time.perf_counter()
    totals: dict = {}
    for i in range(n):
        key = (i % 97, i % 13, f"p{i % 7}")
        totals[key] = totals.get(key, 0.0) + 0.5 * i
    sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    return time.perf_counter() - started


def _numpy(n: int = 1_000_000) -> float:
    """numpy's gathers, reductions and a stable sort, as a round's pricing does."""
    import numpy as np

    rng = np.random.default_rng(3)
    a = rng.uniform(size=n)
    index = rng.integers(0, n, size=n)
    started = time.perf_counter()
    b = a[index] * 1.5 + a
    least = np.minimum.reduceat(b, np.arange(0, n, 8))
    np.argsort(least, kind="stable")
    return time.perf_counter() - started
