"""The solved plan as tidy tables (pandas), and its costs.

Committed GPUs are pooled in the model (per region and GPU type); for the schedule and the
workbook we allocate their use to contracts in a fixed order — existing contracts first,
then new commitments by start month, term and offer — so every GPU-hour has one contract
and one rate, and a commitment's utilization can be stated.
"""

from __future__ import annotations

import math
from collections import defaultdict, namedtuple
from dataclasses import dataclass, field

import pandas as pd

from planner.io.scenario import Scenario
from planner.io.schema import TERMS
from planner.model.builder import COMMITTED
from planner.model.candidates import (
    UNMET_CAPACITY,
    UNMET_CAPACITY_HELD,
    UNMET_NOT_ALLOWED,
    UNMET_PENALTY,
    UNMET_ROOM,
    UNMET_SPOT_SHARE,
    Candidates,
)
from planner.model.costs import counted_per_gpu, obligation_per_gpu
from planner.model.solution import Solution
from planner.solve.whole import SolveResult

EPS = 1e-7
COST_KEYS = (*TERMS, "existing")


@dataclass
class Plan:
    scenario: Scenario
    candidates: Candidates
    result: SolveResult
    usage: pd.DataFrame  # GPUs per pool and source (what the checker verifies)
    supply: pd.DataFrame  # units of each workload per region, GPU type and source
    flows: pd.DataFrame  # units of each workload from each demand site to each region
    unmet: pd.DataFrame
    contracts: pd.DataFrame  # new commitments and existing contracts
    assignments: pd.DataFrame  # GPUs per workload, contract or offer, month and segment
    egress: pd.DataFrame
    cost_lines: pd.DataFrame  # every cost by month, term, provider (sums to the total)
    totals: dict = field(default_factory=dict)
    # offers each workload may use whatever the plan was restricted to (a what-if
    # variant's plan comes without its candidates, which its policy restricted): what
    # a commitment's saving is measured against (planner.report.economics.payg_sources)
    reach: dict | None = None

    @property
    def commitments(self) -> pd.DataFrame:
        return self.contracts[self.contracts["kind"] == "new"]

    def signed(self) -> dict[tuple[str, int], int]:
        """(offer key, start month) → GPUs of each new commitment: the schedule, as
        `Restrictions.fixed_commitments` takes it."""
        return {(c.offer, int(c.start)): int(c.gpus) for c in self.commitments.itertuples()}


