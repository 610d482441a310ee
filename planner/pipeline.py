"""The stages in order: candidates → model → solve → plan. Each is usable on its own."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from planner.candidates import find_candidates
from planner.graph import Transit
from planner.columns import Pricing, generate_columns, room_cells, start_cells
from planner.model import ModelBuilder, PlanningModel, Restrictions
from planner.parts import part_cells, plan_in_parts
from planner.plan import Plan, extract_plan
from planner.scenario import Scenario
from planner.solve import NO_LP_START, SolveResult, solve


# Supply cells above which the full model is not built: at 200×40×24 (1.6 M cells) its
# build alone took 58 s and 7.4 GiB, and its LP did not finish in 60 s (benchmarks/).
GENERATE_ABOVE = 1_000_000
GENERATE_SHARE = 0.5  # of the time limit, at most, for column generation
GENERATE_PART_ABOVE = 100_000  # a part has seconds, not minutes: generate above this
PART_GENERATE_SHARE = 0.7  # of a part's time, at most, for its column generation


@dataclass
class Run:
    model: PlanningModel
    plan: Plan | None  # None when the solver found no plan
    result: SolveResult
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def in_parts(self) -> bool:
        """Whether the plan was planned in parts (its stages then include "parts")."""
        return "parts" in self.seconds


def plan_scenario(scenario: Scenario, solver: str | None = None,
                  time_limit: float | None = None, gap: float | None = None,
                  restrictions: Restrictions | None = None,
                  transit: Transit | None = None, threads: int | None = 1,
                  columns: str = "auto") -> Run:
    """columns: "all" builds every candidate cell; "generate" builds the cells column
    generation (planner.columns) finds; "parts" plans the workloads in groups
    (planner.parts); "auto" generates above GENERATE_ABOVE cells and plans in parts
    when there are more than one part's worth (`in_parts`)."""
    st = scenario.settings
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    transit = transit or Transit(scenario)
    seconds["graph"] = time.perf_counter() - t
    t = time.perf_counter()
    candidates = find_candidates(scenario, transit)
    seconds["candidates"] = time.perf_counter() - t
    limit = time_limit if time_limit is not None else st.time_limit_s
    solver = solver or st.solver
    gap = gap if gap is not None else st.mip_gap
    builder = ModelBuilder(scenario, candidates, restrictions)
    model, result = plan_builder(builder, solver, limit, gap, threads, columns, seconds)
    t = time.perf_counter()
    plan = extract_plan(model, result) if result.has_solution else None
    seconds["extract"] = time.perf_counter() - t
    return Run(model, plan, result, seconds)


def plan_builder(builder: ModelBuilder, solver: str, limit: float, gap: float,
                 threads: int | None = 1, columns: str = "auto",
                 seconds: dict[str, float] | None = None
                 ) -> tuple[PlanningModel, SolveResult]:
    """The model of `builder`'s scenario holding its plan, and the result: whole, through
    column generation, or in parts (`columns` as for `plan_scenario`)."""
    seconds = {} if seconds is None else seconds
    if columns == "parts" or (columns == "auto" and in_parts(builder.cell_count, limit)):
        t = time.perf_counter()

        missed: list[float] = []  # seconds per cell of the parts whose LP missed its share

        def plan_part(part: ModelBuilder, share: float):
            each = "generate" if part.cell_count > GENERATE_PART_ABOVE else "all"
            # no more time per cell than a part whose LP missed its share: this one's
            # would miss too, and the share it wasted would starve the parts after it
            # (1000x100x36 at 250 s: 15 of 19 parts missed, the last ones left demand unmet)
            rate = share / max(part.cell_count, 1)
            without_lp = bool(missed) and rate <= min(missed)
            model, result = _plan(part, solver, share, gap, threads, each, seconds={},
                                  in_part=True, without_lp=without_lp)
            if not without_lp and NO_LP_START in result.termination:
                missed.append(rate)
            return model, result

        model, result, _ = plan_in_parts(builder, plan_part, limit, gap, solver)
        seconds["parts"] = time.perf_counter() - t
        return model, result
    return _plan(builder, solver, limit, gap, threads, columns, seconds)


