"""Run a solver on a built model and normalise what it says.

PuLP's own status is not enough: at a time limit it reports "Optimal" for HiGHS, and CBC
without an incumbent leaves LP-relaxation values in the variables. So we read HiGHS's model
status, primal solution status, gap and bound ourselves, and for CBC trust a solution only
when PuLP's solution status says one was found and the values are integral.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import pulp

from planner.model.builder import PlanningModel
from planner.solve.budget import LEAST_LIMIT_S
from planner.solve.work import (
    branch_and_bound_s,
    nodes_within,
    root_node_s,
    wall_stop_after_plan_s,
    wall_stop_s,
)


@dataclass(frozen=True)
class SolveResult:
    solver: str
    status: str  # optimal | feasible | infeasible | no_solution | error
    termination: str  # the solver's own word: optimal, time limit, infeasible, …
    has_solution: bool
    objective: float | None
    bound: float | None  # a proven lower bound on the objective
    gap: float | None  # (objective − bound) / (objective − unservable_usd): SPEC §4 v2
    seconds: float
    version: str = ""
    rounds: str = ""  # the decomposition's rounds (planner.solve.decompose.method.Rounds)
    unservable_usd: float = 0.0  # the penalty of demand no source can serve (objective)
    # the seconds of work it is reckoned to have taken (planner.solve.work: from HiGHS's
    # counts; CBC gives none: its seconds)
    work_s: float = 0.0
    # HiGHS's branch and bound stopped by its wall-clock time limit, not its node limit:
    # the machine's load, not the work, decided where (`solve_within`)
    wall_stopped: bool = False

    @property
    def ok(self) -> bool:
        return self.has_solution and self.status in ("optimal", "feasible")


def honest_gap(objective: float, bound: float, unservable_usd: float) -> float:
    """The gap on what the plan can change (SPEC §4 v2): demand no source can serve is
    in both the objective and the bound, and out of the denominator."""
    changeable = objective - unservable_usd
    # nothing to change but float noise (1e-12 of the objective: at 1e-9, $1,811 of plan
    # beside $8.2 T of unservable penalty counted as nothing, and a 1.45 % gap as 0)
    if changeable <= 1e-12 * max(1.0, abs(objective)):
        return 0.0 if objective - bound <= 1e-6 * max(1.0, abs(objective)) else math.inf
    return max(0.0, (objective - bound) / changeable)


def status_of(gap: float | None, asked: float) -> str:
    """`optimal` where the gap against a proven bound is within the gap asked (SPEC §4 v2),
    else `feasible`."""
    # (relatively: CBC stopped at 1e-4 states 1.00000000000006e-4)
    return "optimal" if gap is not None and gap <= max(asked, 1e-9) * (1 + 1e-9) \
        else "feasible"


def solve(model: PlanningModel, solver: str = "highs", time_limit: float = 60.0,
          gap: float = 1e-4, threads: int | None = 1, msg: bool = False,
          nodes: int | None = None) -> SolveResult:
    """Solve `model` whole by branch and bound, in place (HiGHS: at most `nodes` nodes);
    deterministic for a given model (fixed seed and threads) where no time limit stops
    it."""
    prob = model.prob
    if not model.unmet and not model.commit:  # nothing to decide: give the solver a column
        prob.addVariable(prob.add_variable("empty__model", 0, 0))
    started = time.perf_counter()
    result = _run(prob, solver, max(LEAST_LIMIT_S, time_limit), gap, threads, msg,
                  nodes=nodes)
    seconds = time.perf_counter() - started
    result.setdefault("work_s", seconds)
    return SolveResult(seconds=seconds, **result)


def solve_within(model: PlanningModel, solver: str, seconds: float, wall: float,
                 gap: float, threads: int | None) -> SolveResult:
    """`solve` in `seconds` of work (planner.solve.budget): bounded by nodes
    (planner.solve.work.nodes_within) rather than the clock, so that it stops at the
    same node on every run; the wall clock stops it far past that
    (planner.solve.work.wall_stop_s: its root node alone may take so long), or at
    `wall` seconds (the budget's safety stop)."""
    raw = solve(model, solver, min(wall, wall_stop_s(seconds)), gap,
                threads, nodes=nodes_within(seconds, len(model.supply)))
    if raw.termination.startswith("time limit"):  # all it was given, however it stopped
        # (CBC has no node limit: its time limit is its only stop, not a safety one)
        raw = dataclasses.replace(raw, work_s=seconds, wall_stopped=solver == "highs")
    return raw


# the most values of one integer column HiGHS's root reduced-cost fixing walks
DOMAIN_WALKED = 1000


def integer_domain(model: PlanningModel) -> float:
    """The values `model`'s integer columns span in all, each counted up to
    DOMAIN_WALKED (planner.solve.work.root_node_s)."""
    return float(sum(min(DOMAIN_WALKED, (v.upBound if v.upBound is not None else math.inf)
                         - (v.lowBound or 0.0))
                     for v in model.integer_variables() if v.cat != pulp.LpContinuous))


def short_of_root(model: PlanningModel, solver: str, seconds: float) -> SolveResult | None:
    """Branch and bound not started, where given `seconds` it would not get through its
    root node (planner.solve.work.root_node_s): short of it, its plan is at best a
    heuristic's and its stop may come seconds late, where the decomposition plans in a
    fraction of that. None where the root fits."""
    root = root_node_s(integer_domain(model))
    if root <= seconds:
        return None
    return SolveResult(solver=solver, status="no_solution", has_solution=False,
                       termination=f"not run (its root node is reckoned at {root:.1f} s, "
                                   f"over the {seconds:.1f} s it had)",
                       objective=None, bound=None, gap=None, seconds=0.0)


def solve_after_plan(model: PlanningModel, solver: str, seconds: float, budget,
                     gap: float, threads: int | None, only_way: bool = False
                     ) -> SolveResult:
    """`solve_within` for branch and bound that can only improve a plan made already
    (the instance repair, the whole model after the decomposition): stopped on the wall
    clock soon after its `seconds` (planner.solve.work.wall_stop_after_plan_s) or at
    `budget`'s safety stop, not started where its root node would not fit
    (`short_of_root`) unless it is the `only_way` to a plan; its work is spent on
    `budget`."""
    skipped = None if only_way else short_of_root(model, solver, seconds)
    if skipped is not None:
        return skipped
    raw = solve_within(model, solver, seconds,
                       min(budget.wall_left(), wall_stop_after_plan_s(seconds)), gap, threads)
    spent_on(budget, raw)
    return raw


def spent_on(budget, raw: SolveResult) -> None:
    """What `raw`'s solve is reckoned to have taken, spent on `budget`, and its own
    wall-clock stop, if that ended it, noted there (`Budget.wall_stopped`)."""
    budget.spend(raw.work_s)
    if raw.wall_stopped:
        budget.wall_stopped()


def _run(prob, solver, time_limit, gap, threads, msg, warm=False, nodes=None) -> dict:
    if solver == "highs":
        return _solve_highs(prob, time_limit, gap, threads, msg, warm, nodes)
    if solver == "cbc":
        return _solve_cbc(prob, time_limit, gap, threads, msg, warm)
    raise ValueError(f"unknown solver {solver!r}")


def _version(solver: str) -> str:
    if solver == "highs":
        from planner.solve.highs import new_highs

        h = new_highs()
        return f"HiGHS {h.versionMajor()}.{h.versionMinor()}.{h.versionPatch()}"
    return "CBC (PuLP)"


def _solve_highs(prob, time_limit, gap, threads, msg, warm=False, nodes=None) -> dict:
    import highspy

    from planner.solve.highs import BulkHiGHS

    extra = {} if nodes is None else {"mip_max_nodes": int(nodes)}
    cmd = BulkHiGHS(msg=msg, timeLimit=time_limit, gapRel=gap, threads=threads,
                    random_seed=0, start=warm, **extra)
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
    work = branch_and_bound_s(info.simplex_iteration_count, h.getNumNz(),
                              max(0, info.mip_node_count))
    return dict(solver="highs", status=norm, termination=termination,
                has_solution=has_solution, objective=objective, bound=bound, gap=mip_gap,
                version=_version("highs"), work_s=work)


# CBC proves no bound it tells: the bound stated for it is its plan less the gap it was
# asked for, a gap exactly at the one requested, which the printed figures' rounding
# then pushed past it beside "optimal" (a $770 plan: 1.04e-4 of 1e-4 asked). It is
# asked for this share of the gap, so that its stated gap stays within the one requested.
CBC_GAP_SHARE = 0.99


def _solve_cbc(prob, time_limit, gap, threads, msg, warm=False) -> dict:
    gap *= CBC_GAP_SHARE
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
    # CBC says "optimal" once its gap is within gapRel and tells PuLP no bound: what it
    # proved is the objective less that share of the objective it saw (PuLP hands it
    # the objective without its constant)
    offset = prob.objective.constant if prob.objective is not None else 0.0
    bound = objective - gap * abs(objective - offset) if norm == "optimal" else None
    return dict(solver="cbc", status=norm, termination=termination,
                has_solution=has_solution, objective=objective, bound=bound,
                gap=gap if norm == "optimal" else None, version="CBC (PuLP)")