class _RoomLeft:
    """Where the plan left room for one more replica of a workload: GPUs of a
    pay-as-you-go offer below its max_gpus, committed GPUs idle, or a commitment it could
    have signed larger (what tells a plan that stopped short from a full market)."""

    def __init__(self, index, solution: Solution, usage_rows: list[dict], gpr: dict):
        s = index.scenario
        self.index, self.gpr = index, gpr
        self.pool_of = {w.workload: w.pool_name for w in s.workloads}
        # (offer key or (r, g) of committed GPUs, month, segment) -> GPUs in use
        self.used: dict[tuple, float] = defaultdict(float)
        for row in usage_rows:
            key = (row["region"], row["gpu"]) if row["source"] == COMMITTED else row["source"]
            self.used[(key, row["month"], row["segment"])] += row["gpus"]
        self.committed: dict[tuple, float] = defaultdict(float)  # ((r, g), month) -> GPUs
        signed: dict[tuple, float] = defaultdict(float)  # (offer key, month) -> GPUs
        active: dict[tuple, list] = defaultdict(list)  # (offer key, month) -> (key, t)
        horizon = s.settings.horizon_months
        for (key, t), q in solution.commit.items():
            o = s.offer_by_key[key]
            for m in range(t, min(t + o.commit_months, horizon)):
                self.committed[((o.region, o.gpu), m)] += q
                signed[(key, m)] += q
                active[(key, m)].append((key, t))
        for (r, g, m), gpus in index.existing_gpus.items():
            self.committed[((r, g), m)] += gpus
        # single-region workloads -> the (region, GPU type) the plan runs them on: room
        # elsewhere is not theirs to use
        self.chosen: dict[str, set] = defaultdict(set)
        for (w, r, g, src, m, k), units in solution.supply.items():
            if units > EPS and s.workload_by_name[w].single_region:
                self.chosen[w].add((r, g))
        # ((r, g), month) -> GPUs a commitment active then could still have added
        self.signable: dict[tuple, float] = defaultdict(float)
        upper = solution.commit_upper
        for (key, m), starts in active.items():
            o = s.offer_by_key[key]
            if any(upper.get(x) is None or solution.commit[x] < upper[x] - 0.5
                   for x in starts):
                # (in whole instances where the offer commits them)
                room = float("inf") if o.max_gpus is None else math.floor(
                    (o.max_gpus - signed[(key, m)]) / o.gpus_per_instance + 1e-9
                ) * o.gpus_per_instance
                self.signable[((o.region, o.gpu), m)] = max(
                    self.signable[((o.region, o.gpu), m)], room)

    def in_reach(self, w: str, site, month: int, k: int, held: bool = True) -> bool:
        """Whether a source in reach of (w, site) had room for one more replica in
        (month, k); a single-region workload's only in the pair it runs on (`held`)."""
        index, s = self.index, self.index.scenario
        near = set(index.candidates.regions_for_site.get((w, site), ()))
        chosen = self.chosen.get(w) if held else None
        for (r, g, src), first in index.sources.get(w, {}).items():
            if first > month or r not in near or (chosen and (r, g) not in chosen):
                continue
            need = self.gpr[(self.pool_of[w], g)]
            if src == COMMITTED:
                idle = self.committed[((r, g), month)] - self.used[((r, g), month, k)]
                if max(idle, self.signable[((r, g), month)]) >= need:
                    return True
                continue
            o = s.offer_by_key[src]
            if o.term == "spot" and s.workload_by_name[w].max_spot_share < 1.0:
                continue  # its share may be what binds
            # one more replica, in whole instances where the offer sells them: the
            # GPUs then paid for within max_gpus (as the checker counts them)
            size = o.gpus_per_instance
            paid = math.ceil((self.used[(src, month, k)] + need) / size - 1e-9) * size
            if o.max_gpus is None or paid <= o.max_gpus + 1e-9:
                return True
        return False


CONTRACT_COLUMNS = [
    "contract", "kind", "offer", "region", "provider", "gpu", "term", "commit_months",
    "start", "end", "start_month", "end_month", "gpus", "usd_per_gpu_hour",
    "monthly_payment_usd", "upfront_usd", "obligation_usd", "beyond_horizon_usd",
    "counted_payments_usd", "counted_upfront_usd", "discounted_usd", "used_gpu_hours",
    "available_gpu_hours", "utilization"]


def warning_lines(scenario: Scenario, notes=()) -> list[str]:
    """Every warning of a run as its reports list them: the scenario's, then the
    command's own `notes` (SPEC §5: every warning)."""
    return [*map(str, scenario.warnings), *(f"warning: {note}" for note in notes)]


def records(table: pd.DataFrame):
    """The rows of `table` as named tuples, as `itertuples(index=False)` gives them but
    read a column at a time: pandas' text columns give up their values one by one
    slowly (a fifth of writing a 60 k-row Plan sheet)."""
    return map(namedtuple("Row", table.columns, rename=True)._make,
               zip(*(table[c].tolist() for c in table.columns)))


def extract_plan(index, solution: Solution, result: SolveResult) -> Plan:
    """The plan's tables from `solution`; `index` (a model builder or model) gives the
    scenario, its candidates, each workload's sources and the existing GPUs."""
    s, c = index.scenario, index.candidates
    hours = [seg.share * s.settings.hours_per_month for seg in c.segments]
    supply_rows, load = _supply(s, solution)
    gpr = {(s.workload_by_name[t.workload].pool_name, t.gpu): t.gpus_per_replica
           for t in s.throughput}
    usage_rows = _usage(s, solution, gpr, hours, load)
    flows = _flows(index, solution, supply_rows)
    unmet = _unmet(index, solution, usage_rows, gpr, hours)
    contracts = _existing_contracts(s) + _new_contracts(s, solution)
    st = s.settings
    for row in contracts:
        row.setdefault("beyond_horizon_usd", max(0, row["end"] - (st.horizon_months - 1))
                       * row["monthly_payment_usd"])
        row["used_gpu_hours"] = 0.0
        inside = sum(1 for m in st.months if row["start"] <= m <= row["end"])
        row["available_gpu_hours"] = row["gpus"] * inside * st.hours_per_month
    assignments = _assignments(s, load, usage_rows, contracts, hours)
    egress = _egress(s, supply_rows, hours)
    contracts_df = pd.DataFrame(contracts, columns=CONTRACT_COLUMNS)
    cost_lines = _cost_lines(s, assignments, contracts_df, egress)
    plan = Plan(s, c, result, pd.DataFrame(usage_rows, columns=[
        "month", "segment", "pool", "region", "gpu", "source", "term", "replicas", "gpus",
        "hours"]), pd.DataFrame(supply_rows, columns=[
            "workload", "region", "gpu", "source", "month", "segment", "units"]),
        flows, unmet, contracts_df, assignments, egress, cost_lines)
    plan.totals = _totals(plan)
    return plan


