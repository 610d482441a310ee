"""PuLP's HiGHS interface, with the matrix handed over in bulk and an optional start.

PuLP's own `HiGHS.buildSolverModel` adds one column and one row per call; on planner-sized
models that hand-off costs as much as the solve. Here the same PuLP model becomes arrays
(costs, bounds, CSR rows) passed in three calls. The PuLP model stays the one description
of the problem: names, `writeMPS` and the reading of results are PuLP's.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import pulp

# Seconds spent handing models to HiGHS and in HiGHS itself, summed over runs (benchmarks).
TIMES = {"handoff": 0.0, "run": 0.0}


# HiGHS simplex_strategy for the LPs after the first in column generation: 4 primal
WARM_SIMPLEX = 4
DUAL_SIMPLEX = 1  # after bound changes only (the LP-guided start fixing decisions)
# Columns above which an LP with many bounds changed is solved from scratch: a part of
# 1000x100x36 (400 k columns) took 12 s and 32 s by dual simplex from the last basis with
# its commitments, then replicas fixed, 3.5 s each from scratch (but 13 s instead of 2 s
# with only its single-region choices fixed); the default scenario (85 k) is 3 s faster
# warm.
FRESH_ABOVE = 200_000

_UNSET = object()
_threads_in_use: object = _UNSET


def new_highs():
    """A HiGHS instance that prints nothing. HiGHS (1.16) prints its banner on stdout
    when a process builds its first instance, before any option can be set; `planner
    solve --json` keeps stdout for the JSON alone. So stdout's file descriptor, which
    HiGHS writes to, points at /dev/null while the instance is built."""
    import highspy

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    h.setOptionValue("output_flag", False)
    return h


def _use_threads(threads) -> None:
    """HiGHS keeps one thread scheduler per process; a run asking for another thread
    count than the last one fails unless the scheduler is reset first."""
    import highspy

    global _threads_in_use
    if threads != _threads_in_use:
        if _threads_in_use is not _UNSET:
            highspy.Highs.resetGlobalScheduler(True)
        _threads_in_use = threads


def _column_bounds(variables) -> tuple[np.ndarray, np.ndarray]:
    import highspy

    inf = highspy.kHighsInf
    return (np.array([-inf if v.lowBound is None else v.lowBound for v in variables],
                     dtype=float),
            np.array([inf if v.upBound is None else v.upBound for v in variables],
                     dtype=float))


def _add_rows(h, constraints, column_of) -> None:
    """Hand `constraints` to HiGHS `h` as CSR rows; `column_of(variable)` is its column."""
    import highspy

    inf = highspy.kHighsInf
    m = len(constraints)
    if not m:
        return
    starts = np.zeros(m, dtype=np.int32)
    lower = np.empty(m)
    upper = np.empty(m)
    index: list[int] = []
    value: list[float] = []
    for i, c in enumerate(constraints):
        starts[i] = len(index)
        for v, a in c.items():
            if a != 0:
                index.append(column_of(v))
                value.append(a)
        lb, ub = c.getLb(), c.getUb()
        lower[i] = -inf if lb is None else lb
        upper[i] = inf if ub is None else ub
    h.addRows(m, lower, upper, len(index), starts, np.array(index, dtype=np.int32),
              np.array(value, dtype=float))


class BulkHiGHS(pulp.HiGHS):
    def __init__(self, *args, start: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.start = start  # use the variables' current values as a start

    def createAndConfigureSolver(self, lp):
        """PuLP's own, on an instance from `new_highs` (PuLP's would print the banner)."""
        h = lp.solverModel = new_highs()
        if self.msg:
            h.setOptionValue("output_flag", True)
        options = {"mip_rel_gap": self.gapRel, "mip_abs_gap": self.gapAbs,
                   "threads": self.threads,
                   "time_limit": None if self.timeLimit is None else float(self.timeLimit)}
        for key, value in {**options, **self.optionsDict}.items():
            if value is not None:
                h.setOptionValue(key, value)

    def buildSolverModel(self, lp):
        import highspy

        started = time.perf_counter()
        h = lp.solverModel
        variables = self._variables = lp.variables()
        n = len(variables)
        for i, v in enumerate(variables):
            v.index = i
        sign = -1.0 if lp.sense == pulp.LpMaximize else 1.0
        cost = np.zeros(n)
        for v, a in lp.objective.items():
            cost[v.index] = sign * a
        lower, upper = _column_bounds(variables)
        empty_i = np.zeros(0, dtype=np.int32)
        h.addCols(n, cost, lower, upper, 0, empty_i, empty_i, np.zeros(0))
        if self.mip:
            ints = np.array([v.index for v in variables if v.cat == pulp.LpInteger],
                            dtype=np.int32)
            if len(ints):
                h.changeColsIntegrality(len(ints), ints, np.full(
                    len(ints), highspy.HighsVarType.kInteger))
        constraints = list(lp.constraints.values())
        for i, c in enumerate(constraints):
            c.index = i  # PuLP reads duals and slacks back by it
        _add_rows(h, constraints, lambda v: v.index)
        TIMES["handoff"] += time.perf_counter() - started

    def callSolver(self, lp):
        import highspy

        _use_threads(self.threads)
        if self.start:
            solution = highspy.HighsSolution()
            solution.col_value = [v.varValue if v.varValue is not None else 0.0
                                  for v in self._variables]
            lp.solverModel.setSolution(solution)
        started = time.perf_counter()
        lp.solverModel.run()
        TIMES["run"] += time.perf_counter() - started


class IncrementalLP:
    """One HiGHS LP that grows with a PuLP model (column generation): the first `solve`
    hands over the whole model; each later one only what the model builder's last
    extension added (`PlanningModel.growth`: new columns with their entries in old rows,
    new rows), so the simplex goes on from the last basis instead of from nothing."""

    def __init__(self, time_limit: float, threads: int | None = 1):
        import highspy

        self.h = new_highs()
        self.h.setOptionValue("random_seed", 0)
        if threads:
            self.h.setOptionValue("threads", threads)
        self.threads = threads
        self.deadline = time.perf_counter() + time_limit
        self.variables: list[pulp.LpVariable] = []  # in column order
        self.constraints: list[pulp.LpConstraint] = []  # in row order
        self.column: dict[str, int] = {}

    def _add_columns(self, lp: pulp.LpProblem, new: list, entries) -> None:
        """New columns with their cost, bounds and entries in rows HiGHS already has."""
        for v in new:
            self.column[v.name] = len(self.variables)
            self.variables.append(v)
        if not new:
            return
        in_rows: dict[str, list[tuple[int, float]]] = {v.name: [] for v in new}
        for row, v, a in entries:
            if a != 0:
                in_rows[v.name].append((row.index, a))
        starts, index, value = [], [], []
        for v in new:
            starts.append(len(index))
            for row, a in in_rows[v.name]:
                index.append(row)
                value.append(a)
        cost = lp.objective
        self.h.addCols(len(new), np.array([cost.get(v, 0.0) for v in new]),
                       *_column_bounds(new), len(index), np.array(starts, dtype=np.int32),
                       np.array(index, dtype=np.int32), np.array(value, dtype=float))

    def _add_new_rows(self, rows: list) -> None:
        for c in rows:
            c.index = len(self.constraints)  # PuLP reads duals back by it
            self.constraints.append(c)
        _add_rows(self.h, rows, lambda v: self.column[v.name])

    def change_bounds(self, variables) -> None:
        """Hand HiGHS the current PuLP bounds of `variables` (fixing, then releasing);
        before the first solve there is nothing to change (it hands over every bound)."""
        import highspy

        if not self.variables:
            return

        variables = list({v.name: v for v in variables}.values())  # HiGHS refuses repeats
        index = np.array([self.column[v.name] for v in variables], dtype=np.int32)
        if len(index):
            status = self.h.changeColsBounds(len(index), index, *_column_bounds(variables))
            if status != highspy.HighsStatus.kOk:
                raise RuntimeError(f"HiGHS refused the new bounds: {status}")

    def solve(self, lp: pulp.LpProblem, growth=None, fresh: bool = False) -> float | None:
        """The LP relaxation of `lp` (integers relaxed): objective, values in `varValue`,
        duals in each constraint's `pi`; None unless optimal. `growth`: what was added to
        `lp` since the last solve (solved on from the last basis); None on the first, and
        when only bounds changed (`change_bounds`). `fresh`: bounds changed so widely
        that a large LP is solved from scratch."""
        import highspy

        started = time.perf_counter()
        h = self.h
        warm = bool(self.variables)
        if not warm:
            self._add_columns(lp, lp.variables(), ())
            self._add_new_rows(list(lp.constraints.values()))
        elif growth is not None:
            self._add_columns(lp, growth.variables, growth.entries)
            self._add_new_rows(growth.rows)
            # the last basis stays primal feasible when columns join, so primal simplex
            # goes on from it (faster at 50x20x24; dual was faster for the large second
            # round at 200x40x24 — benchmarks/README.md)
            h.setOptionValue("simplex_strategy", WARM_SIMPLEX)
        elif fresh and len(self.variables) > FRESH_ABOVE:
            # many bounds changed (the LP-guided start fixing commitments or replicas) on
            # a large LP: from scratch, so presolve removes the fixed columns
            h.clearSolver()
            h.setOptionValue("simplex_strategy", 0)
        else:  # the last basis stays dual feasible
            h.setOptionValue("simplex_strategy", DUAL_SIMPLEX)
        # HiGHS's clock runs on across runs of one instance: the limit is on its total
        h.setOptionValue("time_limit",
                         h.getRunTime() + max(1.0, self.deadline - time.perf_counter()))
        TIMES["handoff"] += time.perf_counter() - started
        _use_threads(self.threads)
        started = time.perf_counter()
        h.run()
        status = h.getModelStatus()
        S = highspy.HighsModelStatus
        # the simplex may lose its way from the warm basis (status "unknown"): once more
        # with HiGHS's own choice of method, then from scratch
        for retry in (lambda: h.setOptionValue("simplex_strategy", 0), h.clearSolver):
            if status in (S.kOptimal, S.kModelEmpty, S.kTimeLimit, S.kInfeasible):
                break
            retry()
            h.run()
            status = h.getModelStatus()
        TIMES["run"] += time.perf_counter() - started
        if status == highspy.HighsModelStatus.kModelEmpty:  # nothing to decide
            return lp.objective.constant if lp.objective is not None else 0.0
        if status != highspy.HighsModelStatus.kOptimal:
            return None
        solution = h.getSolution()
        for v, x, d in zip(self.variables, solution.col_value, solution.col_dual):
            v.varValue = x
            v.dj = d
        for c, y in zip(self.constraints, solution.row_dual):
            c.pi = y
        constant = lp.objective.constant if lp.objective is not None else 0.0
        return h.getInfo().objective_function_value + constant
