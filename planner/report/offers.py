"""`planner offers`: the market of a scenario at a glance, cheapest first (SPEC §4 v2),
as `sky show-gpus` shows a cloud's: each offer's hourly rate, its effective rate with the
upfront payment spread over the term, and — from a site — its transit latency."""

from __future__ import annotations

import math

from planner.io.scenario import Scenario
from planner.model.graph import Transit

COLUMNS = ("gpu", "provider", "region", "term", "usd_per_gpu_hour",
           "effective_usd_per_gpu_hour", "commit_months", "gpus_per_instance", "max_gpus",
           "lead_time_days", "source", "price_date")


def shown_ms(ms: float) -> float:
    """A transit latency as listed: a float (0.0 at the site itself, as 90.0 elsewhere),
    to a millionth of a millisecond, so that a path's links of 1.1 and 2.2 ms read 3.3,
    not their float sum 3.3000000000000003 (an outside audit)."""
    return round(float(ms), 6)


def effective_rate(offer, hours_per_month: float) -> float:
    """USD per GPU-hour with the upfront payment spread over the term's hours."""
    if not offer.commit_months or not offer.upfront_usd_per_gpu:
        return offer.usd_per_gpu_hour
    return offer.usd_per_gpu_hour + offer.upfront_usd_per_gpu / (
        offer.commit_months * hours_per_month)


def offer_rows(scenario: Scenario, gpu: str | None = None, region: str | None = None,
               term: str | None = None, origin: str | None = None,
               slo_ms: float | None = None, workload: str | None = None) -> list[dict]:
    """The offers matching the filters (names as the scenario spells them), cheapest
    effective rate first; with `origin` (a site) each row has its `rtt_ms`, and with
    `slo_ms` only offers within it are listed. With `workload`: only offers that can serve
    it (a GPU type with its throughput, a region in its jurisdictions, spot only if it may
    use spot: allowed, with a share above 0), within its latency SLO from `origin` unless
    `slo_ms` says otherwise, each with `usd_per_unit_hour` (effective rate ÷ its units
    per GPU, spot derated), cheapest per unit first."""
    hpm = scenario.settings.hours_per_month
    transit = Transit(scenario, [origin]) if origin is not None else None
    provider = {r.region: r.provider for r in scenario.regions}
    w = scenario.workload_by_name[workload] if workload else None
    if w is not None and slo_ms is None:
        slo_ms = w.latency_slo_ms
    sites = scenario.site_by_name
    rows = []
    for o in scenario.offers:
        if (gpu and o.gpu != gpu) or (region and o.region != region) \
                or (term and o.term != term):
            continue
        if w is not None:
            place = sites[scenario.region_by_name[o.region].site]
            if (w.workload, o.gpu) not in scenario.throughput_by_pair \
                    or (o.term == "spot" and (not w.allow_spot or w.max_spot_share <= 0)) \
                    or (w.residency and place.jurisdiction not in w.residency
                        and place.country not in w.residency):
                continue
        row = {
            "gpu": o.gpu, "provider": provider[o.region], "region": o.region,
            "term": o.term, "usd_per_gpu_hour": o.usd_per_gpu_hour,
            "effective_usd_per_gpu_hour": round(effective_rate(o, hpm), 6),
            "commit_months": o.commit_months or None,
            "gpus_per_instance": o.gpus_per_instance, "max_gpus": o.max_gpus,
            # days as typed: whole ones as whole numbers (0, not 0.0)
            "lead_time_days": (int(o.lead_time_days) if float(o.lead_time_days).is_integer()
                               else o.lead_time_days),
            "source": o.source or None,
            "price_date": o.price_date.isoformat() if o.price_date else None,
        }
        if transit is not None:
            ms = transit.latency(origin, scenario.region_by_name[o.region].site)
            if slo_ms is not None and ms > slo_ms + 1e-9:
                continue
            row["rtt_ms"] = None if math.isinf(ms) else shown_ms(ms)
        if w is not None:
            units = scenario.throughput_by_pair[(w.workload, o.gpu)].units_per_gpu * o.derate
            row["usd_per_unit_hour"] = round(row["effective_usd_per_gpu_hour"] / units, 9)
        rows.append(row)
    first = "usd_per_unit_hour" if w is not None else "effective_usd_per_gpu_hour"
    rows.sort(key=lambda r: (r[first], r["gpu"], r["region"], r["term"],
                             r["commit_months"] or 0))
    return rows
