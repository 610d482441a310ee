"""The stages in order: candidates → model → solve → plan. Each is usable on its own."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from planner.candidates import find_candidates
from planner.graph import Transit
from planner.model import PlanningModel, Restrictions, build_model
from planner.plan import Plan, extract_plan
from planner.scenario import Scenario
from planner.solve import SolveResult, solve


@dataclass
class Run:
    model: PlanningModel
    plan: Plan | None  # None when the solver found no plan
    result: SolveResult
    seconds: dict[str, float] = field(default_factory=dict)


def plan_scenario(scenario: Scenario, solver: str | None = None,
                  time_limit: float | None = None, gap: float | None = None,
                  restrictions: Restrictions | None = None,
                  transit: Transit | None = None, threads: int | None = 1) -> Run:
    st = scenario.settings
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    transit = transit or Transit(scenario)
    seconds["graph"] = time.perf_counter() - t
    t = time.perf_counter()
    candidates = find_candidates(scenario, transit)
    seconds["candidates"] = time.perf_counter() - t
    t = time.perf_counter()
    model = build_model(scenario, candidates, restrictions)
    seconds["build"] = time.perf_counter() - t
    result = solve(model, solver or st.solver,
                   time_limit if time_limit is not None else st.time_limit_s,
                   gap if gap is not None else st.mip_gap, threads=threads)
    seconds["solve"] = result.seconds
    t = time.perf_counter()
    plan = extract_plan(model, result) if result.has_solution else None
    seconds["extract"] = time.perf_counter() - t
    return Run(model, plan, result, seconds)
