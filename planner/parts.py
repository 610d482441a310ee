"""Planning in parts: the workloads in groups, one after another, each group on the
capacity the earlier ones left.

At enterprise scale (1,000 workloads × 100 regions × 36 months: 30 M supply cells) not even
the LP relaxation over column generation's start set finishes in minutes: simplex time
grows faster than the model. Workloads meet only in capacity — offers' max_gpus and
committed GPUs — so we split them into parts (pools whole, the costliest first), plan each
part as a model of its own would be planned, and hand the next part what is left
(`model.Taken`): pay-as-you-go GPUs in use, commitments signed (their unused GPUs are free
to later parts), existing contracts' GPUs in use. Each part's plan keeps to what is left,
so together they are one valid plan. It is written into a model of the whole scenario over
the cells the parts use, whose objective is the plan's cost.

The bound is the price bound (every unit at its cheapest source in reach, capacity
ignored): valid, and loose where capacity binds; the stated gap says how loose.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from planner.candidates import Candidates
from planner.columns import Pricing
from planner.model import COMMITTED, ModelBuilder, PlanningModel, Taken
from planner.solve import NO_LP_START, SolveResult

# Supply cells in a part: as many as a part can plan in its share of the time limit
# (measured: a part of 400 k cells in ~11 s, of 4 M cells in ~45-75 s), at least
# FEWEST_PART_CELLS and at most PART_CELLS (memory: 4.5 GiB peak at 1000x100x36). A larger
# pool is a part alone.
PART_CELLS_PER_SECOND = 6_700
FEWEST_PART_CELLS = 400_000
PART_CELLS = 4_000_000
MERGE_SHARE = 0.1  # of the time limit, kept for writing the parts' plans into one model
EPS = 1e-9

# plan_part(builder, seconds) -> (the part's model, its result)
PlanPart = Callable[[ModelBuilder, float], tuple[PlanningModel, SolveResult]]


@dataclass
class Values:
    """The values of a plan's variables, by family and key (zeros left out)."""

    supply: dict = field(default_factory=dict)
    flow: dict = field(default_factory=dict)
    unmet: dict = field(default_factory=dict)
    replicas: dict = field(default_factory=dict)
    commit: dict = field(default_factory=lambda: defaultdict(int))
    choose: dict = field(default_factory=dict)

    def read(self, model: PlanningModel) -> None:
        """Add the part planned in `model` (its variables at its plan)."""
        for family in ("supply", "flow", "unmet"):
            for key, v in getattr(model, family).items():
                if (v.varValue or 0.0) > EPS:
                    getattr(self, family)[key] = float(v.varValue)
        for family in ("replicas", "choose"):
            for key, v in getattr(model, family).items():
                n = round(v.varValue or 0.0)
                if n > 0:
                    getattr(self, family)[key] = n
        for key, v in model.commit.items():
            n = round(v.varValue or 0.0)
            if n > 0:
                self.commit[key] += n  # parts may sign the same offer and start month

    def write(self, model: PlanningModel) -> None:
        """Set every variable of `model` to these values (0 where none)."""
        for family in ("supply", "flow", "unmet", "replicas", "choose"):
            values = getattr(self, family)
            for key, v in getattr(model, family).items():
                v.varValue = values.get(key, 0.0)
        for key, v in model.commit.items():
            q = self.commit.get(key, 0)
            # the model bounds a commitment by what the busiest segment needs; parts
            # signing on the same offer may together exceed it, never max_gpus (Taken)
            if v.upBound is not None and q > v.upBound:
                v.upBound = q
            v.varValue = q
            if key in model.commit_on:
                model.commit_on[key].varValue = 1.0 if q > 0 else 0.0


def part_cells(time_limit: float) -> int:
    """Supply cells in a part of a plan in parts with `time_limit` seconds in all."""
    return int(min(PART_CELLS, max(FEWEST_PART_CELLS, PART_CELLS_PER_SECOND * time_limit)))


def split(builder: ModelBuilder, weight: dict[str, float], most: int) -> list[list[str]]:
    """Workloads in parts of at most `most` supply cells, pools whole, the pools with the
    most `weight` (dollars at prices alone) first, so they have the first pick of cheap
    capacity."""
    pools: dict[str, list[str]] = defaultdict(list)
    for w in sorted(builder.s.workloads, key=lambda w: w.workload):
        pools[w.pool_name].append(w.workload)
    order = sorted(pools, key=lambda p: (-sum(weight.get(w, 0.0) for w in pools[p]), p))
    parts: list[list[str]] = []
    cells = 0
    for p in order:
        size = sum(builder.cells_per_workload.get(w, 0) for w in pools[p])
        if not parts or cells + size > most:
            parts.append([])
            cells = 0
        parts[-1].extend(pools[p])
        cells += size
    return [part for part in parts if part]


