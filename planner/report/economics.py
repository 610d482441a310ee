"""Commitment economics (SPEC §4 v2, §5 v2): what each commitment saves, when it pays
back, what it leaves idle, and the plan's effective savings rate and lock-in.

Definitions (each stated in the workbook's notes too):

* A commitment's use is the GPU-hours the plan draws from it (planner.report.plan
  allocates pooled committed GPUs to the contracts active, the soonest to end first).
  Beyond the horizon the forecast's last month is assumed to repeat: in each month after
  it, the committed GPUs the horizon's last month used at a region and GPU type, segment
  by segment, are drawn again from the contracts still active there, in the same order
  (a contract ending with the horizon leaves its share to those that run on).
* Its pay-as-you-go equivalent prices that use at the cheapest pay-as-you-go source of the
  same GPU type for each workload drawing on it, in any region the workload may use; on
  demand, or spot (per delivered GPU-hour: rate ÷ (1 − interruption_rate)) where the
  workload may run wholly on spot; a workload's committed GPUs of a type in a month and
  segment together, from the sources offered that month, each within the room the plan
  leaves it, a source's whole instances paid in full (`payg_usd_per_hour`). Where no such
  source has room for that use, no saving is stated.
* monthly saving = (pay-as-you-go equivalent − recurring payments) over the term ÷ its
  months: net of idle GPUs, before the upfront payment.
* break-even month: the first month of the term (from 1) at which the cumulative saving
  so far covers the upfront payment (None if it never does).
* idle cost = committed GPU-hours unused over the whole term × the hourly rate.
* effective savings rate = (on-demand equivalent − actual cost) ÷ on-demand equivalent,
  inside the horizon and without egress: every GPU-hour the plan uses priced at the
  on-demand rate of its region and GPU type (else the cheapest on-demand rate of the GPU
  type anywhere, else its own rate).
"""

from __future__ import annotations

import math
from collections import defaultdict

from planner.report.plan import Plan, records, use_order

EPS = 1e-9


def payg_sources(plan: Plan, workload: str, gpu: str) -> list:
    """The pay-as-you-go offers of `gpu` that `workload` could use in place of a
    committed GPU (SPEC §4 v2): the same GPU type in any region the workload may use (the
    same region's on-demand rate overstated the saving where another region sells it for
    less); on demand, or spot where the workload may run wholly on spot. Offers pruned as
    dominated cost no less than the one that dominates them: the least cost is the same
    with or without them."""
    s = plan.scenario
    whole_spot = s.workload_by_name[workload].max_spot_share >= 1.0
    # a what-if variant's plan comes without its candidates, and they were restricted
    # to its policy: the offers in reach of the scenario's own (else: any)
    offers = (plan.reach.get(workload, ()) if plan.reach is not None
              else plan.candidates.offers.get(workload, ()) if plan.candidates is not None
              else s.offers)
    return [o for o in offers
            if o.gpu == gpu and (o.term == "on_demand" or (o.term == "spot" and whole_spot))]


def payg_usd_per_hour(options: list[tuple[float, float, float]], gpus: float) -> float:
    """USD an hour of `gpus` delivered GPUs from `options`, each (USD per delivered
    GPU-hour, delivered GPUs per instance, room in delivered GPUs: inf where uncapped), at
    the least cost found: an instance's GPUs paid in full, a source's room not exceeded,
    the cheapest sources' whole instances first and the rest at any one source with
    room (NaN: no room for them). Single GPUs at $2.5 beside 8-GPU instances at $0.9 a
    GPU: one GPU $2.5 an hour (the instance's per-GPU rate had stated a $30 saving a
    month where $480 is due); eight GPUs $7.2 (single GPUs' rate had overstated it)."""
    options = sorted(options)

    def least(need: float, i: int) -> float:
        if need <= EPS:
            return 0.0
        best = math.inf
        for rate, per, room in options[i:]:  # the rest at one source
            n = math.ceil(need / per - EPS)
            if n * per <= room + EPS:
                best = min(best, n * per * rate)
        if i < len(options):  # or the cheapest source's whole instances, then the rest
            rate, per, room = options[i]
            n = math.floor(need / per + EPS)
            if room < n * per:
                n = max(0, math.floor(room / per + EPS))
            best = min(best, n * per * rate + least(need - n * per, i + 1))
        return best

    value = least(gpus, 0)
    return value if math.isfinite(value) else math.nan


def _payg_used(plan: Plan) -> dict[tuple, float]:
    """(offer key, month, segment) -> GPUs the plan itself uses of a pay-as-you-go offer."""
    used: dict[tuple, float] = defaultdict(float)
    payg = plan.assignments[plan.assignments["term"].isin(["spot", "on_demand"])]
    for a in records(payg):
        used[(f"{a.region}/{a.gpu}/{a.term}", int(a.month), int(a.segment))] += a.gpus
    return used