def _supply(s: Scenario, solution: Solution) -> tuple[list[dict], dict]:
    """What runs where: units per workload and source, and each pool's load on each
    source per workload (in replicas: how the pool's GPUs are shared out)."""
    tp = s.throughput_by_pair
    workloads = s.workload_by_name
    supply_rows = []
    load: dict[tuple, dict[str, float]] = defaultdict(dict)  # (p,r,g,src,m,k) -> w -> replicas
    for (w, r, g, src, m, k), x in solution.supply.items():
        if x <= EPS:
            continue
        supply_rows.append(dict(workload=w, region=r, gpu=g, source=src, month=m,
                                segment=k, units=x))
        t = tp[(w, g)]
        derate = 1.0 if src == COMMITTED else s.offer_by_key[src].derate
        load[(workloads[w].pool_name, r, g, src, m, k)][w] = x / (
            t.units_per_gpu * t.gpus_per_replica * derate)
    return supply_rows, load


def _usage(s: Scenario, solution: Solution, gpr: dict, hours: list[float],
           load: dict) -> list[dict]:
    """GPUs per pool and source in whole replicas (what the checker verifies). Committed
    GPUs a pool's replicas hold with no load on them are not its: they cost nothing more
    (paid whatever the plan), so a solver may leave them set (an outside audit: a training
    run on 4 on-demand GPUs in one region also listed on 2 idle GPUs of an existing
    contract in another, its on-demand equivalent and savings rate off by them)."""
    usage_rows = []
    for (p, r, g, src, m, k), n in solution.replicas.items():
        n = int(round(n))
        if n <= 0 or (src == COMMITTED and (p, r, g, src, m, k) not in load):
            continue
        offer = s.offer_by_key.get(src)
        usage_rows.append(dict(
            month=m, segment=k, pool=p, region=r, gpu=g, source=src,
            term=offer.term if offer else COMMITTED, replicas=n, gpus=n * gpr[(p, g)],
            hours=hours[k],
        ))
    return usage_rows


def _flows(index, solution: Solution, supply_rows: list[dict]) -> pd.DataFrame:
    """Units per workload from each region to each demand site."""
    c = index.candidates
    flow_rows = [dict(workload=w, site=site, region=r, month=m, segment=k, units=x)
                 for (w, site, r, m, k), x in solution.flow.items() if x > EPS]
    # single-site workloads have no flow variables: their supply serves their one site
    sites_of = _sites_of(getattr(index, "level", c.level))
    multi = {w for w, sites in sites_of.items() if len(sites) > 1}
    site_of = {w: next(iter(sites)) for w, sites in sites_of.items() if sites}
    for row in supply_rows:
        if row["workload"] not in multi:
            flow_rows.append(dict(workload=row["workload"], site=site_of[row["workload"]],
                                  region=row["region"], month=row["month"],
                                  segment=row["segment"], units=row["units"]))
    flows = pd.DataFrame(flow_rows, columns=["workload", "site", "region", "month",
                                             "segment", "units"])
    if len(flows):
        flows = flows.groupby(["workload", "site", "region", "month", "segment"],
                              as_index=False, dropna=False)["units"].sum()
    return flows


