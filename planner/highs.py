"""PuLP's HiGHS interface, with the matrix handed over in bulk and an optional start.

PuLP's own `HiGHS.buildSolverModel` adds one column and one row per call; on planner-sized
models that hand-off costs as much as the solve. Here the same PuLP model becomes arrays
(costs, bounds, CSR rows) passed in three calls. The PuLP model stays the one description
of the problem: names, `writeMPS` and the reading of results are PuLP's.
"""

from __future__ import annotations

import time

import numpy as np
import pulp

# Seconds spent handing models to HiGHS and in HiGHS itself, summed over runs (benchmarks).
TIMES = {"handoff": 0.0, "run": 0.0}


_UNSET = object()
_threads_in_use: object = _UNSET


class BulkHiGHS(pulp.HiGHS):
    def __init__(self, *args, start: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.start = start  # use the variables' current values as a start

    def buildSolverModel(self, lp):
        import highspy

        started = time.perf_counter()
        inf = highspy.kHighsInf
        h = lp.solverModel
        variables = self._variables = lp.variables()
        n = len(variables)
        for i, v in enumerate(variables):
            v.index = i
        sign = -1.0 if lp.sense == pulp.LpMaximize else 1.0
        cost = np.zeros(n)
        for v, a in lp.objective.items():
            cost[v.index] = sign * a
        lower = np.array([-inf if v.lowBound is None else v.lowBound for v in variables],
                         dtype=float)
        upper = np.array([inf if v.upBound is None else v.upBound for v in variables],
                         dtype=float)
        empty_i = np.zeros(0, dtype=np.int32)
        h.addCols(n, cost, lower, upper, 0, empty_i, empty_i, np.zeros(0))
        if self.mip:
            ints = np.array([v.index for v in variables if v.cat == pulp.LpInteger],
                            dtype=np.int32)
            if len(ints):
                h.changeColsIntegrality(len(ints), ints, np.full(
                    len(ints), highspy.HighsVarType.kInteger))
        constraints = list(lp.constraints.values())
        m = len(constraints)
        starts = np.zeros(m, dtype=np.int32)
        row_lower = np.empty(m)
        row_upper = np.empty(m)
        index: list[int] = []
        value: list[float] = []
        for i, c in enumerate(constraints):
            c.index = i
            starts[i] = len(index)
            for v, a in c.items():
                if a != 0:
                    index.append(v.index)
                    value.append(a)
            lb, ub = c.getLb(), c.getUb()
            row_lower[i] = -inf if lb is None else lb
            row_upper[i] = inf if ub is None else ub
        if m:
            h.addRows(m, row_lower, row_upper, len(index), starts,
                      np.array(index, dtype=np.int32), np.array(value, dtype=float))
        TIMES["handoff"] += time.perf_counter() - started

    def callSolver(self, lp):
        import highspy

        global _threads_in_use
        # HiGHS keeps one thread scheduler per process; a run asking for another thread
        # count than the last one fails unless the scheduler is reset first.
        if self.threads != _threads_in_use:
            if _threads_in_use is not _UNSET:
                highspy.Highs.resetGlobalScheduler(True)
            _threads_in_use = self.threads
        if self.start:
            solution = highspy.HighsSolution()
            solution.col_value = [v.varValue if v.varValue is not None else 0.0
                                  for v in self._variables]
            lp.solverModel.setSolution(solution)
        started = time.perf_counter()
        lp.solverModel.run()
        TIMES["run"] += time.perf_counter() - started
