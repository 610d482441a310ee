"""What-if runs: commitment policies × demand levels, and a stress test of each policy.

A policy allows a set of terms and a longest commit_months (SPEC §4): a term may be
capped (`r12=spot,on_demand,monthly,reserved:12`), and a commitment term given without a
cap takes the policy's longest cap (there: monthly at most 12 months too). Each (policy,
demand level) is an independent solve of the scenario restricted to the policy's offers
with demand scaled. The stress test keeps the commitments a policy's plan signs at the
base demand level and re-optimises only pay-as-you-go capacity under lower and higher
demand: what stranded commitments cost when demand falls, and what on-demand top-up
costs when it rises.

Variants, then stress tests, run on Dask workers (`jobs` local ones, or an existing
cluster) with time limits reckoned as if one after another: a solve that ends before its
limit is deterministic, so the results are the same as running them one by one. The
variants get most of the time (VARIANT_SHARE): they are the comparison, and a stress test
only qualifies one.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from planner.baselines import same_unmet
from planner.cluster import ClusterError, Runner
from planner.io.scenario import Scenario
from planner.io.schema import PAY_AS_YOU_GO, TERMS
from planner.model.builder import Restrictions
from planner.model.candidates import find_candidates
from planner.report.economics import commitment_economics
from planner.report.plan import Plan
from planner.solve.budget import LEAST_LIMIT_S, Budget
from planner.solve.pipeline import plan_scenario, short_of_lp
from planner.solve.whole import honest_gap, status_of

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
    # "r12" signs nothing longer than 12 months: a commitment term given without a cap
    # takes the longest given (a 24-month offer on the monthly term had passed)
    longest = max((m for m in terms.values() if m is not None), default=None)
    for term, months in terms.items():
        if months is None and term not in PAY_AS_YOU_GO:
            terms[term] = longest
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
    work_s: float = 0.0  # the seconds of work its solve is reckoned to have taken
    note: str = ""  # why it was not run
    stress_note: str = ""  # why some of its stress tests were not done (the cluster's)
    # its solve or a stress test of it not done because the cluster's workers or its
    # scheduler were lost (the command then ends with exit 1: README)
    lost: bool = False
    # whether the wall clock, not its reckoned work, stopped its solve short of its gap:
    # the machine ran behind its pace, so another run may give another plan (an outside
    # audit: two runs at --jobs 2 gave $33,607,410 and $33,620,892, nothing said)
    clock_stopped: bool = False
    adopted: str = ""  # the policy whose cheaper plan this one took (_adopt_cheaper_plans)
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


# The variants' share of the time where there are stress tests: each variant gets
# VARIANT_SHARE / variants of it, each stress test the rest / stress tests, or what its
# variant's plan from the LP needed (NEED_MARGIN × its Run.least_s) if more and the
# variant's limit allows. An equal share for every solve (1/12 each with the four
# default policies and two stress levels) left r12 and all at --time-limit 15 on the
# default scenario with plans at first prices ($46.1 M and $47.7 M, where their plans
# from the LP cost $30.4 M and $29.9 M): the comparison said reserving costs more; a
# stress test at first prices is as far off (r12 at 0.8 × demand: $28.6 M at 0.5 s,
# $25.3 M at 1 s).
VARIANT_SHARE = 0.8
NEED_MARGIN = 1.25
# Local workers cost some 3 s of the budget (started, planner imported in each, closed:
# 1.2 + 0.8 + 1.3 s measured on 2 cores); with less than LOCAL_WORKERS_FROM_S for the
# solves they run in this process (the default scenario at --time-limit 5 had lost every
# variant to a cluster that was still starting).
LOCAL_WORKERS_FROM_S = 10.0


def workers_for(jobs: int, scheduler: str | None, budget: Budget | None) -> int:
    """The local workers `jobs` asks for, or 1 where the budget is too short for them."""
    if scheduler is None and budget is not None and budget.left() < LOCAL_WORKERS_FROM_S:
        return 1
    return jobs


def _solve_budget(scenario: Scenario, time_limit: float | None, stop_by: float | None
                  ) -> Budget:
    """A worker's solve: `time_limit` of work (None: the scenario's setting), stopped
    by `stop_by` on the wall clock (planner.solve.budget.Budget.of_work)."""
    return Budget.of_work(time_limit if time_limit is not None
                          else scenario.settings.time_limit_s, stop_by)


def _solve_variant(args) -> tuple[Plan | None, str, float | None, float, bool]:
    """Worker: one (policy, demand level): its plan, status, `Run.least_s`, the seconds
    of work its solve is reckoned to have taken (planner.solve.work) and whether the
    wall clock stopped it short of its gap (Variant.clock_stopped)."""
    scenario, policy, scale, per_workload, solver, time_limit, gap, stop_by = args
    budget = _solve_budget(scenario, time_limit, stop_by)
    run = plan_scenario(scale_demand(scenario, scale, per_workload), solver, gap=gap,
                        restrictions=Restrictions(terms=policy.terms), budget=budget)
    plan = run.plan
    if plan is not None:
        plan.candidates = None  # the parent needs the tables, not the search structures
    status = plan.result.status if plan else run.result.status
    return (plan, status, run.least_s, budget.elapsed(),
            budget.stopped_short(status))


def _stress_test(args) -> dict:
    """Worker: a policy's commitments kept, only pay-as-you-go re-optimised, demand scaled."""
    scenario, policy, scale, per_workload, fixed, solver, time_limit, gap, stop_by = args
    payg = {t: None for t in policy.terms if t in PAY_AS_YOU_GO}
    stressed = plan_scenario(scale_demand(scenario, scale, per_workload), solver, gap=gap,
                             restrictions=Restrictions(terms=payg, fixed_commitments=fixed),
                             budget=_solve_budget(scenario, time_limit, stop_by))
    if stressed.plan is None:
        return {"status": stressed.result.status}
    t = stressed.plan.totals
    return {
        "status": stressed.plan.result.status,
        "mip_gap": stressed.plan.result.gap,
        # out of time before its plan from the LP: a plan at first prices, whose sunk
        # commitments may sit idle where the plan it stresses filled them (an audit:
        # $0.34 M idle at 0.8x, where a plan from the LP leaves $0.07 M)
        "rough": stressed.short_of_lp,
        "total_cost_usd": t["total_cost_usd"],
        "objective_usd": t["objective_usd"],
        "unmet_unit_hours": t["unmet_unit_hours"],
        "unmet_penalty_usd": t["unmet_penalty_usd"],
        "idle_committed_usd": _stranded(stressed.plan),
        "payg_usd": t["cost_by_term_usd"]["spot"] + t["cost_by_term_usd"]["on_demand"],
    }


