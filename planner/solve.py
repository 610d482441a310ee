"""Run a solver on a built model and normalise what it says.

PuLP's own status is not enough: at a time limit it reports "Optimal" for HiGHS, and CBC
without an incumbent leaves LP-relaxation values in the variables. So we read HiGHS's model
status, primal solution status, gap and bound ourselves, and for CBC trust a solution only
when PuLP's solution status says one was found and the values are integral.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import pulp

from planner.model import PlanningModel


@dataclass(frozen=True)
class SolveResult:
    solver: str
    status: str  # optimal | feasible | infeasible | no_solution | error
    termination: str  # the solver's own word: optimal, time limit, infeasible, …
    has_solution: bool
    objective: float | None
    bound: float | None
    gap: float | None
    seconds: float
    version: str = ""

    @property
    def ok(self) -> bool:
        return self.has_solution and self.status in ("optimal", "feasible")


# Above this many integer variables the LP-guided start (planner.heuristic) runs first.
LARGE_MODEL = 3000
NO_LP_START = "start without an LP"  # in the termination of a "no-lp" solve


def solve(model: PlanningModel, solver: str = "highs", time_limit: float = 60.0,
          gap: float = 1e-4, threads: int | None = 1, msg: bool = False,
          strategy: str = "auto") -> SolveResult:
    """Solve `model` in place; deterministic for a given model (fixed seed and threads).

    strategy: "direct" (the MIP alone), "lp-guided" (heuristic start first), "start-only"
    (the heuristic start and no MIP after it: a part of a plan in parts, whose time is
    better spent on the next part), "no-lp" (the start-only plan built without an LP: a
    part whose LP did not finish in time; `model.full_bound` is its bound), or "auto"
    (lp-guided above LARGE_MODEL integer variables).
    """
    prob = model.prob
    if not model.unmet and not model.commit:  # nothing to decide: give the solver a column
        prob.addVariable(prob.add_variable("empty__model", 0, 0))
    started = time.perf_counter()

    def left() -> float:
        return max(1.0, time_limit - (time.perf_counter() - started))

    integers = len(model.integer_variables())
    alone = strategy in ("start-only", "no-lp")  # no MIP after the start
    guided = alone or strategy == "lp-guided" or (
        strategy == "auto" and integers > LARGE_MODEL)
    start = None
    if guided:
        from planner.heuristic import lp_guided_start

        def run_part(part, limit, part_gap, start=False):
            r = _run(part, solver, min(limit, left()), part_gap, threads, msg, warm=start)
            return r["objective"] if r["has_solution"] else None

        from planner.highs import IncrementalLP

        # column generation's LP, when the model has one, goes on instead
        fresh = solver == "highs" and model.warm_lp is None
        lp = IncrementalLP(left(), threads) if fresh else None
        without_lp = strategy == "no-lp"
        kind = NO_LP_START if without_lp else "LP-guided start"
        start = lp_guided_start(model, run_part, gap, left(), lp, quick=alone,
                                bound=model.full_bound if without_lp else None)
        if start is None and alone:
            return SolveResult(
                solver=solver, status="no_solution",
                termination=f"time limit ({kind} not done)", has_solution=False,
                objective=None, bound=None, gap=None,
                seconds=time.perf_counter() - started, version=_version(solver))
        if start is not None:
            achieved = (start.objective - start.lp_bound) / max(abs(start.objective), 1e-9)
            out_of_time = time.perf_counter() - started >= time_limit - 1.0
            if achieved <= gap or out_of_time or alone:
                # no time left: the whole MIP would only get to read the model
                return SolveResult(
                    solver=solver, status="optimal" if achieved <= gap else "feasible",
                    termination=f"within the gap of the bound ({kind})"
                    if achieved <= gap else f"time limit ({kind})" if out_of_time else kind,
                    has_solution=True, objective=start.objective, bound=start.lp_bound,
                    gap=max(achieved, 0.0), seconds=time.perf_counter() - started,
                    version=_version(solver))
    variables = prob.variables() if start is not None else []
    kept = [v.varValue for v in variables]
    result = _run(prob, solver, left(), gap, threads, msg, warm=start is not None)
    if start is not None:
        if not result["has_solution"] or result["objective"] > start.objective:
            for v, value in zip(variables, kept):  # the solver did not improve: keep the start
                v.varValue = value
            result.update(has_solution=True, objective=start.objective, status="feasible")
        result["bound"] = max(result["bound"] or -math.inf, start.lp_bound)
    if model.full_bound is not None and result["has_solution"]:
        # a restricted model (column generation): its own MIP bound says nothing about
        # the full model, whose LP bound is known
        result["bound"] = min(result["bound"] or math.inf, model.full_bound)
        result["status"] = "feasible"
    if start is not None or model.full_bound is not None:
        if result["has_solution"]:
            result["gap"] = max(0.0, (result["objective"] - result["bound"])
                                / max(abs(result["objective"]), 1e-9))
            if result["gap"] <= gap:
                result["status"] = "optimal"
    return SolveResult(seconds=time.perf_counter() - started, **result)


def _run(prob, solver, time_limit, gap, threads, msg, warm=False) -> dict:
    if solver == "highs":
        return _solve_highs(prob, time_limit, gap, threads, msg, warm)
    if solver == "cbc":
        return _solve_cbc(prob, time_limit, gap, threads, msg, warm)
    raise ValueError(f"unknown solver {solver!r}")


def _version(solver: str) -> str:
    if solver == "highs":
        from planner.highs import new_highs

        h = new_highs()
        return f"HiGHS {h.versionMajor()}.{h.versionMinor()}.{h.versionPatch()}"
    return "CBC (PuLP)"


def _solve_highs(prob, time_limit, gap, threads, msg, warm=False) -> dict:
    import highspy

    from planner.highs import BulkHiGHS

    cmd = BulkHiGHS(msg=msg, timeLimit=time_limit, gapRel=gap, threads=threads,
                    random_seed=0, start=warm)
    try:
        prob.solve(cmd)
    except pulp.PulpSolverError as e:
        return dict(solver="highs", status="error", termination=str(e), has_solution=False,
                    objective=None, bound=None, gap=None)
    h = prob.solverModel
    info = h.getInfo()
    status = h.getModelStatus()
    S = highspy.HighsModelStatus
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    termination = h.modelStatusToString(status).lower()
    if status == S.kOptimal:
        norm = "optimal"
    elif status == S.kInfeasible:
        norm, has_solution = "infeasible", False
    elif has_solution:
        norm = "feasible"  # time, iteration or solution limit with an incumbent
    elif status in (S.kNotset, S.kLoadError, S.kModelError, S.kPresolveError,
                    S.kSolveError, S.kPostsolveError):
        norm = "error"  # the solver failed; not a matter of limits
    else:
        norm = "no_solution"
    # PuLP hands HiGHS the objective without its constant (here: existing contracts)
    offset = prob.objective.constant if prob.objective is not None else 0.0
    objective = info.objective_function_value + offset if has_solution else None
    bound = getattr(info, "mip_dual_bound", None)
    if bound is not None and abs(bound) < 1e300:
        bound += offset
    mip_gap = getattr(info, "mip_gap", None)
    if not prob.isMIP() or (norm == "optimal" and (mip_gap is None or mip_gap > 1e300)):
        mip_gap = 0.0 if norm == "optimal" else mip_gap
    if mip_gap is not None and mip_gap > 1e300:
        mip_gap = None
    return dict(solver="highs", status=norm, termination=termination,
                has_solution=has_solution, objective=objective, bound=bound, gap=mip_gap,
                version=_version("highs"))


def _solve_cbc(prob, time_limit, gap, threads, msg, warm=False) -> dict:
    cmd = pulp.PULP_CBC_CMD(msg=msg, timeLimit=time_limit, gapRel=gap, threads=threads,
                            warmStart=warm)
    try:
        prob.solve(cmd)
    except pulp.PulpSolverError as e:
        return dict(solver="cbc", status="error", termination=str(e), has_solution=False,
                    objective=None, bound=None, gap=None)
    sol = prob.sol_status
    integral = all(
        v.varValue is not None and abs(v.varValue - round(v.varValue)) < 1e-6
        for v in prob.variables() if v.cat != pulp.LpContinuous
    )
    if prob.status == pulp.LpStatusInfeasible:
        norm, has_solution = "infeasible", False
    elif sol == pulp.LpSolutionOptimal and integral:
        norm, has_solution = "optimal", True
    elif sol == pulp.LpSolutionIntegerFeasible and integral:
        norm, has_solution = "feasible", True
    else:
        norm, has_solution = "no_solution", False
    objective = pulp.value(prob.objective) if has_solution else None
    # PuLP says "Optimal" for CBC stopped at a limit with a plan; its solution status tells
    termination = "time limit reached" if norm == "feasible" else \
        pulp.LpStatus[prob.status].lower()
    return dict(solver="cbc", status=norm, termination=termination,
                has_solution=has_solution, objective=objective,
                bound=objective if norm == "optimal" else None,
                gap=0.0 if norm == "optimal" else None, version="CBC (PuLP)")
