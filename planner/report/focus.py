"""The plan's costs as FinOps FOCUS 1.2 charges (SPEC §4 v2: `solve --focus`), one row per
charge per month, nominal. Sum of EffectiveCost = total_cost_usd.

How each cost becomes charges:

* pay-as-you-go GPU-hours: a Usage row per offer and month (spot: PricingCategory
  Dynamic, on demand: Standard); billed and effective alike.
* a commitment or existing contract, each month it is counted: a Purchase row of its
  monthly payment (Recurring; EffectiveCost 0: the cost is carried by its usage rows), a
  Purchase row of the upfront counted in its start month (One-Time), and Usage rows at
  the amortized rate (payment + upfront spread over the term's hours) for its GPU-hours
  Used and Unused (BilledCost 0). After the horizon (tail policy full) the forecast's
  last month is assumed to repeat, as in the commitment economics.
* egress: a Usage row per region and month, priced per GB.
"""

from __future__ import annotations

import csv
import datetime as dt
from collections import defaultdict
from pathlib import Path

from planner.files import write_atomically
from planner.report.economics import monthly_use
from planner.report.plan import Plan

COLUMNS = (
    "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd",
    "ChargeCategory", "ChargeClass", "ChargeFrequency", "ChargeDescription", "ProviderName",
    "PublisherName", "InvoiceIssuerName", "RegionId", "RegionName", "ServiceCategory",
    "ServiceName", "SkuId", "PricingCategory", "PricingUnit", "PricingQuantity",
    "ListUnitPrice", "ListCost", "BilledCost", "EffectiveCost", "ConsumedQuantity",
    "ConsumedUnit", "CommitmentDiscountId", "CommitmentDiscountType",
    "CommitmentDiscountCategory", "CommitmentDiscountStatus", "BillingCurrency",
)
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
    """Every charge of the plan, in FOCUS 1.2 columns (SPEC §4 v2)."""
    s = plan.scenario
    st = s.settings
    out = _Charges(plan)
    on_demand = {(o.region, o.gpu): o.usd_per_gpu_hour for o in s.offers
                 if o.term == "on_demand"}
    category, service = GPU_SERVICE

    # pay-as-you-go GPU-hours, per offer and month
    payg = plan.assignments[plan.assignments["term"].isin(["spot", "on_demand"])]
    usage: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for a in payg.itertuples():
        cell = usage[(int(a.month), a.provider, a.region, a.gpu, a.term, a.contract,
                      float(a.usd_per_gpu_hour))]
        cell[0] += a.gpus * a.hours
        cell[1] += a.cost_usd
    for (m, provider, region, gpu, term, sku, rate), (hours, usd) in sorted(usage.items()):
        out.add(m, provider, region, ChargeCategory="Usage", ChargeFrequency="Usage-Based",
                ChargeDescription=f"{gpu} GPU-hours, {term.replace('_', '-')}",
                ServiceCategory=category, ServiceName=service, SkuId=sku,
                PricingCategory="Dynamic" if term == "spot" else "Standard",
                PricingUnit=GPU_HOURS, PricingQuantity=hours, ListUnitPrice=rate,
                ListCost=usd, BilledCost=usd, EffectiveCost=usd, ConsumedQuantity=hours,
                ConsumedUnit=GPU_HOURS)

    # commitments and existing contracts
    use = monthly_use(plan)
    last = st.horizon_months - 1
    hpm = st.hours_per_month
    for c in plan.contracts.itertuples():
        months = round(c.counted_payments_usd / c.monthly_payment_usd) \
            if c.monthly_payment_usd else 0
        first = max(int(c.start), 0)
        counted = list(range(first, first + months))
        if not counted:
            continue
        # the counted cost spread evenly over the counted months' GPU-hours
        amortized = (c.counted_payments_usd + c.counted_upfront_usd) / (c.gpus * hpm
                                                                        * len(counted))
        sku = c.offer or f"{c.region}/{c.gpu}/existing"
        kind = "existing contract" if c.kind == "existing" else c.term
        list_rate = on_demand.get((c.region, c.gpu), c.usd_per_gpu_hour)
        common = dict(ServiceCategory=category, ServiceName=service, SkuId=sku,
                      CommitmentDiscountId=c.contract, CommitmentDiscountType=kind,
                      CommitmentDiscountCategory="Usage")
        for m in counted:
            out.add(m, c.provider, c.region, ChargeCategory="Purchase",
                    ChargeFrequency="Recurring",
                    ChargeDescription=f"{c.contract}: {int(c.gpus)} {c.gpu} GPUs, {kind} "
                                      f"{c.commit_months} months, monthly payment",
                    PricingCategory="Committed", PricingUnit=GPU_HOURS,
                    PricingQuantity=c.gpus * hpm, ListUnitPrice=c.usd_per_gpu_hour,
                    ListCost=c.monthly_payment_usd, BilledCost=c.monthly_payment_usd,
                    EffectiveCost=0.0, **common)
            if m == first and c.counted_upfront_usd:
                out.add(m, c.provider, c.region, ChargeCategory="Purchase",
                        ChargeFrequency="One-Time",
                        ChargeDescription=f"{c.contract}: upfront payment",
                        PricingCategory="Committed", PricingUnit="GPUs",
                        PricingQuantity=c.gpus,
                        ListUnitPrice=c.counted_upfront_usd / c.gpus,
                        ListCost=c.counted_upfront_usd, BilledCost=c.counted_upfront_usd,
                        EffectiveCost=0.0, **common)
            used = use.get(c.contract, {}).get(min(m, last), [0.0, 0.0])[0]
            for status, hours in (("Used", used), ("Unused", c.gpus * hpm - used)):
                if hours <= 1e-9:
                    continue
                out.add(m, c.provider, c.region, ChargeCategory="Usage",
                        ChargeFrequency="Usage-Based",
                        ChargeDescription=f"{c.contract}: {c.gpu} GPU-hours {status.lower()}"
                                          + (" (after the horizon: its last month repeated)"
                                             if m > last else ""),
                        PricingCategory="Committed", PricingUnit=GPU_HOURS,
                        PricingQuantity=hours, ListUnitPrice=list_rate,
                        ListCost=hours * list_rate, BilledCost=0.0,
                        EffectiveCost=hours * amortized,
                        ConsumedQuantity=hours if status == "Used" else "",
                        ConsumedUnit=GPU_HOURS if status == "Used" else "",
                        CommitmentDiscountStatus=status, **common)

    # egress
    category, service = EGRESS_SERVICE
    region_rate = {r.region: r.egress_usd_per_gb for r in s.regions}
    per_region = plan.egress.groupby(["month", "provider", "region"], as_index=False)[
        ["gb", "usd"]].sum()
    for e in per_region.itertuples():
        out.add(int(e.month), e.provider, e.region, ChargeCategory="Usage",
                ChargeFrequency="Usage-Based", ChargeDescription="data transfer out",
                ServiceCategory=category, ServiceName=service, SkuId=f"{e.region}/egress",
                PricingCategory="Standard", PricingUnit="GB", PricingQuantity=e.gb,
                ListUnitPrice=region_rate[e.region], ListCost=e.usd, BilledCost=e.usd,
                EffectiveCost=e.usd, ConsumedQuantity=e.gb, ConsumedUnit="GB")
    out.rows.sort(key=lambda r: (r["ChargePeriodStart"], r["ProviderName"], r["RegionId"],
                                 r["SkuId"], r["ChargeCategory"], r["ChargeFrequency"],
                                 r["CommitmentDiscountId"], r["CommitmentDiscountStatus"]))
    return out.rows


def write_focus_csv(rows: list[dict], path: Path) -> None:
    """The rows as CSV, written atomically (a failed run leaves an earlier file)."""
    def write(tmp: str) -> None:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(rows)

    write_atomically(Path(path), write)
