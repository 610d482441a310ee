"""What-if runs: commitment policies × demand levels, and a stress test of each policy.

A policy allows a set of terms, each optionally capped in commit_months
(`r12=spot,on_demand,monthly,reserved:12`). Each (policy, demand level) is an independent
solve of the scenario restricted to the policy's offers with demand scaled. The stress test
keeps the commitments a policy's plan signs at the base demand level and re-optimises only
pay-as-you-go capacity under lower and higher demand: what stranded commitments cost when
demand falls, and what on-demand top-up costs when it rises.

Variants run on Dask workers (`jobs` local ones, or an existing cluster); each is
deterministic, so the results are the same as running them one by one.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from planner.cluster import ClusterError, Runner
from planner.io.scenario import Scenario
from planner.io.schema import PAY_AS_YOU_GO, TERMS
from planner.model.builder import Restrictions
from planner.report.plan import Plan
from planner.solve.budget import Budget
from planner.solve.pipeline import plan_scenario, short_of_lp

DEFAULT_POLICIES = (
    "payg=spot,on_demand",
    "monthly=spot,on_demand,monthly",
    "r12=spot,on_demand,monthly,reserved:12",
    "all=spot,on_demand,monthly,reserved,build_to_order",
)


class PolicyError(ValueError):
    pass


@dataclass(frozen=True)
class Policy:
    name: str
    terms: dict[str, int | None]  # term -> longest commit_months (None: any)

    @property
    def text(self) -> str:
        return ",".join(t if m is None else f"{t}:{m}" for t, m in self.terms.items())


def parse_policy(text: str) -> Policy:
    """`NAME=term[:months],…` → Policy; PolicyError says what is wrong."""
    name, sep, body = text.partition("=")
    name = name.strip()
    if not sep or not name or not body.strip():
        raise PolicyError(f"'{text}': expected NAME=TERMS, e.g. r12=spot,on_demand,reserved:12")
    terms: dict[str, int | None] = {}
    for part in body.split(","):
        term, colon, months = part.strip().partition(":")
        term = term.strip().lower()
        if term not in TERMS:
            raise PolicyError(f"'{text}': unknown term '{term}' (one of {', '.join(TERMS)})")
        if term in terms:
            raise PolicyError(f"'{text}': {term} given twice")
        if colon:
            if term in PAY_AS_YOU_GO:
                raise PolicyError(f"'{text}': {term} is pay-as-you-go and takes no months")
            if not months.strip().isdigit() or int(months) < 1:
                raise PolicyError(f"'{text}': '{months}' is not a number of months ≥ 1")
        terms[term] = int(months) if colon else None
    return Policy(name, terms)


def scale_demand(scenario: Scenario, factor: float,
                 per_workload: dict[str, float] | None = None) -> Scenario:
    """The scenario with every demand amount × factor (× the workload's own factor)."""
    per_workload = per_workload or {}
    demand = tuple(dataclasses.replace(d, amount=d.amount * factor
                                       * per_workload.get(d.workload, 1.0))
                   for d in scenario.demand)
    return dataclasses.replace(scenario, demand=demand)


@dataclass
class Variant:
    policy: Policy
    demand_scale: float
    plan: Plan | None = None
    status: str = ""
    stress: dict[float, dict] = field(default_factory=dict)  # stress scale -> figures
    least_s: float | None = None  # its solve's Run.least_s
    note: str = ""  # why it was not run
    # workload -> factor on its demand, on top of demand_scale (--scale-workload)
    workload_scales: dict[str, float] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.policy.name} @{self.demand_scale:g}"

    @property
    def short_of_lp(self) -> bool:
        """Whether its solve ran out of time before its master's first round: its plan
        is the one at first prices, its bound that of first prices."""
        return short_of_lp(self.least_s)


def _solve_variant(args) -> tuple[Plan | None, str, dict, float | None]:
    """Worker: one (policy, demand level) and, at the base level, its stress tests, each
    within `time_limit`; a stress test that would end past the task's share (a solve's
    limit for each of its solves) is not run: a solve overruns its limit by its model's
    building and its plan's checking, and a task past its share is lost whole."""
    scenario, policy, scale, per_workload, stress_scales, solver, time_limit, gap, base = args
    started = time.perf_counter()
    s = scale_demand(scenario, scale, per_workload)
    run = plan_scenario(s, solver, time_limit, gap, Restrictions(terms=policy.terms))
    plan = run.plan
    stress: dict[float, dict] = {}
    if plan is not None and scale == base:
        fixed = {(c.offer, int(c.start)): int(c.gpus) for c in plan.commitments.itertuples()}
        payg = {t: None for t in policy.terms if t in PAY_AS_YOU_GO}
        share = None if time_limit is None else time_limit * (1 + len(stress_scales))
        for factor in stress_scales:
            if share is not None and time.perf_counter() - started + time_limit > share:
                stress[factor] = {"status": "not_run"}
                continue
            stressed = plan_scenario(scale_demand(scenario, scale * factor, per_workload),
                                     solver, time_limit, gap,
                                     Restrictions(terms=payg, fixed_commitments=fixed))
            if stressed.plan is None:
                stress[factor] = {"status": stressed.result.status}
                continue
            t = stressed.plan.totals
            stress[factor] = {
                "status": stressed.plan.result.status,
                "total_cost_usd": t["total_cost_usd"],
                "objective_usd": t["objective_usd"],
                "unmet_unit_hours": t["unmet_unit_hours"],
                "unmet_penalty_usd": t["unmet_penalty_usd"],
                # payments inside the horizon no workload uses: what a fall strands
                "idle_committed_usd": t["idle_committed_usd"],
                "payg_usd": t["cost_by_term_usd"]["spot"] + t["cost_by_term_usd"]["on_demand"],
            }
    if plan is not None:
        plan.candidates = None  # the parent needs the tables, not the search structures
    return plan, (plan.result.status if plan else run.result.status), stress, run.least_s


