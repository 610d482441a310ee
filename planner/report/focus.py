"""The plan's costs as FinOps FOCUS 1.2 charges (SPEC §4 v2: `solve --focus`), one row per
charge per month, nominal. Sum of EffectiveCost = total_cost_usd.

How each cost becomes charges:

* pay-as-you-go GPU-hours: a Usage row per offer and month (spot: PricingCategory
  Dynamic, on demand: Standard); billed and effective alike.
* a commitment or existing contract, each month it is counted (planner.report.plan.
  counted_months; a prepaid or free one too): a Purchase row of its monthly payment
  (Recurring; EffectiveCost 0: the cost is carried by its usage rows), a Purchase row of
  its upfront in its start month (One-Time; billed whole, as invoiced, under the prorate
  tail policy too), both PricingCategory Standard (FOCUS 1.2: a commitment's purchase at
  its agreed rate is Standard; Committed is for charges a commitment discounts), and
  Usage rows (Committed) at the amortized rate (counted payments + counted upfront
  spread over the counted months' hours) for its GPU-hours Used and Unused
  (BilledCost 0). After the horizon (tail policy full) the forecast's last month is
  assumed to repeat, as in the commitment economics.
* egress: a Usage row per region and month, priced per GB.
"""

from __future__ import annotations

import csv
import datetime as dt
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

from planner.files import write_atomically
from planner.report.csv_text import safe_row
from planner.report.economics import monthly_use
from planner.report.plan import Plan, counted_months, records

COLUMNS = (
    "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd",
    "ChargeCategory", "ChargeClass", "ChargeFrequency", "ChargeDescription", "ProviderName",
    "PublisherName", "InvoiceIssuerName", "RegionId", "RegionName", "ServiceCategory",
    "ServiceName", "SkuId", "PricingCategory", "PricingUnit", "PricingQuantity",
    "ListUnitPrice", "ListCost", "BilledCost", "EffectiveCost", "ConsumedQuantity",
    "ConsumedUnit", "CommitmentDiscountId", "CommitmentDiscountType",
    "CommitmentDiscountCategory", "CommitmentDiscountStatus", "BillingCurrency",
)
FIGURES = ("PricingQuantity", "ListUnitPrice", "ListCost", "BilledCost", "EffectiveCost",
           "ConsumedQuantity")
GPU_SERVICE = ("AI and Machine Learning", "GPU compute")
EGRESS_SERVICE = ("Compute", "Data transfer out")
GPU_HOURS = "GPU-Hours"