def _unmet(index, solution: Solution, usage_rows: list[dict], gpr: dict,
           hours: list[float]) -> pd.DataFrame:
    """Demand left unmet, each cell with its penalty and the reason."""
    s, c = index.scenario, index.candidates
    st, workloads = s.settings, s.workload_by_name
    unmet_rows = []
    room = None  # _RoomLeft, built at the first unmet demand that asks
    # demand no source could serve was taken out of the model: unmet; of it, what no
    # source in reach could serve in any month is unservable (SPEC §4 v2)
    beyond, never = index.beyond_capacity, index.never
    # the offers the plan may buy (a what-if policy's): where it allows some in reach,
    # their lead time, not the policy, holds back a month they do not reach yet
    limits = getattr(index, "restrictions", None)  # (a model built whole: none kept)
    allowed = None if limits is None or (limits.terms is None and limits.providers is None) \
        else (lambda o: limits.allows(s, o))
    cells = [*((key, x, False) for key, x in solution.unmet.items()),
             *((key, x, True) for key, x in index.out_of_model.items())]
    for (w, site, m, k), x, out_of_model in cells:
        if x <= 1e-6:
            continue
        penalty = workloads[w].unmet_penalty_usd_per_unit_hour
        reason = c.unmet_reason(w, site, m, allowed)
        if out_of_model and (w, site, m, k) in beyond and reason in (
                UNMET_CAPACITY, UNMET_SPOT_SHARE, UNMET_PENALTY):
            reason = UNMET_CAPACITY  # more than every source in reach could deliver
        elif out_of_model and reason in (UNMET_CAPACITY, UNMET_SPOT_SHARE, UNMET_PENALTY):
            reason = UNMET_NOT_ALLOWED  # offers exist, but not for this variant
        elif reason in (UNMET_CAPACITY, UNMET_SPOT_SHARE):
            room = room or _RoomLeft(index, solution, usage_rows, gpr)
            if room.in_reach(w, site, m, k):
                reason = UNMET_ROOM  # the plan, not the market, left it unmet
            elif (reason == UNMET_CAPACITY and room.chosen.get(w)
                  and room.in_reach(w, site, m, k, held=False)):
                # room elsewhere, not a single-region workload's to use (an outside audit
                # read "capacity exhausted" beside a region with room)
                reason = UNMET_CAPACITY_HELD
        unmet_rows.append(dict(
            workload=w, site=site, month=m, month_label=st.month(m), segment=k,
            level=c.level[(w, site, m, k)], units=x, hours=hours[k],
            unit_hours=x * hours[k], penalty_usd=x * hours[k] * penalty,
            reason=reason, unservable=out_of_model and (w, site, m, k) in never,
        ))
    table = pd.DataFrame(unmet_rows, columns=[
        "workload", "site", "month", "month_label", "segment", "level", "units", "hours",
        "unit_hours", "penalty_usd", "reason", "unservable"])
    # one row a cell and reason: what was taken out before solving beside what the plan
    # left of the rest, for the same reason, had been two rows (an outside audit: 20 and
    # 720 units of one training run's month and segment, both "capacity exhausted")
    key = ["workload", "site", "month", "month_label", "segment", "reason", "unservable"]
    if table.empty or not table.duplicated(key).any():
        return table
    merged = table.groupby(key, dropna=False, sort=False).agg(
        level=("level", "first"), units=("units", "sum"), hours=("hours", "first"),
        unit_hours=("unit_hours", "sum"), penalty_usd=("penalty_usd", "sum")).reset_index()
    return merged[table.columns]


def _existing_contracts(s: Scenario) -> list[dict]:
    """The existing contracts, as contract rows. Their obligation is what is left of them
    from the horizon's start: the months before it are paid and in no column (an outside
    audit found $450 of obligation beside $150 counted and nothing beyond)."""
    st = s.settings
    contracts = []
    for i, e in enumerate(s.existing):
        inside = [m for m in st.months if e.active(m)]
        contracts.append(dict(
            contract=f"existing {i + 1}", kind="existing", offer="", region=e.region,
            provider=s.region_by_name[e.region].provider, gpu=e.gpu, term="existing",
            commit_months=e.end - e.start + 1, start=e.start, end=e.end,
            start_month=st.month(e.start), end_month=st.month(e.end), gpus=e.gpus,
            usd_per_gpu_hour=e.usd_per_gpu_hour,
            monthly_payment_usd=e.gpus * st.hours_per_month * e.usd_per_gpu_hour,
            upfront_usd=0.0,
            obligation_usd=e.gpus * max(0, e.end - max(e.start, 0) + 1)
            * st.hours_per_month * e.usd_per_gpu_hour,
            counted_payments_usd=e.gpus * len(inside) * st.hours_per_month
            * e.usd_per_gpu_hour,
            counted_upfront_usd=0.0,
            discounted_usd=sum(e.gpus * st.hours_per_month * e.usd_per_gpu_hour
                               * st.discount(m) for m in inside),
        ))
    return contracts