def run_whatif(scenario: Scenario, policies: list[Policy], demand_scales: list[float],
               per_workload: dict[str, float] | None = None,
               stress_scales: tuple[float, ...] = (0.8, 1.2), jobs: int = 1,
               solver: str | None = None, time_limit: float | None = None,
               gap: float | None = None,
               progress: Callable[[Variant, int, int], None] | None = None,
               budget: Budget | None = None,
               scheduler: str | None = None) -> list[Variant]:
    """Solve every (policy, demand level); stress-test each policy at the base level, on
    `jobs` local Dask workers or the cluster at `scheduler` (planner.cluster; the results
    are the same in any case). `budget`: the time for all of them (each solve gets an
    equal share of it, `jobs` at a time); else `time_limit` per solve."""
    base = 1.0 if 1.0 in demand_scales else demand_scales[0]
    variants = [Variant(p, d, workload_scales=dict(per_workload or {}))
                for p in policies for d in demand_scales]
    # a variant's task solves it and, at the base level, its stress tests after it
    solves = [1 + (len(stress_scales) if v.demand_scale == base else 0) for v in variants]

    def done(index: int, count: int, total: int) -> None:
        if progress:
            progress(variants[index], count, total)

    until = None if budget is None else budget.last_moment
    with Runner(jobs, scheduler, until=until) as runner:
        if budget is not None:  # each solve's share: the tasks' longest run on the workers
            time_limit = max(1.0, budget.left() / _longest_run(solves, runner.workers))
        tasks = [(scenario, v.policy, v.demand_scale, per_workload, stress_scales, solver,
                  time_limit, gap, base) for v in variants]
        try:
            results = runner.map(_solve_variant, tasks, done)
        except ClusterError as e:  # the variants done stand; the others were not run
            if not any(r is not None for r in e.results):
                raise
            results = e.results
            for v, result in zip(variants, results):
                if result is None:
                    v.status, v.note = "not_run", str(e)
    for v, result in zip(variants, results):
        if result is None:
            continue
        plan, status, stress, least_s = result
        v.plan, v.status, v.stress, v.least_s = plan, status, stress, least_s
        if plan is not None:
            plan.scenario = scale_demand(scenario, v.demand_scale, per_workload)
    return variants


def _longest_run(solves: list[int], workers: int) -> int:
    """Solves one after another on the busiest of `workers` when tasks of `solves` solves
    each go to whichever worker is free first, in order (as the cluster hands them out):
    a task's solves run in turn, so one policy with two stress tests takes three solves
    however many workers there are (its time had been split as if they shared them)."""
    loads = [0] * max(1, workers)
    for n in solves:
        loads[loads.index(min(loads))] += n
    return max(loads)


def break_even(scenario: Scenario) -> list[dict]:
    """Per commitment offer: the utilization at which it costs what on-demand costs for the
    same GPU-hours in the same region (obligation / (months × hours × on-demand rate))."""
    st = scenario.settings
    on_demand = {(o.region, o.gpu): o for o in scenario.offers if o.term == "on_demand"}
    rows = []
    for o in scenario.offers:
        if not o.is_commitment:
            continue
        od = on_demand.get((o.region, o.gpu))
        obligation = o.commit_months * st.hours_per_month * o.usd_per_gpu_hour \
            + o.upfront_usd_per_gpu
        rows.append({
            "offer": o.key, "region": o.region, "gpu": o.gpu, "term": o.term,
            "commit_months": o.commit_months, "usd_per_gpu_hour": o.usd_per_gpu_hour,
            "upfront_usd_per_gpu": o.upfront_usd_per_gpu,
            "on_demand_usd_per_gpu_hour": od.usd_per_gpu_hour if od else None,
            "break_even_utilization": (obligation / (o.commit_months * st.hours_per_month
                                                     * od.usd_per_gpu_hour)
                                       if od and od.usd_per_gpu_hour > 0 else None),
        })
    return rows


def variant_summary(v: Variant) -> dict:
    """Figures of one variant for the comparison table and the JSON."""
    from planner.report.json_out import plan_json

    out = {"name": v.policy.name, "policy": v.policy.text, "demand_scale": v.demand_scale,
           "workload_scales": v.workload_scales, "status": v.status}
    if v.plan is None:
        return out
    data = plan_json(v.plan)
    data.pop("status")
    out.update(data)
    c = v.plan.commitments
    used = float(c["used_gpu_hours"].sum())
    available = float(c["available_gpu_hours"].sum())
    out["average_commitment_utilization"] = used / available if available else None
    out["obligation_usd"] = v.plan.totals["obligation_usd"]
    out["beyond_horizon_usd"] = v.plan.totals["beyond_horizon_usd"]
    out["stress"] = {f"{k:g}": {name: round(x, 2) if isinstance(x, float) else x
                                for name, x in val.items()}
                     for k, val in v.stress.items()}  # money to the cent, as solve's
    return out
