"""The plans a solve is compared with (workbook Summary: savings; JSON `baselines`).

* pay-as-you-go only: the same scenario restricted to spot and on-demand;
* cheapest single GPU type: every workload bought on the one GPU type whose cheapest
  usable offer costs least per unit of its throughput, with every term allowed;
* on-demand from one hyperscaler: everything on-demand from the provider with the most
  regions (how many enterprises buy today).

Each is solved by the same machinery as the plan, within a share of the command's
budget, and reported with its own status and gap. A saving is only stated against a plan
that leaves no more demand unmet than the plan itself (SPEC §4 v2: like for like).
"""

from __future__ import annotations

from planner.io.scenario import Scenario
from planner.model.builder import Restrictions
from planner.solve.budget import Budget
from planner.solve.pipeline import Run, plan_scenario

PAYG = "pay-as-you-go only"
SINGLE_GPU = "cheapest single GPU type"
# unmet unit-hours within which a comparison plan counts as serving the same demand
SAME_DEMAND = 1e-6


def cheapest_gpu_per_workload(scenario: Scenario, run: Run) -> dict[str, str]:
    """Workload → GPU type with the least on-demand USD per unit-hour among the offers it
    may use without a capacity limit (a capped or spot price is not what a buyer of one
    type can count on); workloads with none such are judged on all their offers."""
    tp = scenario.throughput_by_pair
    out: dict[str, str] = {}
    for w, offers in run.candidates.offers.items():
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


def comparisons(scenario: Scenario, run: Run) -> dict[str, Restrictions]:
    """The comparison plans of a run, by name."""
    variants = {
        PAYG: Restrictions(terms={"spot": None, "on_demand": None}),
        SINGLE_GPU: Restrictions(gpu_of=cheapest_gpu_per_workload(scenario, run)),
    }
    provider = largest_provider(scenario)
    if provider is not None:
        variants[f"on-demand from {provider} only"] = Restrictions(
            terms={"on_demand": None}, providers=frozenset({provider}))
    return variants


def solve_baselines(scenario: Scenario, solver, gap, run: Run, budget: Budget,
                    threads: int | None = 1) -> list[dict]:
    """Every comparison plan, each with an equal share of `budget`."""
    plan = run.plan
    variants = comparisons(scenario, run)
    out = []
    for i, (name, restrictions) in enumerate(variants.items()):
        share = budget.share(1.0 / (len(variants) - i))
        other = plan_scenario(scenario, solver, gap=gap, restrictions=restrictions,
                              transit=run.candidates.transit, threads=threads, budget=share)
        if other.plan is None:
            out.append(_without_plan(name, "no_plan"))
            continue
        t = other.plan.totals
        like_for_like = (plan is not None and t["unmet_unit_hours"]
                         <= plan.totals["unmet_unit_hours"] + SAME_DEMAND)
        out.append(dict(
            name=name, status=other.result.status, mip_gap=other.result.gap,
            total_cost_usd=t["total_cost_usd"], objective_usd=t["objective_usd"],
            unmet_unit_hours=t["unmet_unit_hours"], unmet_penalty_usd=t["unmet_penalty_usd"],
            saving_usd=(t["total_cost_usd"] - plan.totals["total_cost_usd"])
            if like_for_like else None))
    return out


def not_run(scenario: Scenario, run: Run) -> list[dict]:
    """The comparison plans listed as not run (--no-baselines)."""
    return [_without_plan(name, "not_run") for name in comparisons(scenario, run)]


def _without_plan(name: str, status: str) -> dict:
    """A comparison plan's entry when it has no plan (`status`: no_plan or not_run)."""
    return dict(name=name, status=status, mip_gap=None, total_cost_usd=None,
                objective_usd=None, unmet_unit_hours=None, unmet_penalty_usd=None,
                saving_usd=None)