def _month_start(start: tuple[int, int], index: int) -> dt.date:
    total = start[0] * 12 + start[1] - 1 + index
    return dt.date(total // 12, total % 12 + 1, 1)


class _Charges:
    def __init__(self, plan: Plan):
        self.st = plan.scenario.settings
        self.rows: list[dict] = []

    def add(self, month: int, provider: str, region: str, **fields) -> None:
        start = _month_start(self.st.start_month, month).isoformat()
        end = _month_start(self.st.start_month, month + 1).isoformat()
        row = dict.fromkeys(COLUMNS, "")
        row.update(BillingPeriodStart=start, BillingPeriodEnd=end, ChargePeriodStart=start,
                   ChargePeriodEnd=end, ProviderName=provider, PublisherName=provider,
                   InvoiceIssuerName=provider, RegionId=region, RegionName=region,
                   BillingCurrency="USD")
        row.update(fields)
        self.rows.append(row)


def focus_rows(plan: Plan) -> list[dict]:
    """Every charge of the plan, in FOCUS 1.2 columns (SPEC §4 v2), in a fixed order."""
    out = _Charges(plan)
    _payg_charges(out, plan)
    _contract_charges(out, plan)
    _egress_charges(out, plan)
    for row in out.rows:  # to a millionth: no float noise (10.950000000000001)
        for c in FIGURES:
            if isinstance(row[c], float):
                row[c] = round(row[c], 6)
    out.rows.sort(key=lambda r: (r["ChargePeriodStart"], r["ProviderName"], r["RegionId"],
                                 r["SkuId"], r["ChargeCategory"], r["ChargeFrequency"],
                                 r["CommitmentDiscountId"], r["CommitmentDiscountStatus"]))
    return out.rows


def _payg_charges(out: _Charges, plan: Plan) -> None:
    """Pay-as-you-go GPU-hours, one charge per offer and month."""
    category, service = GPU_SERVICE
    payg = plan.assignments[plan.assignments["term"].isin(["spot", "on_demand"])]
    usage: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for a in records(payg):
        cell = usage[(int(a.month), a.provider, a.region, a.gpu, a.term, a.contract,
                      float(a.usd_per_gpu_hour))]
        cell[0] += a.gpus * a.hours
        cell[1] += a.cost_usd
    # GPU-hours in use per offer and month: where an offer sells whole instances, the
    # idle GPUs of the last one are paid (PricingQuantity) but not consumed
    consumed: dict[tuple, float] = defaultdict(float)
    for u in records(plan.usage):
        if u.term in ("spot", "on_demand"):
            consumed[(int(u.month), u.source)] += u.gpus * u.hours
    for (m, provider, region, gpu, term, sku, rate), (hours, usd) in sorted(usage.items()):
        out.add(m, provider, region, ChargeCategory="Usage", ChargeFrequency="Usage-Based",
                ChargeDescription=f"{gpu} GPU-hours, {term.replace('_', '-')}",
                ServiceCategory=category, ServiceName=service, SkuId=sku,
                PricingCategory="Dynamic" if term == "spot" else "Standard",
                PricingUnit=GPU_HOURS, PricingQuantity=hours, ListUnitPrice=rate,
                ListCost=usd, BilledCost=usd, EffectiveCost=usd,
                ConsumedQuantity=consumed.get((m, sku), hours), ConsumedUnit=GPU_HOURS)


def _contract_charges(out: _Charges, plan: Plan) -> None:
    """Commitments and existing contracts, per counted month: the payments billed
    (monthly, upfront in the first), and their GPU-hours used and unused at the
    amortized rate (EffectiveCost) beside the on-demand list price."""
    s = plan.scenario
    st = s.settings
    category, service = GPU_SERVICE
    on_demand = {(o.region, o.gpu): o.usd_per_gpu_hour for o in s.offers
                 if o.term == "on_demand"}
    use = monthly_use(plan)
    last = st.horizon_months - 1
    hpm = st.hours_per_month
    for _, row in plan.contracts.iterrows():
        c = SimpleNamespace(**row)
        counted = counted_months(row, st)
        if not counted or not c.gpus:  # an existing contract of no GPUs bills nothing
            continue
        first = counted[0]
        # the counted cost spread evenly over the counted months' GPU-hours
        amortized = (c.counted_payments_usd + c.counted_upfront_usd) / (c.gpus * hpm
                                                                        * len(counted))
        sku = c.offer or f"{c.region}/{c.gpu}/existing"
        kind = "existing contract" if c.kind == "existing" else c.term
        list_rate = on_demand.get((c.region, c.gpu), c.usd_per_gpu_hour)
        common = dict(ServiceCategory=category, ServiceName=service, SkuId=sku,
                      CommitmentDiscountId=c.contract, CommitmentDiscountType=kind,
                      CommitmentDiscountCategory="Usage")
        term = f"{kind} {_months(c.commit_months)}" if c.kind != "existing" else kind
        # the usage rows' EffectiveCost to a millionth by their running sum, so that a
        # contract's rows add up to its cost exactly (3 × $213.333333 had summed to
        # $639.999999 of $640)
        spread = stated = 0.0
        for m in counted:
            if c.monthly_payment_usd:
                out.add(m, c.provider, c.region, ChargeCategory="Purchase",
                        ChargeFrequency="Recurring",
                        ChargeDescription=f"{c.contract}: {int(c.gpus)} {c.gpu} GPUs, "
                                          f"{term}, monthly payment",
                        PricingCategory="Standard", PricingUnit=GPU_HOURS,
                        PricingQuantity=c.gpus * hpm, ListUnitPrice=c.usd_per_gpu_hour,
                        ListCost=c.monthly_payment_usd, BilledCost=c.monthly_payment_usd,
                        EffectiveCost=0.0, **common)
            if m == first and c.upfront_usd:
                # billed whole, as invoiced (under prorate too: its usage rows carry the
                # part the plan counts)
                out.add(m, c.provider, c.region, ChargeCategory="Purchase",
                        ChargeFrequency="One-Time",
                        ChargeDescription=f"{c.contract}: upfront payment",
                        PricingCategory="Standard", PricingUnit="GPUs",
                        PricingQuantity=c.gpus, ListUnitPrice=c.upfront_usd / c.gpus,
                        ListCost=c.upfront_usd, BilledCost=c.upfront_usd,
                        EffectiveCost=0.0, **common)
            used = use.get(c.contract, {}).get(m, [0.0, 0.0])[0]
            for status, hours in (("Used", used), ("Unused", c.gpus * hpm - used)):
                if hours <= 1e-9:
                    continue
                spread += hours * amortized
                effective = round(spread, 6) - stated
                stated += effective
                out.add(m, c.provider, c.region, ChargeCategory="Usage",
                        ChargeFrequency="Usage-Based",
                        ChargeDescription=f"{c.contract}: {c.gpu} GPU-hours {status.lower()}"
                                          + (" (after the horizon: its last month repeated)"
                                             if m > last else ""),
                        PricingCategory="Committed", PricingUnit=GPU_HOURS,
                        PricingQuantity=hours, ListUnitPrice=list_rate,
                        ListCost=hours * list_rate, BilledCost=0.0,
                        EffectiveCost=effective,
                        ConsumedQuantity=hours if status == "Used" else "",
                        ConsumedUnit=GPU_HOURS if status == "Used" else "",
                        CommitmentDiscountStatus=status, **common)


def _egress_charges(out: _Charges, plan: Plan) -> None:
    """Data transfer out, one charge per provider, region and month."""
    category, service = EGRESS_SERVICE
    region_rate = {r.region: r.egress_usd_per_gb for r in plan.scenario.regions}
    per_region = plan.egress.groupby(["month", "provider", "region"], as_index=False)[
        ["gb", "usd"]].sum()
    for e in records(per_region):
        out.add(int(e.month), e.provider, e.region, ChargeCategory="Usage",
                ChargeFrequency="Usage-Based", ChargeDescription="data transfer out",
                ServiceCategory=category, ServiceName=service, SkuId=f"{e.region}/egress",
                PricingCategory="Standard", PricingUnit="GB", PricingQuantity=e.gb,
                ListUnitPrice=region_rate[e.region], ListCost=e.usd, BilledCost=e.usd,
                EffectiveCost=e.usd, ConsumedQuantity=e.gb, ConsumedUnit="GB")


def _months(n) -> str:
    return f"{int(n)} month" + ("" if int(n) == 1 else "s")


def write_focus_csv(rows: list[dict], path: Path) -> None:
    """The rows as CSV, written atomically (a failed run leaves an earlier file)."""
    def write(tmp: str) -> None:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(safe_row(r) for r in rows)

    write_atomically(Path(path), write)