def in_parts(cells: int, time_limit: float) -> bool:
    """Whether a model of `cells` supply cells is planned in parts within `time_limit`:
    above GENERATE_ABOVE, when it holds more than one part (`parts.part_cells`). At
    1000x100x36 (30 M cells, 600 s) the first LP of column generation alone took over
    300 s; at 200x40x24 (1.7 M cells, 60 s) it took 20-30 s of its 30 s and the plan's
    gap was 91 % (or there was no plan); in 5 parts of 400 k cells, 72 %."""
    return cells > max(GENERATE_ABOVE, part_cells(time_limit))


def _plan(builder: ModelBuilder, solver: str, limit: float, gap: float,
          threads: int | None, columns: str, seconds: dict[str, float],
          in_part: bool = False, without_lp: bool = False
          ) -> tuple[PlanningModel, SolveResult]:
    """The model of `builder`'s candidates (all cells, or column generation's), solved.
    `in_part`: a part of a plan in parts — column generation has more of the time, the
    LP-guided start is the plan, and a part whose first LP misses its share is planned
    without an LP (at once when `without_lp`)."""
    t = time.perf_counter()
    if columns == "generate" or (columns == "auto" and builder.cell_count > GENERATE_ABOVE):
        share = PART_GENERATE_SHARE if in_part else GENERATE_SHARE
        pricing = Pricing(builder)
        start = builder.build(start_cells(pricing))
        generated = None if without_lp and in_part else generate_columns(
            builder, share * limit - (time.perf_counter() - t), threads, stop_gap=gap / 2,
            start=start, pricing=pricing)
        seconds["columns"] = time.perf_counter() - t
        if generated is None and in_part:
            # a part without a plan would leave its demand unmet: serve it without an LP
            # over the start set (cheapest sources per site, shared by capacity), at
            # pay-as-you-go prices, bound by prices alone
            start.full_bound = pricing.price_bound(start.prob.objective.constant)
            builder.extend(start, room_cells(pricing))
            result = solve(start, solver, max(1.0, limit - seconds["columns"]), gap,
                           threads=threads, strategy="no-lp")
            seconds["solve"] = result.seconds
            return start, result
        if generated is None:
            result = SolveResult(
                solver=solver, status="no_solution",
                termination="column generation: no LP optimum within the time limit",
                has_solution=False, objective=None, bound=None, gap=None,
                seconds=seconds["columns"])
            return builder.build(set()), result
        model = generated.model
        if in_part and not generated.converged and any(
                (v.varValue or 0.0) > 1e-6 for v in model.unmet.values()):
            _add_room(builder, model, pricing, (limit - (time.perf_counter() - t)) / 2)
            seconds["columns"] = time.perf_counter() - t
        limit = max(1.0, limit - seconds["columns"])
        strategy = "start-only" if in_part else "lp-guided"
    else:
        model = builder.build()
        seconds["build"] = time.perf_counter() - t
        strategy = "auto"
    result = solve(model, solver, limit, gap, threads=threads, strategy=strategy)
    seconds["solve"] = result.seconds
    return model, result


def _add_room(builder: ModelBuilder, model: PlanningModel, pricing: Pricing,
              seconds: float) -> None:
    """Add `room_cells` to a part's model from column generation whose LP leaves demand
    unmet (its rounds stopped before pricing in sources with room), and solve the LP
    again over them from its basis within `seconds`; if it does not finish, the last LP
    stands (the new cells at zero)."""
    growth = builder.extend(model, room_cells(pricing))
    if not growth.variables:
        return
    model.warm_lp.deadline = time.perf_counter() + max(1.0, seconds)
    value = model.warm_lp.solve(model.prob, growth)
    if value is None:
        for v in growth.variables:
            v.varValue = 0.0
    else:
        model.lp_objective = value