def monthly_use(plan: Plan) -> dict[str, dict[int, list[float]]]:
    """contract -> month -> [used GPU-hours, their pay-as-you-go equivalent USD (NaN
    where no pay-as-you-go source could serve that use: no saving can be stated)], in
    the horizon and, for the months of a term after it, the horizon's last month
    repeated (`_after_horizon`). A workload's committed GPUs of a type in a month and
    segment are priced together, at the least cost of that many GPUs from its sources
    offered then, each within the room the plan leaves it (an outside audit: a source
    the plan had filled to its max_gpus, at $1 beside $3, stated a loss of $730 a month
    where the plan saves $2,190), and shared out to the contracts they draw on by their
    GPUs."""
    sources: dict[tuple, list] = {}
    used = _payg_used(plan)
    use: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0., 0.]))
    last = plan.scenario.settings.horizon_months - 1
    # (region, GPU type, segment) -> [GPUs, hours, pay-as-you-go USD] used in the last month
    last_month: dict[tuple, list[float]] = defaultdict(lambda: [0., 0., 0.])
    committed = plan.assignments[~plan.assignments["term"].isin(["spot", "on_demand"])]
    cells: dict[tuple, list] = defaultdict(list)  # (workload, GPU type, month, segment)
    for a in records(committed):
        cells[(a.workload, a.gpu, int(a.month), int(a.segment))].append(a)
    for (workload, gpu, month, segment), rows in cells.items():
        if (workload, gpu) not in sources:
            sources[(workload, gpu)] = payg_sources(plan, workload, gpu)
        options = [(o.usd_per_gpu_hour / o.derate, o.gpus_per_instance * o.derate,
                    math.inf if o.max_gpus is None else
                    max(0.0, o.max_gpus - used[(o.key, month, segment)]) * o.derate)
                   for o in sources[(workload, gpu)] if o.first_month <= month]
        gpus = sum(a.gpus for a in rows)
        per_gpu = payg_usd_per_hour(options, gpus) / gpus if gpus > EPS else 0.0
        for a in rows:
            hours = a.gpus * a.hours
            cell = use[a.contract][month]
            cell[0] += hours
            cell[1] += hours * per_gpu
            if month == last:
                pooled = last_month[(a.region, a.gpu, int(a.segment))]
                pooled[0] += a.gpus
                pooled[1] = a.hours
                pooled[2] += hours * per_gpu
    _after_horizon(plan, last_month, use)
    return use


def _after_horizon(plan: Plan, last_month: dict, use: dict) -> None:
    """Into `use`: each month after the horizon, the committed GPUs its last month used
    (`last_month`: by region, GPU type and segment) drawn from the contracts active then
    at that region and GPU type, in the order the plan allocates use (`use_order`)."""
    contracts = plan.contracts.to_dict("records")
    for (region, gpu, _), (gpus, hours, payg) in sorted(last_month.items()):
        if gpus <= EPS:
            continue
        here = [c for c in contracts if c["region"] == region and c["gpu"] == gpu]
        ends = max((int(c["end"]) for c in here), default=-1)
        for m in range(plan.scenario.settings.horizon_months, ends + 1):
            need = gpus
            for c in use_order([c for c in here if c["start"] <= m <= c["end"]]):
                take = min(need, float(c["gpus"]))
                if take <= EPS:
                    break
                need -= take
                cell = use[c["contract"]][m]
                cell[0] += take * hours
                cell[1] += payg * take / gpus


def line_economics(plan: Plan, contracts: list, use=None) -> dict:
    """Economics of one line of the schedule: a contract, or contiguous renewals of one
    offer, whatever GPUs each signs (`contracts`: rows of plan.contracts, in order)."""
    st = plan.scenario.settings
    use = monthly_use(plan) if use is None else use
    # an existing contract's months before the horizon are not the plan's
    start, end = max(int(contracts[0].start), 0), int(contracts[-1].end)
    rate = float(contracts[0].usd_per_gpu_hour)
    upfront: dict[int, float] = defaultdict(float)  # month -> upfront paid then
    for c in contracts:
        upfront[max(int(c.start), 0)] += float(c.upfront_usd)
    gpus: dict[int, float] = defaultdict(float)  # month -> GPUs committed on the line
    series = defaultdict(lambda: [0.0, 0.0])
    for c in contracts:
        for m in range(max(int(c.start), 0), int(c.end) + 1):
            gpus[m] += float(c.gpus)
        for m, (hours, payg) in use.get(c.contract, {}).items():
            series[m][0] += hours
            series[m][1] += payg
    used = payg_total = term_hours = 0.0
    cumulative, paid_upfront, break_even = 0.0, 0.0, None
    for j, m in enumerate(range(start, end + 1), start=1):
        hours, payg = series[m]  # (after the horizon: its last month repeated)
        committed_hours = gpus[m] * st.hours_per_month
        used += hours
        payg_total += payg
        term_hours += committed_hours
        cumulative += payg - committed_hours * rate
        paid_upfront += upfront[m]  # a renewal's upfront from its own start
        if break_even is None and cumulative >= paid_upfront - 1e-6:
            break_even = j
    months = end - start + 1
    return {
        "utilization": used / term_hours if term_hours > 0 else 0.0,
        "used_gpu_hours_term": used,
        "gpu_hours_term": term_hours,
        "idle_usd": max(0.0, term_hours - used) * rate,
        # (None where some of its use has no pay-as-you-go source to be weighed against:
        # a saving of 0 would say it saves nothing)
        "payg_equivalent_usd": payg_total if math.isfinite(payg_total) else None,
        "monthly_saving_usd": None if not math.isfinite(payg_total)
        else (payg_total - term_hours * rate) / months if months else 0.0,
        # an existing contract was signed before the horizon, whose months the plan
        # does not know: no break-even (its term figures run from the horizon's start)
        "break_even_month": None if contracts[0].kind == "existing"
        or not math.isfinite(payg_total) else break_even,
        # the most GPUs the line holds in a month (a contract before the horizon: its own)
        "peak_gpus": max(gpus.values(), default=float(contracts[0].gpus)),
    }


