"""The JSON a solve prints (SPEC §4)."""

from __future__ import annotations

import math

from planner.report.economics import commitment_economics, effective_savings
from planner.report.plan import COST_KEYS, Plan, records, warning_lines
from planner.solve.whole import honest_gap

# a comparison plan's figures rounded as the plan's own: its unmet unit-hours rounded to
# cents had shown more than the plan's (98,511,691.43 beside 98,511,691.425) where its
# saving was stated because it leaves no more unmet
DIGITS = {"mip_gap": 8, "unmet_unit_hours": 6}


def _r(x: float | None, digits: int = 6) -> float | None:
    return None if x is None else round(float(x), digits)


def _gap(result, objective: float, bound: float | None, unservable: float) -> float | None:
    """The gap as the JSON's own figures state it (SPEC §4 v2: (objective_usd −
    bound_usd) / (objective_usd − unservable_penalty_usd)): the solver's, taken on figures
    not rounded to cents, had differed from it in the 4th digit on a $954 plan with $5
    unproven. None where there is no finite gap."""
    if result.gap is None or not math.isfinite(result.gap):
        return None
    if bound is None:
        return _r(result.gap, 8)
    gap = honest_gap(objective, bound, unservable)
    return gap if math.isfinite(gap) else None


def plan_json(plan: Plan, seconds: float | None = None,
              baselines: list | None = None, notes: list[str] = ()) -> dict:
    """The plan as `solve --json` prints it (SPEC §4); `notes`: the command's own
    warnings, listed in `warnings` after the scenario's."""
    st = plan.scenario.settings
    t = plan.totals
    result = plan.result
    economics = commitment_economics(plan)
    commitments = []
    for c in records(plan.commitments):
        e = economics[c.contract]
        commitments.append(dict(
            region=c.region, gpu=c.gpu, term=c.term, commit_months=int(c.commit_months),
            start_month=c.start_month, end_month=c.end_month, gpus=int(c.gpus),
            provider=c.provider, obligation_usd=_r(c.obligation_usd, 2),
            upfront_usd=_r(c.upfront_usd, 2), beyond_horizon_usd=_r(c.beyond_horizon_usd, 2),
            utilization=_r(e["utilization"], 4),
            horizon_utilization=_r(c.utilization, 4), idle_usd=_r(e["idle_usd"], 2),
            monthly_saving_usd=_r(e["monthly_saving_usd"], 2),
            break_even_month=e["break_even_month"]))
    savings = effective_savings(plan)
    assignments = [
        dict(month=a.month_label, segment=int(a.segment), hours=_r(a.hours), workload=a.workload,
             region=a.region, gpu=a.gpu, term=a.term, contract=a.contract, gpus=_r(a.gpus),
             cost_usd=_r(a.cost_usd, 2))
        for a in records(plan.assignments)
    ]
    unmet = [
        dict(workload=u.workload, site=u.site if isinstance(u.site, str) else None,
             month=u.month_label, segment=int(u.segment),
             units=_r(u.units), unit_hours=_r(u.unit_hours), reason=u.reason)
        for u in records(plan.unmet)
    ]
    # the figures the gap is stated on, as printed: the objective and its bound to 1e-6
    # (cents moved a gap at the one asked past it: a $770 plan's bound $769.92377 stated
    # $769.92 made 1.04e-4 of 1e-4 beside "optimal"), the bound never above the plan
    objective, unservable = _r(t["objective_usd"]), _r(t["unservable_penalty_usd"], 2)
    bound = None if result.bound is None else min(_r(result.bound), objective)
    return {
        "scenario": plan.scenario.name,
        "input_hash": plan.scenario.content_hash(),
        "status": result.status,
        "termination": result.termination,
        "solver": result.solver,
        # a run's rounds replay on the same HiGHS only (README, `--rounds`)
        "solver_version": result.version or None,
        "objective_usd": objective,
        "total_cost_usd": _r(t["total_cost_usd"], 2),
        "discounted_total_cost_usd": _r(t["discounted_total_cost_usd"], 2),
        "cost_by_term_usd": {k: _r(t["cost_by_term_usd"][k], 2) for k in COST_KEYS},
        "egress_usd": _r(t["egress_usd"], 2),
        "unmet_unit_hours": _r(t["unmet_unit_hours"]),
        "unmet_penalty_usd": _r(t["unmet_penalty_usd"], 2),
        "discounted_unmet_penalty_usd": _r(t["discounted_unmet_penalty_usd"], 2),
        "mip_gap": _gap(result, objective, bound, unservable),
        "bound_usd": bound,
        "unservable_unit_hours": _r(t["unservable_unit_hours"]),
        "unservable_penalty_usd": unservable,
        "effective_savings_rate": None if savings["effective_savings_rate"] is None
        else _r(savings["effective_savings_rate"], 6),
        "on_demand_equivalent_usd": _r(savings["on_demand_equivalent_usd"], 2),
        "lock_in_usd": _r(savings["lock_in_usd"], 2),
        "lock_in_months": _r(savings["lock_in_months"], 4),
        "rounds": result.rounds or None,
        "solve_seconds": _r(result.seconds if seconds is None else seconds, 3),
        "start_month": st.month(0),
        "horizon_months": st.horizon_months,
        "commitments": commitments,
        "assignments": assignments,
        "unmet": unmet,
        "baselines": [
            {k: (_r(v, DIGITS.get(k, 2)) if isinstance(v, float) else v)
             for k, v in b.items()} for b in (baselines or [])],
        "warnings": warning_lines(plan.scenario, notes),
    }