def _new_contracts(s: Scenario, solution: Solution) -> list[dict]:
    """The commitments the plan signs, as contract rows, by start month, term and offer
    (the order they are numbered in)."""
    st = s.settings
    term_order = {t: i for i, t in enumerate(TERMS)}
    new = sorted(
        ((key, t, int(round(q))) for (key, t), q in solution.commit.items() if q > 0.5),
        key=lambda x: (x[1], term_order[s.offer_by_key[x[0]].term], x[0]),
    )
    contracts = []
    for key, t, q in new:
        o = s.offer_by_key[key]
        payments, upfront = counted_per_gpu(o, t, st, discounted=False)
        dp, du = counted_per_gpu(o, t, st, discounted=True)
        end = t + o.commit_months - 1
        beyond = max(0, end - (st.horizon_months - 1))
        contracts.append(dict(
            contract=f"new {len(contracts) + 1}", kind="new", offer=key,
            region=o.region, provider=s.region_by_name[o.region].provider, gpu=o.gpu,
            term=o.term,
            commit_months=o.commit_months, start=t, end=end, start_month=st.month(t),
            end_month=st.month(end), gpus=q, usd_per_gpu_hour=o.usd_per_gpu_hour,
            monthly_payment_usd=q * st.hours_per_month * o.usd_per_gpu_hour,
            upfront_usd=q * o.upfront_usd_per_gpu,
            obligation_usd=q * obligation_per_gpu(o, st),
            beyond_horizon_usd=q * beyond * st.hours_per_month * o.usd_per_gpu_hour,
            counted_payments_usd=q * payments, counted_upfront_usd=q * upfront,
            discounted_usd=q * (dp + du),
        ))
    return contracts


def use_order(active: list) -> list:
    """Contracts (rows with `start` and `end`, in the schedule's order) in the order
    pooled committed use is drawn from them: the soonest to end first, then the earliest
    signed — whatever their terms' or offers' names (which had decided it)."""
    return [c for _, c in sorted(enumerate(active),
                                 key=lambda x: (x[1]["end"], x[1]["start"], x[0]))]


def _assignments(s: Scenario, load: dict, usage_rows: list[dict], contracts: list[dict],
                 hours: list[float]) -> pd.DataFrame:
    """GPUs per workload, by offer or by contract: a pool's GPUs shared out in proportion
    to its workloads' loads; committed GPUs allocated to the contracts active in the
    month, the soonest to end first (`use_order`: their hours are the first lost; each
    contract's used GPU-hours and utilization are set here)."""
    st, workloads = s.settings, s.workload_by_name
    assignment_rows = []

    def split(pool_key, gpus_total):
        """Share of a pool's GPUs per workload, in proportion to their loads."""
        loads = load.get(pool_key, {})
        total = sum(loads.values())
        if total <= 0:
            members = sorted(w for w in workloads if workloads[w].pool_name == pool_key[0])
            return [(members[0], gpus_total)]
        return [(w, gpus_total * x / total) for w, x in sorted(loads.items())]

    paid = _paid_share(s, usage_rows)
    committed_use: dict[tuple, list] = defaultdict(list)
    for u in usage_rows:
        key = (u["pool"], u["region"], u["gpu"], u["source"], u["month"], u["segment"])
        if u["source"] == COMMITTED:
            committed_use[(u["region"], u["gpu"], u["month"], u["segment"])].append(u)
            continue
        o = s.offer_by_key[u["source"]]
        # GPUs sold in whole instances: the idle rest of the last instance is paid by the
        # workloads on it, in proportion to their GPUs
        for w, n in split(key, u["gpus"] * paid.get((o.key, u["month"], u["segment"]), 1.0)):
            assignment_rows.append(dict(
                month=u["month"], segment=u["segment"], workload=w, region=u["region"],
                gpu=u["gpu"], term=o.term, contract=o.key, gpus=n, hours=u["hours"],
                usd_per_gpu_hour=o.usd_per_gpu_hour))
    for (r, g, m, k), uses in sorted(committed_use.items(), key=str):
        active = use_order([row for row in contracts if row["region"] == r
                            and row["gpu"] == g and row["start"] <= m <= row["end"]])
        room = [row["gpus"] for row in active]
        for u in sorted(uses, key=lambda x: x["pool"]):
            need = u["gpus"]
            key = (u["pool"], r, g, COMMITTED, m, k)
            for i, row in enumerate(active):
                take = min(need, room[i])
                if take <= 0:
                    continue
                room[i] -= take
                need -= take
                row["used_gpu_hours"] += take * hours[k]
                for w, n in split(key, take):
                    assignment_rows.append(dict(
                        month=m, segment=k, workload=w, region=r, gpu=g, term=row["term"],
                        contract=row["contract"], gpus=n, hours=hours[k],
                        usd_per_gpu_hour=row["usd_per_gpu_hour"]))
                if need <= 0:
                    break
    for row in contracts:
        row["utilization"] = (row["used_gpu_hours"] / row["available_gpu_hours"]
                              if row["available_gpu_hours"] else 0.0)
    assignments = pd.DataFrame(assignment_rows, columns=[
        "month", "segment", "workload", "region", "gpu", "term", "contract", "gpus", "hours",
        "usd_per_gpu_hour"])
    assignments["month_label"] = [st.month(m) for m in assignments["month"]]
    assignments["provider"] = [s.region_by_name[r].provider for r in assignments["region"]]
    assignments["cost_usd"] = (assignments["gpus"] * assignments["hours"]
                               * assignments["usd_per_gpu_hour"])
    assignments = assignments.sort_values(
        ["month", "segment", "workload", "region", "gpu", "term", "contract"],
        kind="stable").reset_index(drop=True)
    return assignments


