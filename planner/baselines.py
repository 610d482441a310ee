"""The plans a solve is compared with (workbook Summary: savings; JSON `baselines`).

* pay-as-you-go only: the same scenario restricted to spot and on-demand;
* cheapest single GPU type: every workload bought on the one GPU type whose cheapest
  usable offer costs least per unit of its throughput, with every term allowed;
* on-demand from one hyperscaler: everything on-demand from the provider with the most
  regions (how many enterprises buy today).

Each is solved by the same machinery as the plan, within the command's budget, and
reported with its own status and gap: on a machine with a second core in a process of its
own while the plan is solved (`beside`), else after the plan in what time is left. A
saving is only stated against a plan that leaves no more demand unmet than the plan
itself (SPEC §4 v2: like for like).

Each comparison plan is a plan of the scenario itself (its restrictions only leave
choices out), so the cheapest of them stands as the plan where it costs less than the
plan found (`Cheapest`, `cheaper_plan`): where whole replicas dominate, the decomposition
of the whole market can end above its pay-as-you-go-only variant, a smaller model solved
beside it.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass

from planner.beside import Beside
from planner.io.scenario import Scenario
from planner.model.builder import Restrictions
from planner.model.candidates import Candidates, find_candidates
from planner.model.graph import Transit
from planner.model.solution import Solution
from planner.report.plan import Plan, extract_plan
from planner.solve.budget import Budget, epoch_of
from planner.solve.pipeline import Run, plan_scenario
from planner.solve.whole import honest_gap, status_of

PAYG = "pay-as-you-go only"
SINGLE_GPU = "cheapest single GPU type"
# unmet unit-hours within which a comparison plan counts as serving the same demand,
# absolute and relative: float sums of ~1e8 unit-hours in another order differ by more
# than 1e-6
SAME_DEMAND = 1e-6
SAME_DEMAND_REL = 1e-9


def no_more_unmet(unmet: float, than: float) -> bool:
    """Whether a plan leaving `unmet` unit-hours leaves no more than one leaving `than`,
    within float noise."""
    return unmet <= than + SAME_DEMAND + SAME_DEMAND_REL * abs(than)


def costs_less(objective: float, than: float) -> bool:
    """Whether a plan of `objective` dollars costs less than one of `than`: by more than
    half a cent and float noise (1e-9 of it: sums of ~1e6 terms in another order differ
    by far less). The one rule both for a comparison plan standing as the plan and for
    the warning that one costs less: at 1e-6 a plan $174 cheaper on $1.247 B had not
    stood, yet was said to beat the plan."""
    return objective < than - max(0.005, 1e-9 * abs(than))


def same_unmet(a: float, b: float) -> bool:
    """Whether two plans leave the same unit-hours unmet, within float noise."""
    return no_more_unmet(a, b) and no_more_unmet(b, a)


def cheapest_gpu_per_workload(scenario: Scenario,
                              candidates: Candidates) -> dict[str, str]:
    """Workload → GPU type with the least on-demand USD per unit-hour among the offers it
    may use without a capacity limit (a capped or spot price is not what a buyer of one
    type can count on); workloads with none such are judged on all their offers."""
    tp = scenario.throughput_by_pair
    out: dict[str, str] = {}
    for w, offers in candidates.offers.items():
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


def comparisons(scenario: Scenario, candidates: Candidates) -> dict[str, Restrictions]:
    """The comparison plans of a scenario, by name."""
    variants = {
        PAYG: Restrictions(terms={"spot": None, "on_demand": None}),
        SINGLE_GPU: Restrictions(gpu_of=cheapest_gpu_per_workload(scenario, candidates)),
    }
    provider = largest_provider(scenario)
    if provider is not None:
        variants[f"on-demand from {provider} only"] = Restrictions(
            terms={"on_demand": None}, providers=frozenset({provider}))
    return variants


@dataclass
class Cheapest:
    """The comparison plan of least objective: its name, objective and values, with the
    demand its variant could not serve at all left unmet (the whole scenario's model has
    sources for some of it, so that demand is not out of its model)."""

    name: str
    objective: float
    solution: Solution


def solve_comparisons(scenario: Scenario, solver, gap, budget: Budget,
                      threads: int | None = 1, transit: Transit | None = None,
                      candidates: Candidates | None = None, first_plan_s: float = 0.0
                      ) -> tuple[list[dict], Cheapest | None]:
    """Every comparison plan, each with an equal share of `budget`: their entries
    without the saving (`against` adds it), and the cheapest of them (None: no plan).
    `first_plan_s`: the work a first plan takes (the plan's own, where it stood at first
    prices): a comparison plan the budget left no longer holds that for is `not_run`, as
    the ones after it (at --time-limit 5-7 the default scenario's three, each made at
    first prices whatever its share, had ended the command at 7.6-9.2 s: an outside
    audit)."""
    transit = transit or Transit(scenario)
    candidates = candidates or find_candidates(scenario, transit)
    variants = comparisons(scenario, candidates)
    out, cheapest = [], None
    for i, (name, restrictions) in enumerate(variants.items()):
        if first_plan_s > 0 and budget.left() < first_plan_s:
            out.append(_without_plan(name, "not_run"))
            continue
        share = budget.share(1.0 / (len(variants) - i))
        other = plan_scenario(scenario, solver, gap=gap, restrictions=restrictions,
                              transit=transit, threads=threads, budget=share)
        if other.plan is None:
            out.append(_without_plan(name, "no_plan"))
            continue
        t = other.plan.totals
        out.append(dict(
            name=name, status=other.result.status, mip_gap=other.result.gap,
            total_cost_usd=t["total_cost_usd"], objective_usd=t["objective_usd"],
            unmet_unit_hours=t["unmet_unit_hours"], unmet_penalty_usd=t["unmet_penalty_usd"],
            saving_usd=None))
        if cheapest is None or t["objective_usd"] < cheapest.objective:
            solution = other.solution
            solution.unmet = {**other.builder.out_of_model, **solution.unmet}
            cheapest = Cheapest(name, t["objective_usd"], solution)
    return out, cheapest


def cheaper_plan(run: Run, plan: Plan, cheapest: Cheapest | None,
                 requested_gap: float) -> Plan | None:
    """The cheapest comparison plan as the plan, with the plan's bound, where it costs
    less than `plan` (None where it does not)."""
    if cheapest is None or not costs_less(cheapest.objective, plan.totals["objective_usd"]):
        return None
    res = run.result
    value = None if res.bound is None else honest_gap(cheapest.objective, res.bound,
                                                      res.unservable_usd)
    result = dataclasses.replace(
        res, objective=cheapest.objective, gap=value, status=status_of(value, requested_gap),
        termination=f"{res.termination}; the comparison plan '{cheapest.name}' stands as "
                    f"the plan: it costs less than the plan found")
    # demand the whole scenario's model also left out is unmet in its plan already
    unmet = {key: x for key, x in cheapest.solution.unmet.items()
             if key not in run.builder.out_of_model}
    return extract_plan(run.builder, dataclasses.replace(cheapest.solution, unmet=unmet),
                        result)


def against(entries: list[dict], plan: Plan) -> list[dict]:
    """The entries with the saving each states against `plan`: only like for like, when
    the comparison plan leaves no more demand unmet than the plan."""
    unmet = plan.totals["unmet_unit_hours"]
    total = plan.totals["total_cost_usd"]
    return [dict(e, saving_usd=e["total_cost_usd"] - total
                 if e["total_cost_usd"] is not None
                 and no_more_unmet(e["unmet_unit_hours"], unmet) else None)
            for e in entries]


def can_solve_beside(threads: int | None) -> bool:
    """Whether the comparison plans can take a core of their own: a second core, and the
    plan's solver held to one thread (with more it uses the second core itself)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity outside Linux
        cores = os.cpu_count() or 1
    return cores >= 2 and threads == 1