def schedule_lines(plan: Plan) -> list[list]:
    """The commitment schedule's lines (SPEC §5 v2): contiguous contracts of one offer on
    one line (a term renewed as it ends, whatever GPUs each contract signs, upfront or
    not; of staggered contracts, each joins the earliest line that ends the month before
    it starts), every other contract on its own; existing contracts first, each on its
    own."""
    rows = list(records(plan.contracts))
    lines: list[list] = []
    chains: dict[str, list[list]] = defaultdict(list)  # offer -> its lines, oldest first
    for c in sorted(rows, key=lambda c: (c.kind != "existing", c.offer, c.start, c.gpus)):
        if c.kind == "new":
            chain = next((line for line in chains[c.offer]
                          if int(line[-1].end) + 1 == int(c.start)), None)
            if chain is not None:
                chain.append(c)
                continue
        lines.append([c])
        if c.kind == "new":
            chains[c.offer].append(lines[-1])
    order = {c.contract: i for i, c in enumerate(rows)}
    return sorted(lines, key=lambda line: order[line[0].contract])


def line_name(line: list) -> str:
    """A schedule line's name: its contract's, or its first contract's and how many
    renewals follow it ("new 7 + 20 renewals"; contract numbers in between may belong
    to other lines)."""
    if len(line) == 1:
        return line[0].contract
    return f"{line[0].contract} + {len(line) - 1} renewal{'s' if len(line) > 2 else ''}"


def line_names(plan: Plan) -> dict[str, str]:
    """contract -> the name of its line on the schedule (the Commitments sheet)."""
    return {c.contract: line_name(line) for line in schedule_lines(plan) for c in line}


def commitment_economics(plan: Plan) -> dict[str, dict]:
    """contract -> its economics (every new commitment and existing contract)."""
    use = monthly_use(plan)
    return {c.contract: line_economics(plan, [c], use) for c in records(plan.contracts)}


def effective_savings(plan: Plan) -> dict:
    """The plan's on-demand equivalent, actual cost and effective savings rate, inside the
    horizon and without egress; and its lock-in: obligation beyond the horizon and the
    obligation-weighted months its commitments still run after the horizon's end."""
    s = plan.scenario
    st = s.settings
    on_demand: dict[tuple, float] = {}
    cheapest: dict[str, float] = {}
    for o in s.offers:
        if o.term == "on_demand":
            on_demand[(o.region, o.gpu)] = o.usd_per_gpu_hour
            cheapest[o.gpu] = min(cheapest.get(o.gpu, o.usd_per_gpu_hour), o.usd_per_gpu_hour)
    equivalent = 0.0
    for a in records(plan.assignments):
        rate = on_demand.get((a.region, a.gpu), cheapest.get(a.gpu, a.usd_per_gpu_hour))
        equivalent += a.gpus * a.hours * rate
    lines = plan.cost_lines
    actual = float(lines.loc[(lines["month"] >= 0) & (lines["term"] != "egress"), "usd"].sum())
    new = plan.commitments
    beyond = float(new["beyond_horizon_usd"].sum())
    months_left = (new["end"] - (st.horizon_months - 1)).clip(lower=0)
    weighted = float((new["beyond_horizon_usd"] * months_left).sum())
    return {
        "on_demand_equivalent_usd": equivalent,
        "actual_cost_in_horizon_usd": actual,
        "effective_savings_rate": (equivalent - actual) / equivalent if equivalent > EPS
        else None,
        "lock_in_usd": beyond,
        "lock_in_months": weighted / beyond if beyond > EPS else 0.0,
    }
