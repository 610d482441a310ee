"""The stages in order: graph → candidates → model index → solve → plan.

A model small enough for branch and bound to prove its optimum within seconds is solved
whole (HiGHS or CBC); a larger one by the decomposition (planner.solve.decompose), which
proves a bound at every size and builds its plan from the same LP. Either way the plan
passes through the same tables, and the gap is taken on what the plan can change.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from planner.io.scenario import Scenario
from planner.model.builder import ModelBuilder, Restrictions
from planner.model.candidates import find_candidates
from planner.model.graph import Transit
from planner.model.solution import Solution
from planner.report.plan import Plan, extract_plan
from planner.solve.budget import Budget
from planner.solve.instances import (
    INSTANCE_SHARE,
    REPAIR_CELLS,
    cheapest,
    whole_instances,
)
from planner.solve.whole import (
    SolveResult,
    _version,
    honest_gap,
    short_of_root,
    solve_after_plan,
    solve_within,
    spent_on,
    status_of,
)
from planner.solve.work import (
    build_s,
    model_index_s,
    plan_tables_s,
    solution_tables_s,
    wall_stop_after_plan_s,
)

# Supply cells up to which a model is solved whole: branch and bound proves the
# optimum of such models in about a second; at the default scenario's 40 k cells HiGHS
# took over 200 s for its root node alone (benchmarks/README.md).
WHOLE_CELLS = 3000
# The largest gap branch and bound is asked for, whatever gap was requested (the status
# still reads the requested one): a model small enough to be solved whole is proven that
# close in well under a second, and a looser gap lets it stop at a first incumbent that
# may leave demand unmet beside room (--gap 1 on a 3-region scenario: all of a workload
# left unmet) or sign commitments it never uses (--gap 0.9: 5.6 times the optimum)
WHOLE_GAP = 0.01
# Branch and bound on a model solved whole gets WHOLE_SHARE of the budget. Where it stops
# short of its gap, its incumbent can be far off (a generated 8x8x3 market at 10 s: $37.6 M
# with demand unmet beside room, against an optimum of $1.16 M found on other runs): the
# decomposition plans in the rest, and the cheaper plan that passes the checker stands.
WHOLE_SHARE = 0.75
# Where the decomposition ends with SPARE_S or more of its budget left and short of the
# gap asked (it converged: its bound prices GPUs one by one), on a model of up to
# REPAIR_CELLS cells, branch and bound on the whole model gets the rest: its bound sees
# whole instances and replicas (a 22-region market with 8-GPU instances, 4,032 cells:
# stated gap 12.5 % after 2.3 s of 20, where the whole model proves the plan optimal in
# 0.1 s). Its plan stands if cheaper and valid. Not in a replay (`rounds`): the clock
# would decide what it finds; nor where the decomposition alone is asked for.
SPARE_S = 2.0


@dataclass
class Run:
    builder: ModelBuilder
    plan: Plan | None  # None when the solver itself failed
    result: SolveResult
    seconds: dict[str, float] = field(default_factory=dict)
    prices: tuple | None = None  # the decomposition's best capacity prices (its bound)
    # the least time limit in which the decomposition would have made its plan from the
    # master LP (planner.solve.decompose.method.Outcome.least_s, with what came before it;
    # inf: not within this one; None: the model was solved whole)
    least_s: float | None = None
    solution: Solution | None = None  # the plan's values (None: the solver failed)
    # the seconds of work the solve is reckoned to have taken, index to tables (on a
    # work clock, planner.solve.budget: the same on every run)
    work_s: float = 0.0

    @property
    def candidates(self):
        return self.builder.c

    @property
    def short_of_lp(self) -> bool:
        return short_of_lp(self.least_s)


def short_of_lp(least_s: float | None) -> bool:
    """Whether a solve whose `Run.least_s` this is ran out of time before its master's
    first round: its plan and bound are those at first prices. Never so for a model
    solved whole (None)."""
    return least_s is not None and not math.isfinite(least_s)


def plan_scenario(scenario: Scenario, solver: str | None = None,
                  time_limit: float | None = None, gap: float | None = None,
                  restrictions: Restrictions | None = None,
                  transit: Transit | None = None, threads: int | None = 1,
                  budget: Budget | None = None, rounds=None, progress=None,
                  method: str = "auto") -> Run:
    """Plan `scenario` within `budget` (default: `time_limit` or the scenario's setting,
    from now). `rounds` (planner.solve.decompose.method.Rounds): rebuild a decomposition's plan
    round for round, whatever the clock. `method`: "whole" (branch and bound on the whole
    model), "decompose", or "auto" (whole up to WHOLE_CELLS supply cells)."""
    st = scenario.settings
    budget = budget or Budget.of_work(time_limit if time_limit is not None
                                      else st.time_limit_s)
    solver = solver or st.solver
    gap = gap if gap is not None else st.mip_gap
    seconds: dict[str, float] = {}
    began = budget.elapsed()
    t = time.perf_counter()
    transit = transit or Transit(scenario)
    seconds["graph"] = time.perf_counter() - t
    t = time.perf_counter()
    candidates = find_candidates(scenario, transit, may_buy=None if restrictions is None
                                 else partial(restrictions.allows, scenario))
    seconds["candidates"] = time.perf_counter() - t
    t = time.perf_counter()
    builder = ModelBuilder(scenario, candidates, restrictions)
    seconds["index"] = time.perf_counter() - t
    budget.spend(model_index_s(builder.cell_count))
    t = time.perf_counter()
    whole = method == "whole" or (method == "auto" and rounds is None
                                  and builder.cell_count <= WHOLE_CELLS)
    prices = least_s = None
    if whole:
        solution, result = _whole(builder, solver, budget, gap, threads,
                                  fallback=method == "auto")
        seconds["solve"] = time.perf_counter() - t
    else:
        # offers sold in instances: a share of the time is kept for branch and bound
        # over the cells the decomposition's plan used, where the model is small enough
        # for that to help (`share`: the decomposition's)
        before = budget.elapsed()
        outcome, solution, objective, share = _decomposed(
            builder, budget, solver, threads, builder.cell_count <= REPAIR_CELLS, gap,
            rounds, progress)
        least_s = before + outcome.least_s / share
        done, prices = outcome.rounds, outcome.prices
        bound, termination = outcome.bound, outcome.termination
        if (method == "auto" and rounds is None and builder.cell_count <= REPAIR_CELLS
                and budget.left() >= SPARE_S
                and honest_gap(objective, bound, builder.unservable_usd) > gap):
            solution, objective, bound, termination = _whole_after(
                builder, solution, objective, bound, termination, solver, budget,
                min(gap, WHOLE_GAP), threads)
        seconds["decomposition"] = time.perf_counter() - t
        value = honest_gap(objective, bound, builder.unservable_usd)
        result = SolveResult(
            solver="highs", status="optimal" if value <= gap else "feasible",
            termination=termination, has_solution=True,
            objective=objective, bound=bound, gap=value,
            seconds=seconds["decomposition"], version=_version("highs"),
            rounds=str(done), unservable_usd=builder.unservable_usd)
    plan = None
    if result.has_solution:
        t = time.perf_counter()
        plan = extract_plan(builder, solution, result)
        seconds["extract"] = time.perf_counter() - t
        budget.spend(plan_tables_s(plan))
    return Run(builder, plan, result, seconds, prices, least_s,
               solution if result.has_solution else None, budget.elapsed() - began)


def _whole(builder: ModelBuilder, solver: str, budget: Budget, gap: float,
           threads: int | None, fallback: bool = True) -> tuple[Solution, SolveResult]:
    """The whole model by branch and bound (asked for at most WHOLE_GAP), its gap
    restated on what the plan can change and its objective that of the plan: an
    incumbent may rent more whole instances than its GPUs fill, which the plan does not
    (it rents as many as they need). With `fallback`, where branch and bound stops short
    of its gap (in WHOLE_SHARE of the budget), the decomposition's plan is made in the
    rest: the cheaper that passes the checker stands, under the better bound."""
    began = time.perf_counter()
    model = builder.build()
    budget.spend(build_s(builder.cell_count))
    asked = min(gap, WHOLE_GAP)
    share = WHOLE_SHARE if fallback else 1.0
    seconds = budget.share(share).seconds
    # its share of the wall clock too: stopped there, the decomposition has the rest
    # (with the whole budget's wall, a generated 5x3x1 market's root node took it all at
    # --time-limit 3 and the plan was the decomposition's at first prices, 2.4 times the
    # optimum it finds in 0.2 s); and, with the decomposition to plan after it, stopped
    # as soon after its reckoning as branch and bound after a plan (its root node's cuts
    # count no nodes: a generated 12x7x5 market's, given 4.4 s, ran to 7.3 s and the
    # decomposition's plan, made in 0.6 s, was cheaper)
    wall = budget.wall_left() * share
    if fallback:
        wall = min(wall, wall_stop_after_plan_s(seconds))
    # where its root would not fit, the decomposition has the whole budget
    raw = (short_of_root(model, solver, seconds) if fallback else None) \
        or solve_within(model, solver, seconds, wall, asked, threads)
    spent_on(budget, raw)
    found = [Solution.of_model(model)] if raw.has_solution else []
    bound = raw.bound if raw.bound is not None else (
        raw.objective if raw.status == "optimal" else None)
    if raw.status in ("infeasible", "error"):
        bound = None  # lost in the numbers (`_standing_optimum`): its bound means nothing
    standing = _standing_optimum(builder, raw, found) if fallback else None
    rounds = None  # the decomposition's, where its plan stands: `--rounds` replays it
    if fallback and standing is None:
        outcome, plan, _, _ = _decomposed(builder, budget, solver, threads, repair=False,
                                          gap=gap)
        found.append(plan)
        rounds = str(outcome.rounds)
        bound = outcome.bound if bound is None else max(bound, outcome.bound)
    if not found:
        return Solution(), raw
    solution, objective = standing or _cheapest_valid(builder, found)
    if len(found) > 1:  # each turned into tables and checked
        budget.spend(solution_tables_s(solution, 2 * len(found)))
    stands = raw.has_solution and solution is found[0]  # branch and bound's plan
    if stands:
        objective = min(raw.objective, objective)
    value = None if bound is None else honest_gap(objective, bound, builder.unservable_usd)
    status = status_of(value, gap)
    if not raw.has_solution:
        termination = f"branch and bound: {raw.termination}; the decomposition's plan"
    elif stands:
        termination = raw.termination
    else:
        termination = f"{raw.termination}; the decomposition's plan (branch and bound's " \
            "was dearer)"
    # the solver that made the plan: the decomposition's LPs and MIPs are HiGHS's
    # the seconds of the whole solve: branch and bound not run took none of them
    result = SolveResult(
        solver=raw.solver if stands else "highs", status=status, termination=termination,
        has_solution=True, objective=objective, bound=bound, gap=value,
        seconds=time.perf_counter() - began,
        version=raw.version if stands else _version("highs"),
        rounds="" if stands or rounds is None else rounds,
        unservable_usd=builder.unservable_usd)
    return solution, result


def _standing_optimum(builder: ModelBuilder, raw: SolveResult, found: list[Solution]
                      ) -> tuple[Solution, float] | None:
    """Branch and bound's plan on a whole model, with its objective, where it stands
    alone: proven within its gap, and passing the checker. None where it leaves its plan
    to the decomposition: stopped by its limits; failed or called the model infeasible
    (it always has a plan, demand may go unmet: HiGHS lost its way in the numbers, with
    demand of 10^12 unit-hours a row violated by 0.002, 10^11 replicas of one cell a
    solve error); or its "optimal" plan, within its gap, fails the checker (units worth
    $11 k left unmet beside room in a $1.76 T objective, within HiGHS's tolerances:
    exit 1)."""
    if raw.status != "optimal":
        return None
    return _cheapest_valid(builder, found, strict=True)


def _decomposed(builder: ModelBuilder, budget: Budget, solver: str, threads: int | None,
                repair: bool, gap: float, rounds=None, progress=None):
    """The decomposition's outcome in `budget` (ending once within `gap`), its plan and
    objective in whole instances where offers sell them (planner.solve.instances; with
    `repair`, branch and bound over the cells the plan used gets 1 − INSTANCE_SHARE of
    the budget), and the share of the budget the decomposition had."""
    from planner.solve.decompose.method import decompose

    instances = any(o.gpus_per_instance > 1 for o in builder.scenario.offers)
    share = INSTANCE_SHARE if repair and instances else 1.0
    outcome = decompose(builder, budget.share(share), rounds, progress, gap)
    solution, objective = outcome.solution, outcome.objective
    if instances:
        def enough(cost: float) -> bool:
            gap_now = honest_gap(cost, outcome.bound, builder.unservable_usd)
            return status_of(gap_now, gap) == "optimal"

        solution, objective = whole_instances(builder, solution, solver, budget, threads,
                                              repair, enough)
        budget.spend(solution_tables_s(solution, 2))  # the two plans it compared
    return outcome, solution, objective, share


def _whole_after(builder: ModelBuilder, solution: Solution, objective: float, bound: float,
                 termination: str, solver: str, budget: Budget, gap: float,
                 threads: int | None) -> tuple[Solution, float, float, str]:
    """Branch and bound on the whole model in what is left of `budget`, after the
    decomposition (SPARE_S): the better bound, and the cheaper plan that passes the
    checker, with the termination saying what it did."""
    model = builder.build()
    budget.spend(build_s(builder.cell_count))
    raw = solve_after_plan(model, solver, budget.left(), budget, gap, threads)
    if raw.bound is not None and raw.bound > bound:
        bound = raw.bound
        termination += "; bound from branch and bound on the whole model"
    if raw.has_solution:
        whole = Solution.of_model(model)
        chosen, value = _cheapest_valid(builder, [solution, whole])
        if chosen is whole:
            solution, objective = whole, min(raw.objective, value)
            termination += "; branch and bound's plan"
    return solution, objective, bound, termination


def _cheapest_valid(builder: ModelBuilder, found: list[Solution], strict: bool = False
                    ) -> tuple[Solution, float] | None:
    """Of the plans `found`, the cheapest that passes the checker (else the cheapest; a
    single plan is not checked), with its objective; `strict`: every plan checked, and
    None where none passes."""
    from planner.check import check_plan

    if len(found) == 1 and not strict:
        return cheapest(builder, found)
    restricted = builder.restrictions != Restrictions()
    return cheapest(builder, found,
                    lambda plan: not check_plan(builder.scenario, plan, restricted),
                    strict)


def export_model(run: Run, path) -> None:
    """Write the whole model of a run as MPS (for audit, and for any solver), with its
    objective's constant (existing contracts, unservable demand): PuLP leaves it out;
    MPS states it as the objective row's right-hand side, negated (as HiGHS and CBC
    read it), so the file's optimum is the plan's objective."""
    prob = run.builder.build().prob
    prob.writeMPS(str(path))
    constant = prob.objective.constant if prob.objective is not None else 0.0
    if constant:
        name = prob.objective.name or "OBJ"
        text = Path(path).read_text()
        text = text.replace("\nRHS\n", f"\nRHS\n    RHS       {name:<8}  {-constant: .12e}\n", 1)
        Path(path).write_text(text)