def _stranded(plan: Plan) -> float:
    """What a fall in demand strands: the committed GPU-hours no workload uses, at their
    rate, counted as the plan's total counts the commitments: inside the horizon, and
    under tail policy `full` for the rest of each term too (the forecast's last month
    assumed to go on, as each commitment's idle_usd: planner.report.economics). An outside
    audit: a 12-month reservation 2 GPUs of 10 idle at 0.8× read $400, its 4 months in
    the horizon, where the total counts all 12 ($1,200)."""
    if plan.scenario.settings.tail_policy != "full":
        return plan.totals["idle_committed_usd"]
    return sum(e["idle_usd"] for e in commitment_economics(plan).values())


def run_whatif(scenario: Scenario, policies: list[Policy], demand_scales: list[float],
               per_workload: dict[str, float] | None = None,
               stress_scales: tuple[float, ...] = (0.8, 1.2), jobs: int = 1,
               solver: str | None = None, time_limit: float | None = None,
               gap: float | None = None,
               progress: Callable[[Variant, int, int, float | None], None] | None = None,
               budget: Budget | None = None,
               scheduler: str | None = None) -> list[Variant]:
    """Solve every (policy, demand level), then stress-test each policy's plan at the base
    level, on `jobs` local Dask workers or the cluster at `scheduler` (planner.cluster; the
    results are the same in any case). `budget`: the time for all of them, on a work
    clock (planner.solve.budget), reckoned as if one after another (more workers end
    sooner): the variants first, with VARIANT_SHARE of it, then the stress tests in
    what the variants left, in order while they fit (the others are not run); else
    `time_limit` per solve."""
    base = 1.0 if 1.0 in demand_scales else demand_scales[0]
    variants = [Variant(p, d, workload_scales=dict(per_workload or {}))
                for p in policies for d in demand_scales]
    at_base = [v for v in variants if v.demand_scale == base]
    total = len(variants) + len(at_base) * len(stress_scales)
    count = 0

    def done(v: Variant, stress: float | None) -> None:
        nonlocal count
        count += 1
        if progress:
            progress(v, count, total, stress)

    until = None if budget is None else budget.last_moment
    # every solve's safety stop comes by the budget's own, wherever it runs
    stop_by = None if budget is None else budget.wall_end_epoch()
    with Runner(workers_for(jobs, scheduler, budget), scheduler, until=until) as runner:
        workers = runner.workers
        if budget is not None:
            # reckoned for one worker, whatever the runner has: the results do not depend
            # on --jobs or --scheduler (SPEC §4); more workers end sooner (a limit
            # multiplied by the workers had given another plan at --jobs 2)
            left, stress_count = budget.left(), total - len(variants)
            share = VARIANT_SHARE if stress_count else 1.0
            time_limit = max(LEAST_LIMIT_S, share * left / len(variants))
            stress_limit = max(LEAST_LIMIT_S, (1 - share) * left / max(1, stress_count))
        results, why, lost = _map(runner, _solve_variant, [
            (scenario, v.policy, v.demand_scale, per_workload, solver, time_limit, gap,
             stop_by) for v in variants], [(v, None) for v in variants], done)
        # what a commitment's saving is measured against: the pay-as-you-go offers in
        # reach, whatever the policy (a saving against spot or regions a workload may
        # not use had read -$500 a month where solve says +$250)
        reach = find_candidates(scenario).offers
        for v, result in zip(variants, results):
            if result is None:
                v.status, v.note, v.lost = "not_run", why, lost
                continue
            v.plan, v.status, v.least_s, v.work_s, v.clock_stopped = result
            if v.plan is not None:
                v.plan.scenario = scale_demand(scenario, v.demand_scale, per_workload)
                v.plan.reach = reach
        _adopt_cheaper_plans(scenario, variants,
                             scenario.settings.mip_gap if gap is None else gap)
        # the stress tests, in order while their limits fit in what the variants' solves
        # left of the budget (reckoned one after another: the same tests whatever the
        # workers), a round of `workers` at a time
        # the policies that signed commitments first: a stress test is of a policy's
        # commitments (an outside audit: at --time-limit 30 the default's two that ran
        # were payg's, which signs none, and the six of the others were not run)
        committed_first = sorted((v for v in at_base if v.plan is not None),
                                 key=lambda v: not v.plan.signed())  # (stable)
        tasks = [(v, x, time_limit if budget is None else
                  _stress_limit(v, stress_limit, time_limit))
                 for v in committed_first for x in stress_scales]
        signed = {v.label: v.plan.signed() for v, _, _ in tasks}  # what each keeps
        if budget is not None:
            tasks = _that_fit(tasks, left - sum(v.work_s for v in variants))
            if budget.out_of_time():  # the variants outran their reckoning: none is run
                tasks = []
        size = workers if budget is not None else len(tasks)
        while tasks:
            batch, tasks = tasks[:size], tasks[size:]
            stressed, why, lost = _map(runner, _stress_test, [
                (scenario, v.policy, v.demand_scale * x, per_workload, signed[v.label],
                 solver, limit, gap, stop_by) for v, x, limit in batch],
                [(v, x) for v, x, _ in batch], done, required=False)
            for (v, x, _), figures in zip(batch, stressed):
                if figures is not None:
                    v.stress[x] = figures
                elif why:
                    v.stress_note, v.lost = why, v.lost or lost
    for v in at_base:  # what the time did not hold
        for x in stress_scales:
            v.stress.setdefault(x, {"status": "not_run"})
    return variants


