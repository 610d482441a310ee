"""The validated, typed scenario: what every later stage reads.

Frozen dataclasses, so a scenario cannot change under the model that was built from it.
Months are indexes 0 … horizon_months−1 from `settings.start_month`; text like "2027-01"
only appears at the edges (loading and reporting).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from functools import cached_property

from planner.io.issues import Issue
from planner.io.schema import COMMITMENT_TERMS


def month_label(start: tuple[int, int], index: int) -> str:
    """'YYYY-MM' of month `index` counted from `start` = (year, month)."""
    y, m = start
    total = y * 12 + (m - 1) + index
    return f"{total // 12:04d}-{total % 12 + 1:02d}"


@dataclass(frozen=True)
class Settings:
    start_month: tuple[int, int]
    horizon_months: int
    hours_per_month: float = 730.0
    tail_policy: str = "full"
    discount_rate_annual: float = 0.0
    unmet_penalty_usd_per_unit_hour: float = 1000.0
    solver: str = "highs"
    time_limit_s: float = 60.0
    mip_gap: float = 0.0001
    stale_price_days: int = 180

    def month(self, index: int) -> str:
        return month_label(self.start_month, index)

    @property
    def months(self) -> range:
        return range(self.horizon_months)

    def discount(self, month: float) -> float:
        """Weight of a cost paid in month `month` (SPEC: (1 + d)^(−m/12))."""
        return (1.0 + self.discount_rate_annual) ** (-month / 12.0)


@dataclass(frozen=True)
class Gpu:
    gpu: str
    memory_gb: float | None = None
    mem_bandwidth_tbps: float | None = None
    bf16_tflops: float | None = None
    tdp_watts: float | None = None
    source: str = ""


@dataclass(frozen=True)
class Site:
    site: str
    country: str
    jurisdiction: str
    lat: float | None = None
    lon: float | None = None


@dataclass(frozen=True)
class Link:
    site_a: str
    site_b: str
    rtt_ms: float


@dataclass(frozen=True)
class Region:
    region: str
    provider: str
    site: str
    egress_usd_per_gb: float = 0.0


@dataclass(frozen=True)
class Offer:
    region: str
    gpu: str
    term: str
    usd_per_gpu_hour: float
    commit_months: int = 0
    upfront_usd_per_gpu: float = 0.0
    lead_time_days: float = 0.0
    max_gpus: int | None = None
    min_gpus: int = 0
    interruption_rate: float = 0.0
    gpus_per_instance: int = 1
    source: str = ""
    price_date: dt.date | None = None

    @property
    def key(self) -> str:
        """Unique name of the offer: region/gpu/term[/months]."""
        base = f"{self.region}/{self.gpu}/{self.term}"
        return f"{base}/{self.commit_months}" if self.is_commitment else base

    @property
    def is_commitment(self) -> bool:
        return self.term in COMMITMENT_TERMS

    @property
    def first_month(self) -> int:
        """First month the offer can be used: ceil(lead_time_days / 30)."""
        return math.ceil(self.lead_time_days / 30.0 - 1e-9)

    @property
    def derate(self) -> float:
        """Share of throughput a GPU of this offer delivers (spot loses interruptions)."""
        return 1.0 - self.interruption_rate if self.term == "spot" else 1.0


@dataclass(frozen=True)
class Workload:
    workload: str
    kind: str
    latency_slo_ms: float | None = None
    residency: tuple[str, ...] = ()
    allow_spot: bool = False
    max_spot_share: float = 1.0
    peak_to_average: float = 1.0
    peak_hours_share: float = 0.0
    egress_gb_per_unit_hour: float = 0.0
    single_region: bool = False
    pool: str | None = None
    unmet_penalty_usd_per_unit_hour: float = 1000.0

    @property
    def pool_name(self) -> str:
        """The pool whose replicas this workload shares (itself when it has none)."""
        return self.pool if self.pool else f"~{self.workload}"

    def level(self, amount: float, at_peak: bool) -> float:
        """Demand level in a segment where the workload is (or is not) at its peak."""
        s, p = self.peak_hours_share, self.peak_to_average
        if s <= 0.0:
            return amount
        if at_peak:
            return amount * p
        if s >= 1.0:
            return 0.0
        return max(0.0, amount * (1.0 - s * p) / (1.0 - s))


@dataclass(frozen=True)
class Throughput:
    workload: str
    gpu: str
    units_per_gpu: float
    gpus_per_replica: int = 1


@dataclass(frozen=True)
class Demand:
    workload: str
    month: int
    amount: float
    site: str | None = None


@dataclass(frozen=True)
class DemandScenario:
    """One demand scenario of a stochastic plan: its probability and the multiplier of
    each (workload, month) — the most specific row of the table that matches it."""

    name: str
    probability: float
    # (workload or None, month or None) -> multiplier; None: every one
    multipliers: tuple[tuple[tuple[str | None, int | None], float], ...] = ()

    def multiplier(self, workload: str, month: int) -> float:
        table = dict(self.multipliers)
        for key in ((workload, month), (workload, None), (None, month), (None, None)):
            if key in table:
                return table[key]
        return 1.0


@dataclass(frozen=True)
class Existing:
    region: str
    gpu: str
    gpus: int
    start: int  # month index, may lie before the horizon
    end: int  # inclusive
    usd_per_gpu_hour: float

    def active(self, month: int) -> bool:
        return self.start <= month <= self.end


@dataclass(frozen=True)
class Scenario:
    name: str
    settings: Settings
    gpus: tuple[Gpu, ...]
    sites: tuple[Site, ...]
    links: tuple[Link, ...]
    regions: tuple[Region, ...]
    offers: tuple[Offer, ...]
    workloads: tuple[Workload, ...]
    throughput: tuple[Throughput, ...]
    demand: tuple[Demand, ...]
    existing: tuple[Existing, ...] = ()
    demand_scenarios: tuple[DemandScenario, ...] = ()
    warnings: tuple[Issue, ...] = field(default=(), compare=False)
    # The tables as the user wrote them (column names, cell values), for the workbook.
    tables_as_read: dict = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def site_by_name(self) -> dict[str, Site]:
        return {s.site: s for s in self.sites}

    @cached_property
    def region_by_name(self) -> dict[str, Region]:
        return {r.region: r for r in self.regions}

    @cached_property
    def workload_by_name(self) -> dict[str, Workload]:
        return {w.workload: w for w in self.workloads}

    @cached_property
    def offer_by_key(self) -> dict[str, Offer]:
        return {o.key: o for o in self.offers}

    @cached_property
    def throughput_by_pair(self) -> dict[tuple[str, str], Throughput]:
        return {(t.workload, t.gpu): t for t in self.throughput}

    def content_hash(self) -> str:
        """Hash of the typed content: equal for a CSV folder and a workbook of the same data."""
        data = {
            k: v
            for k, v in asdict(self).items()
            if k not in ("warnings", "tables_as_read", "name")
        }
        text = json.dumps(data, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]
