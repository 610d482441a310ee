"""The stages in order: candidates → model → solve → plan. Each is usable on its own."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from planner.candidates import find_candidates
from planner.graph import Transit
from planner.columns import generate_columns
from planner.model import ModelBuilder, PlanningModel, Restrictions
from planner.plan import Plan, extract_plan
from planner.scenario import Scenario
from planner.solve import SolveResult, solve


# Supply cells above which the full model is not built: at 200×40×24 (1.6 M cells) its
# build alone took 58 s and 7.4 GiB, and its LP did not finish in 60 s (benchmarks/).
GENERATE_ABOVE = 1_000_000
GENERATE_SHARE = 0.5  # of the time limit, at most, for column generation


@dataclass
class Run:
    model: PlanningModel
    plan: Plan | None  # None when the solver found no plan
    result: SolveResult
    seconds: dict[str, float] = field(default_factory=dict)


def plan_scenario(scenario: Scenario, solver: str | None = None,
                  time_limit: float | None = None, gap: float | None = None,
                  restrictions: Restrictions | None = None,
                  transit: Transit | None = None, threads: int | None = 1,
                  columns: str = "auto") -> Run:
    """columns: "all" builds every candidate cell; "generate" builds the cells column
    generation (planner.columns) finds; "auto" generates above GENERATE_ABOVE cells."""
    st = scenario.settings
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    transit = transit or Transit(scenario)
    seconds["graph"] = time.perf_counter() - t
    t = time.perf_counter()
    candidates = find_candidates(scenario, transit)
    seconds["candidates"] = time.perf_counter() - t
    limit = time_limit if time_limit is not None else st.time_limit_s
    t = time.perf_counter()
    builder = ModelBuilder(scenario, candidates, restrictions)
    cells = builder.cell_count
    if columns == "generate" or (columns == "auto" and cells > GENERATE_ABOVE):
        target = gap if gap is not None else st.mip_gap
        generated = generate_columns(builder, GENERATE_SHARE * limit, threads,
                                     stop_gap=target / 2)
        seconds["columns"] = time.perf_counter() - t
        if generated is None:
            model = builder.build(set())
            result = SolveResult(
                solver=solver or st.solver, status="no_solution",
                termination="column generation: no LP optimum within the time limit",
                has_solution=False, objective=None, bound=None, gap=None,
                seconds=seconds["columns"])
            return Run(model, None, result, seconds)
        model = generated.model
        limit = max(1.0, limit - seconds["columns"])
        strategy = "lp-guided"
    else:
        model = builder.build()
        seconds["build"] = time.perf_counter() - t
        strategy = "auto"
    result = solve(model, solver or st.solver, limit,
                   gap if gap is not None else st.mip_gap, threads=threads, strategy=strategy)
    seconds["solve"] = result.seconds
    t = time.perf_counter()
    plan = extract_plan(model, result) if result.has_solution else None
    seconds["extract"] = time.perf_counter() - t
    return Run(model, plan, result, seconds)