def _egress(s: Scenario, supply_rows: list[dict], hours: list[float]) -> pd.DataFrame:
    """Data transfer out of each region, per workload and month."""
    workloads = s.workload_by_name
    egress_rows = []
    for row in supply_rows:
        w, r = workloads[row["workload"]], s.region_by_name[row["region"]]
        gb = row["units"] * hours[row["segment"]] * w.egress_gb_per_unit_hour
        if gb > 0 and r.egress_usd_per_gb > 0:
            egress_rows.append(dict(workload=w.workload, region=r.region,
                                    provider=r.provider, month=row["month"],
                                    segment=row["segment"], gb=gb,
                                    usd=gb * r.egress_usd_per_gb))
    egress = pd.DataFrame(egress_rows, columns=["workload", "region", "provider", "month",
                                                "segment", "gb", "usd"])
    return egress


def _paid_share(s: Scenario, usage_rows: list[dict]) -> dict[tuple, float]:
    """(offer key, month, segment) -> GPUs paid ÷ GPUs in use, on pay-as-you-go offers
    sold in instances of n > 1 GPUs (SPEC §2 v2: paid in whole instances)."""
    used: dict[tuple, float] = defaultdict(float)
    for u in usage_rows:
        o = s.offer_by_key.get(u["source"])
        if o is not None and o.gpus_per_instance > 1:
            used[(o.key, u["month"], u["segment"])] += u["gpus"]
    out = {}
    for (key, m, k), gpus in used.items():
        n = s.offer_by_key[key].gpus_per_instance
        out[(key, m, k)] = math.ceil(gpus / n - 1e-9) * n / gpus
    return out


def _sites_of(level: dict) -> dict[str, set]:
    """Each workload's demand sites in the model (`level`: the demand it serves; a
    workload with one site has no flow variables)."""
    out: dict[str, set] = defaultdict(set)
    for key in level:
        out[key[0]].add(key[1])
    return out


def counted_months(c, st) -> list[int]:
    """The months from 0 (after the horizon too) whose payments a contract row `c` counts
    in the plan's cost: its months under the tail policy (existing contracts: inside the
    horizon), from the counted payments where it has a monthly payment."""
    first = max(int(c["start"]), 0)  # existing contracts: months before are not ours
    if c["monthly_payment_usd"]:
        return list(range(first, first + round(c["counted_payments_usd"]
                                               / c["monthly_payment_usd"])))
    # no monthly payment (prepaid, or free): the months its payments would count
    end = int(c["end"])
    if c["kind"] == "existing" or st.tail_policy != "full":
        end = min(end, st.horizon_months - 1)
    return list(range(first, end + 1))


