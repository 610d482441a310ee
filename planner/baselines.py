"""The plans a solve is compared with (workbook Summary: savings).

* pay-as-you-go only: the same scenario restricted to spot and on-demand;
* cheapest single GPU type: every workload bought on the one GPU type whose cheapest
  usable offer costs least per unit of its throughput, with every term allowed;
* on-demand from one hyperscaler: everything on-demand from the provider with the most
  regions (how many enterprises buy today).
"""

from __future__ import annotations

from planner.model import Restrictions
from planner.pipeline import Run, plan_scenario
from planner.scenario import Scenario

PAYG = "pay-as-you-go only"
SINGLE_GPU = "cheapest single GPU type"


def cheapest_gpu_per_workload(scenario: Scenario, run: Run) -> dict[str, str]:
    """Workload → GPU type with the least on-demand USD per unit-hour among the offers it
    may use without a capacity limit (a capped or spot price is not what a buyer of one
    type can count on); workloads with none such are judged on all their offers."""
    tp = scenario.throughput_by_pair
    out: dict[str, str] = {}
    for w, offers in run.model.candidates.offers.items():
        plain = [o for o in offers if o.term == "on_demand" and o.max_gpus is None]
        pool = plain or offers
        if pool:
            out[w] = min(pool, key=lambda o: (
                o.usd_per_gpu_hour / (tp[(w, o.gpu)].units_per_gpu * o.derate), o.gpu)).gpu
    return out


def largest_provider(scenario: Scenario) -> str | None:
    """The provider with the most regions that sells on-demand (ties: by name)."""
    selling = {scenario.region_by_name[o.region].provider for o in scenario.offers
               if o.term == "on_demand"}
    count: dict[str, int] = {}
    for r in scenario.regions:
        if r.provider in selling:
            count[r.provider] = count.get(r.provider, 0) + 1
    return min(count, key=lambda p: (-count[p], p)) if count else None


def solve_baselines(scenario: Scenario, solver, time_limit, gap, run: Run,
                    threads: int | None = 1) -> dict:
    variants = {
        PAYG: Restrictions(terms={"spot": None, "on_demand": None}),
        SINGLE_GPU: Restrictions(gpu_of=cheapest_gpu_per_workload(scenario, run)),
    }
    provider = largest_provider(scenario)
    if provider is not None:
        variants[f"on-demand from {provider} only"] = Restrictions(
            terms={"on_demand": None}, providers=frozenset({provider}))
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