def candidates_of(c: Candidates, workloads: set[str]) -> Candidates:
    """The candidates of `workloads` only."""
    return dataclasses.replace(
        c, level={key: x for key, x in c.level.items() if key[0] in workloads},
        offers={w: o for w, o in c.offers.items() if w in workloads},
        regions_for_site={key: r for key, r in c.regions_for_site.items()
                          if key[0] in workloads},
        pruned={key: why for key, why in c.pruned.items() if key[0] in workloads})


def take(taken: Taken, builder: ModelBuilder, model: PlanningModel) -> None:
    """Add to `taken` the capacity the part planned in `model` holds."""
    s = builder.s
    segments = range(len(builder.hours))
    for (p, r, g, src, month, k), v in model.replicas.items():
        gpus = round(v.varValue or 0.0) * builder.gpus_per_replica[(p, g)]
        if gpus <= 0:
            continue
        if src == COMMITTED:
            taken.committed[(r, g, month, k)] -= gpus
        elif builder.payg_offer[src].max_gpus is not None:
            taken.offer[(src, month, k)] += gpus
    horizon = builder.settings.horizon_months
    for (key, t), v in model.commit.items():
        q = round(v.varValue or 0.0)
        if q <= 0:
            continue
        o = s.offer_by_key[key]
        for month in range(t, min(t + o.commit_months, horizon)):
            taken.signed[(key, month)] += q
            for k in segments:
                taken.committed[(o.region, o.gpu, month, k)] += q


def plan_in_parts(builder: ModelBuilder, plan_part: PlanPart, time_limit: float,
                  gap: float, solver: str, progress=None
                  ) -> tuple[PlanningModel, SolveResult, list[SolveResult]]:
    """Plan `builder`'s scenario part by part within `time_limit` seconds: the model of
    the whole scenario holding the plan, its result, and each part's result. A part
    without a plan (none found in its share of the time) leaves its demand unmet (a valid
    plan, whose penalty the gap shows); the termination counts the parts planned without
    an LP (the pipeline's fallback when a part's LP does not finish)."""
    started = time.perf_counter()
    s, restrictions = builder.s, builder.restrictions
    pricing = Pricing(builder)
    parts = split(builder, pricing.price_terms()[0], part_cells(time_limit))
    taken = Taken()
    values = Values()
    results: list[SolveResult] = []
    merge_at = started + (1.0 - MERGE_SHARE) * time_limit
    cells = [sum(builder.cells_per_workload.get(w, 0) for w in part) for part in parts]
    for i, workloads in enumerate(parts):
        # the time left, shared in proportion to the parts' cells
        share = max(1.0, (merge_at - time.perf_counter()) * cells[i] / max(sum(cells[i:]), 1))
        if i > 0 and restrictions.fixed_commitments is not None:
            # the first part signed the fixed commitments; the others use what it left
            restrictions = dataclasses.replace(restrictions, fixed_commitments={
                key: 0 for key in restrictions.fixed_commitments})
        part = ModelBuilder(s, candidates_of(builder.c, set(workloads)), restrictions, taken)
        model, result = plan_part(part, share)
        results.append(result)
        if progress is not None:
            progress(i + 1, len(parts), result)
        if result.has_solution:
            values.read(model)
            take(taken, part, model)
        else:  # no plan for this part: its demand is left unmet
            for key, level in part.c.level.items():
                values.unmet[key] = level
    model = builder.build(set(values.supply))
    values.write(model)
    objective = model.prob.objective.value()
    bound = pricing.price_bound(model.prob.objective.constant)
    achieved = max(0.0, (objective - bound) / max(abs(objective), 1e-9))
    solved = sum(1 for r in results if r.has_solution)
    without = sum(1 for r in results if r.has_solution and NO_LP_START in r.termination)
    result = SolveResult(
        solver=solver, status="optimal" if achieved <= gap else "feasible",
        termination=f"planned in {len(parts)} parts ({solved} with a plan"
                    + (f", {without} without an LP" if without else "")
                    + "), bound from prices alone",
        has_solution=True, objective=objective, bound=bound, gap=achieved,
        seconds=time.perf_counter() - started,
        version=next((r.version for r in results if r.version), ""))
    return model, result, results