def _cost_lines(s: Scenario, assignments, contracts, egress) -> pd.DataFrame:
    """Every dollar of the plan once: month (−1: after the horizon), term, provider."""
    st = s.settings
    rows = []
    payg = assignments[assignments["term"].isin(["spot", "on_demand"])]
    for (m, term, prov), part in payg.groupby(["month", "term", "provider"]):
        usd = float(part["cost_usd"].sum())
        rows.append(dict(month=int(m), term=term, provider=prov, category="GPU-hours",
                         usd=usd, discounted_usd=usd * st.discount(m)))
    for _, c in contracts.iterrows():
        for m in counted_months(c, st) if c["monthly_payment_usd"] else ():
            inside = m < st.horizon_months
            rows.append(dict(month=m if inside else -1, term=c["term"],
                             provider=c["provider"], category="commitment payments",
                             usd=c["monthly_payment_usd"],
                             discounted_usd=c["monthly_payment_usd"] * st.discount(m)))
        if c["counted_upfront_usd"]:
            rows.append(dict(month=int(c["start"]), term=c["term"], provider=c["provider"],
                             category="upfront", usd=c["counted_upfront_usd"],
                             discounted_usd=c["counted_upfront_usd"]
                             * st.discount(int(c["start"]))))
    for (m, prov), part in egress.groupby(["month", "provider"]):
        usd = float(part["usd"].sum())
        rows.append(dict(month=int(m), term="egress", provider=prov, category="egress",
                         usd=usd, discounted_usd=usd * st.discount(m)))
    lines = pd.DataFrame(rows, columns=["month", "term", "provider", "category", "usd",
                                        "discounted_usd"])
    lines["month_label"] = [st.month(m) if m >= 0 else "after horizon" for m in lines["month"]]
    return lines


def _totals(plan: Plan) -> dict:
    s = plan.scenario
    st = s.settings
    lines = plan.cost_lines
    by_term = {k: 0.0 for k in COST_KEYS}
    for term, usd in lines[lines["term"] != "egress"].groupby("term")["usd"].sum().items():
        by_term[term] = float(usd)
    egress = float(plan.egress["usd"].sum())
    penalty = float(plan.unmet["penalty_usd"].sum())
    discounted_penalty = float(sum(
        row.penalty_usd * st.discount(row.month) for row in plan.unmet.itertuples()))
    total = sum(by_term.values()) + egress
    discounted_total = float(lines["discounted_usd"].sum())
    plan_cost = float(plan.assignments["cost_usd"].sum())
    upfront = float(plan.contracts["counted_upfront_usd"].sum())
    committed_paid = float(plan.contracts["counted_payments_usd"].sum())
    committed_used = float(plan.assignments.loc[
        ~plan.assignments["term"].isin(["spot", "on_demand"]), "cost_usd"].sum())
    # payments counted for months after the horizon (tail policy full): no plan inside
    # the horizon uses them, and they are not idle either (the forecast's last month is
    # assumed to go on)
    after = float(sum(c["monthly_payment_usd"] for _, c in plan.contracts.iterrows()
                      for m in counted_months(c, st) if m >= st.horizon_months))
    return {
        "total_cost_usd": total,
        "discounted_total_cost_usd": discounted_total,
        "cost_by_term_usd": by_term,
        "egress_usd": egress,
        "plan_cost_usd": plan_cost,
        "idle_committed_usd": committed_paid - after - committed_used,  # in the horizon
        "after_horizon_usd": after,
        "upfront_usd": upfront,
        # under prorate, the upfronts' share for months beyond the horizon
        "uncounted_upfront_usd": float((plan.contracts["upfront_usd"]
                                        - plan.contracts["counted_upfront_usd"]).sum()),
        "unmet_unit_hours": float(plan.unmet["unit_hours"].sum()),
        "unmet_penalty_usd": penalty,  # nominal
        "discounted_unmet_penalty_usd": discounted_penalty,  # as the objective counts it
        "unservable_unit_hours": float(
            plan.unmet.loc[plan.unmet["unservable"].astype(bool), "unit_hours"].sum()),
        # as the objective counts it (discounted): what the gap leaves out
        "unservable_penalty_usd": plan.result.unservable_usd,
        "objective_usd": discounted_total + discounted_penalty,
        "solver_objective_usd": plan.result.objective,
        "obligation_usd": float(plan.commitments["obligation_usd"].sum()),
        "beyond_horizon_usd": float(plan.commitments["beyond_horizon_usd"].sum()),
    }
