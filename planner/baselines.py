"""The plans a solve is compared with (workbook Summary: savings).

* pay-as-you-go only: the same scenario restricted to spot and on-demand;
* cheapest single GPU type: every workload bought on the one GPU type whose cheapest
  usable offer costs least per unit of its throughput, with every term allowed.
"""

from __future__ import annotations

from planner.model import Restrictions
from planner.pipeline import Run, plan_scenario
from planner.scenario import Scenario

PAYG = "pay-as-you-go only"
SINGLE_GPU = "cheapest single GPU type"


def cheapest_gpu_per_workload(scenario: Scenario, run: Run) -> dict[str, str]:
    """Workload → GPU type with the least USD per unit-hour among its usable offers."""
    best: dict[str, tuple[float, str]] = {}
    tp = scenario.throughput_by_pair
    for w, offers in run.model.candidates.offers.items():
        for o in offers:
            t = tp[(w, o.gpu)]
            cost = o.usd_per_gpu_hour / (t.units_per_gpu * o.derate)
            if w not in best or (cost, o.gpu) < best[w]:
                best[w] = (cost, o.gpu)
    return {w: g for w, (_, g) in best.items()}


def solve_baselines(scenario: Scenario, solver, time_limit, gap, run: Run,
                    threads: int | None = 1) -> dict:
    variants = {
        PAYG: Restrictions(terms={"spot": None, "on_demand": None}),
        SINGLE_GPU: Restrictions(gpu_of=cheapest_gpu_per_workload(scenario, run)),
    }
    out = {}
    for name, restrictions in variants.items():
        other = plan_scenario(scenario, solver, time_limit, gap, restrictions,
                              transit=run.model.candidates.transit, threads=threads)
        if other.plan is None:
            continue
        out[name] = {
            "total_cost_usd": other.plan.totals["total_cost_usd"],
            "objective_usd": other.plan.totals["objective_usd"],
            "unmet_unit_hours": other.plan.totals["unmet_unit_hours"],
            "status": other.plan.result.status,
        }
    return out
