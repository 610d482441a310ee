"""The whole model's LP relaxation with cover cuts: a bound that sees whole replicas.

The master's LP is the model's LP relaxation, in which replicas carry fractions; at its
optimum the sources that could fill a fractional replica tie, so the Lagrangian function
lifted at its duals sees little of what whole replicas cost (planner.solve.decompose.
replicas, benchmarks/README.md). Cover cuts (planner.model.covers) do: rows every plan
in whole replicas satisfies, added to the LP, move its optimum and its duals at once.
On a model small enough for its LP to be solved whole in a fraction of the budget, that
LP with those rows is one more bound round (the default scenario: the LP relaxation
$26.26 M, with its 13,938 cover cuts $26.43 M).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from planner.model.builder import paused_gc
from planner.model.covers import cover_cuts
from planner.solve.highs import BulkHiGHS
from planner.solve.work import build_s, lp_iterations_within, lp_s, wall_stop_s


@dataclass
class Covered:
    bound: float | None  # the LP's value with the cuts (None: not solved to optimality)
    cuts: int  # the cover cuts added
    work_s: float  # its work, reckoned (planner.solve.work)


def covered_bound(builder, seconds: float | None = None,
                  wall: float | None = None) -> Covered:
    """The LP relaxation of `builder`'s whole model with its cover cuts, within `seconds`
    of work (None: to its optimum, as a replay) and `wall` seconds on the wall clock (a
    safety stop): its optimum is a valid bound; an LP stopped short gives none.

    The LP is solved first without the cuts, then with them from its basis (the dual
    simplex, the cuts' rows all that is infeasible there): the default scenario with
    the cuts of the largest replica alone (5,127) took 48 k iterations and then 4 k,
    where the LP with those cuts from scratch took 63 k: 11 s of HiGHS against 22.8 s
    on a slower machine whose large LPs ran 3-5 times the project's."""
    import highspy

    model = builder.build()
    prob = model.prob
    work = build_s(builder.cell_count)
    h = relaxed_highs(prob)
    if seconds is not None:
        wall = min(wall if wall is not None else float("inf"), wall_stop_s(seconds))
    cuts = 0
    for with_cuts in (False, True):  # the LP, then its cuts from its basis
        if with_cuts:
            with paused_gc():
                cuts = add_cuts(h, cover_cuts(builder, model))
        size = h.getNumNz(), h.getNumCol(), h.getNumRow()
        if seconds is not None:
            h.setOptionValue("simplex_iteration_limit", lp_iterations_within(
                max(0.0, seconds - work), *size, False))
        if wall is not None:  # what the first solve left of the wall-clock stop; HiGHS's
            # clock runs on across runs of one instance, so the limit is on its total
            h.setOptionValue("time_limit", h.getRunTime() + max(0.1, wall))
        started = time.perf_counter()
        h.run()
        if wall is not None:
            wall -= time.perf_counter() - started
        work += lp_s(h.getInfo().simplex_iteration_count, *size, False)
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return Covered(None, cuts, work if seconds is None else max(work, seconds))
    bound = h.getInfo().objective_function_value + prob.objective.constant
    return Covered(bound, cuts, work)


def relaxed_highs(prob):
    """A PuLP model handed to a HiGHS instance (`prob.solverModel`) as its LP
    relaxation, one thread, a fixed seed; a variable's column is its `index`."""
    solver = BulkHiGHS(msg=False, threads=1, mip=False)
    solver.createAndConfigureSolver(prob)
    solver.buildSolverModel(prob)
    h = prob.solverModel
    h.setOptionValue("random_seed", 0)
    return h


def add_cuts(h, cuts) -> int:
    """Add ≥ rows (terms [(variable, coefficient)], right-hand side) to `h`, a model
    from `relaxed_highs`, in one call; how many. (Row by row, each addRow after a solve
    updates the solver's basis: the default scenario's 13,938 cuts took 14.7 s.)"""
    import highspy

    starts, index, values, lower = [], [], [], []
    for terms, rhs in cuts:
        starts.append(len(index))
        index.extend(v.index for v, _ in terms)
        values.extend(a for _, a in terms)
        lower.append(rhs)
    count = len(lower)
    if count:
        h.addRows(count, np.array(lower, dtype=float), np.full(count, highspy.kHighsInf),
                  len(index), np.array(starts, dtype=np.int32),
                  np.array(index, dtype=np.int32), np.array(values, dtype=float))
    return count