def _adopt_cheaper_plans(scenario: Scenario, variants: list[Variant],
                         asked_gap: float) -> None:
    """Where a policy allows every offer of the scenario another allows and the other's
    plan at the same demand is cheaper, that plan is this policy's too, under this
    policy's own bound: a plan is within a gap of its optimum, not at it (the default
    scenario's are within 3 %), and the comparison should not rank a policy above one
    with every choice it has. Offers, not the policies' text, decide (reserved:36 allows
    what reserved does where no term is longer)."""
    allowed = {id(v): frozenset(o.key for o in scenario.offers
                                if Restrictions(terms=v.policy.terms).allows(scenario, o))
               for v in variants}
    plans = [(v, v.plan) for v in variants if v.plan is not None]
    for v, own in plans:
        cheapest = min(((u, plan) for u, plan in plans
                        if u.demand_scale == v.demand_scale
                        and allowed[id(u)] <= allowed[id(v)]),
                       key=lambda up: (up[1].totals["objective_usd"], up[0] is not v))
        u, plan = cheapest
        if u is v or plan.totals["objective_usd"] >= own.totals["objective_usd"]:
            continue
        r = own.result
        objective = plan.totals["objective_usd"]
        value = None if r.bound is None else honest_gap(objective, r.bound, r.unservable_usd)
        result = dataclasses.replace(
            plan.result, status=status_of(value, asked_gap), objective=objective,
            bound=r.bound, gap=value, seconds=r.seconds, rounds="",
            unservable_usd=r.unservable_usd,
            termination=f"{u.policy.name}'s plan, which costs less than this policy's "
                        f"own ({r.termination}) and is within this policy")
        v.plan, v.status = dataclasses.replace(plan, result=result), result.status
        v.adopted = u.policy.name