def solve_beside(scenario: Scenario, solver, gap, seconds: float,
                 threads: int | None = 1, wall_end: float | None = None) -> Beside:
    """The comparison plans solved in a process of their own, in `seconds` of work (a
    work clock of its own, planner.solve.budget) from now, safely stopped at `wall_end`
    (perf_counter; default: `seconds` from now and 5 %); its `result()` waits for them."""
    wall_end = time.perf_counter() + 1.05 * seconds if wall_end is None else wall_end
    return Beside(_solve_until, scenario, solver, gap, seconds, epoch_of(wall_end), threads)


def _solve_until(scenario: Scenario, solver, gap, seconds: float, wall_end: float,
                 threads: int | None) -> tuple[list[dict], Cheapest | None]:
    # the safety stop on the wall clock, `wall_end` a time.time(): this process's
    # perf_counter is another clock
    return solve_comparisons(scenario, solver, gap, Budget.of_work(seconds, wall_end),
                             threads)


def without_plans(scenario: Scenario, candidates: Candidates,
                  status: str = "not_run") -> list[dict]:
    """The comparison plans listed without a plan: `not_run` (--no-baselines) or
    `no_plan` (their solve failed)."""
    return [_without_plan(name, status) for name in comparisons(scenario, candidates)]


def _without_plan(name: str, status: str) -> dict:
    """A comparison plan's entry when it has no plan (`status`: no_plan or not_run)."""
    return dict(name=name, status=status, mip_gap=None, total_cost_usd=None,
                objective_usd=None, unmet_unit_hours=None, unmet_penalty_usd=None,
                saving_usd=None)