def _that_fit(tasks: list[tuple], room: float) -> list[tuple]:
    """The first of `tasks` (their time limit last) whose limits add up to `room` at
    most."""
    fit, used = [], 0.0
    for task in tasks:
        used += task[-1]
        if used > room:
            break
        fit.append(task)
    return fit


def _stress_limit(v: Variant, share: float, most: float) -> float:
    """A stress test's time limit: its `share`, or what `v`'s plan from the LP needed
    (NEED_MARGIN × its least_s) where that is more, up to `most` (the variant's own)."""
    if v.least_s is None or not math.isfinite(v.least_s):
        return share
    return max(share, min(most, NEED_MARGIN * v.least_s))


def _map(runner: Runner, fn, tasks: list, owners: list[tuple[Variant, float | None]],
         done: Callable[[Variant, float | None], None],
         required: bool = True) -> tuple[list, str, bool]:
    """runner.map(fn, tasks), `done(*owner)` after each (a variant, and the demand change
    of its stress test: None for its own solve), why some are missing and whether the
    cluster was lost (ClusterError.lost): where
    the time runs out, what the tasks done returned stands (None for the others). Where
    none was done, the cluster's error stands, unless the tasks are not `required` (stress
    tests: the variants done are written all the same)."""
    if not tasks:
        return [], "", False
    try:
        return runner.map(fn, tasks, lambda i, count, total: done(*owners[i])), "", False
    except ClusterError as e:
        if required and not any(r is not None for r in e.results):
            raise
        return e.results or [None] * len(tasks), str(e), e.lost


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


# solve --json's figures, null for a variant with no plan (not run, or none found)
NO_PLAN_FIGURES = ("objective_usd", "total_cost_usd", "cost_by_term_usd", "egress_usd",
                   "unmet_unit_hours", "mip_gap", "bound_usd", "unservable_unit_hours",
                   "unservable_penalty_usd", "effective_savings_rate", "solve_seconds")


def is_payg_only(policy: Policy) -> bool:
    """A policy that allows pay-as-you-go terms alone: what savings are taken against."""
    return set(policy.terms) <= set(PAY_AS_YOU_GO)


def payg_baselines(v: Variant, variants: list[Variant]) -> list[dict]:
    """A variant's `baselines` in the JSON, as solve's (SPEC §4): each pay-as-you-go-only
    policy's plan at its demand level, with the saving against it stated only like for
    like (the same demand unmet, as the Comparison sheet states it); an outside audit
    found every variant's `baselines` empty and no saving anywhere in the JSON."""
    if v.plan is None:
        return []
    total, unmet = v.plan.totals["total_cost_usd"], v.plan.totals["unmet_unit_hours"]
    out = []
    for u in variants:
        if u is v or not is_payg_only(u.policy) or u.demand_scale != v.demand_scale:
            continue
        t = u.plan.totals if u.plan is not None else None
        out.append(dict(
            name=u.policy.name, status=u.status,
            mip_gap=u.plan.result.gap if u.plan is not None else None,
            total_cost_usd=t and t["total_cost_usd"],
            unmet_unit_hours=t and t["unmet_unit_hours"],
            saving_usd=t["total_cost_usd"] - total
            if t and same_unmet(t["unmet_unit_hours"], unmet) else None))
    return out


def variant_summary(v: Variant, baselines: list[dict] | None = None) -> dict:
    """Figures of one variant for the comparison table and the JSON (`baselines`: its
    comparison plans, `payg_baselines`, rounded as solve's)."""
    from planner.report.json_out import plan_json

    out = {"name": v.policy.name, "policy": v.policy.text, "demand_scale": v.demand_scale,
           "workload_scales": v.workload_scales, "status": v.status}
    if v.plan is None:  # solve --json's keys all the same (SPEC §4), with nothing in them
        out.update({key: None for key in NO_PLAN_FIGURES}, commitments=[], assignments=[],
                   baselines=[], note=v.note or None)
        return out
    data = plan_json(v.plan, baselines=baselines)
    data.pop("status")
    out.update(data)
    c = v.plan.commitments
    used = float(c["used_gpu_hours"].sum())
    available = float(c["available_gpu_hours"].sum())
    out["average_commitment_utilization"] = used / available if available else None
    out["obligation_usd"] = v.plan.totals["obligation_usd"]
    out["beyond_horizon_usd"] = v.plan.totals["beyond_horizon_usd"]
    out["stress"] = {f"{k:g}": {name: round(x, 2 if name != "mip_gap" else 8)
                                if isinstance(x, float) else x for name, x in val.items()}
                     for k, val in v.stress.items()}  # money to the cent, as solve's
    return out
