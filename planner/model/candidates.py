"""What the model may use, decided before a single variable is built.

* Segments: each month splits at every distinct peak_hours_share in use (peaks coincide:
  a workload's peak hours are the first `share` of every month's hours).
* Demand levels per workload, site, month and segment.
* Candidate (workload, offer) pairs, and for each pruned pair the reason; the reasons
  explain unmet demand later.
* Regions each demand site may be served from (latency SLO, residency).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from planner.io.scenario import Offer, Scenario, Workload
from planner.model.graph import Transit

EPS = 1e-9

# Why a (workload, offer) pair can never be used, in the order they are tested.
NO_THROUGHPUT = "no throughput row for this GPU type"
JURISDICTION = "region not in an allowed jurisdiction"
LATENCY = "latency SLO not met from any demand site"
SPOT = "spot not allowed for this workload"
LEAD_TIME = "lead time past the horizon"
NO_CAPACITY = "offer has no capacity (max_gpus 0, or less than one instance)"
DOMINATED = "dominated by"  # + the offer that is never worse

# Why demand is left unmet (SPEC "Unmet demand").
UNMET_NO_GPU = "no GPU type that can serve it"
UNMET_NOT_SOLD = "no offer of a GPU type that can serve it"
UNMET_NO_CAPACITY = ("no offer of a GPU type that can serve it sells a GPU (max_gpus 0, or "
                     "less than one instance)")
UNMET_JURISDICTION = "no offer in an allowed jurisdiction"
UNMET_LATENCY = "no offer within the latency SLO"
UNMET_LATENCY_JURISDICTION = ("no offer within the latency SLO in an allowed jurisdiction "
                              "(those within it are in jurisdictions it may not use)")
UNMET_SPOT = "its only offers in reach are spot, which it may not use"
UNMET_SPOT_ALONE = ("its only offers in reach are spot, which may carry at most its "
                    "max_spot_share (under 1) of what is served: with no other source, none")
UNMET_LEAD_TIME = "lead time: no offer available yet in this month"
UNMET_CAPACITY = "capacity exhausted"
UNMET_CAPACITY_HELD = ("capacity exhausted in the one region and GPU type it runs on "
                       "(single_region)")
UNMET_SPOT_SHARE = ("capacity exhausted (spot, the only source without a limit, may carry "
                    "at most its max_spot_share of what is served)")
UNMET_NOT_ALLOWED = "no offer this plan may buy (its policy or restrictions)"
UNMET_ROOM = ("sources in reach had room (left unused within the time limit and MIP gap, "
              "or dearer than the unmet-demand penalty)")
UNMET_PENALTY = "serving costs more than the unmet-demand penalty (or lies within the MIP gap)"


@dataclass(frozen=True)
class Segment:
    index: int
    start: float  # share of the month's hours where the segment starts
    end: float

    @property
    def share(self) -> float:
        return self.end - self.start

    def peak_for(self, workload: Workload) -> bool:
        """True when `workload` is at its peak level throughout this segment."""
        s = workload.peak_hours_share
        return s > 0 and self.end <= s + EPS


def make_segments(scenario: Scenario) -> list[Segment]:
    active = {d.workload for d in scenario.demand if d.amount > 0}
    cuts = sorted({
        round(w.peak_hours_share, 12)
        for w in scenario.workloads
        if w.workload in active and EPS < w.peak_hours_share < 1 - EPS
    })
    bounds = [0.0, *cuts, 1.0]
    return [Segment(i, a, b) for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]


@dataclass
class Candidates:
    scenario: Scenario
    segments: list[Segment]
    transit: Transit
    # level[(workload, site, month, segment)] > 0: demand to serve (site None: no site)
    level: dict[tuple, float]
    # offers each workload may use, in scenario order
    offers: dict[str, list[Offer]]
    # regions each (workload, site) may be served from
    regions_for_site: dict[tuple[str, str | None], list[str]]
    # (workload, offer key) -> reason it was pruned
    pruned: dict[tuple[str, str], str] = field(default_factory=dict)
    # (workload, site) -> (a reason found before months matter, or the sources in reach)
    _reach: dict = field(default_factory=dict, repr=False, compare=False)

    def counts(self) -> dict[str, int]:
        by_reason: dict[str, int] = defaultdict(int)
        for reason in self.pruned.values():
            by_reason[DOMINATED if reason.startswith(DOMINATED) else reason] += 1
        return {
            "candidate pairs": sum(len(v) for v in self.offers.values()),
            "pruned pairs": len(self.pruned),
            **{f"pruned: {k}": v for k, v in sorted(by_reason.items())},
            "demand cells": len(self.level),
            "segments per month": len(self.segments),
        }

    def unmet_reason(self, workload: str, site: str | None, month: int,
                     allowed: Callable[[Offer], bool] | None = None) -> str:
        """Why demand of `workload` at `site` in `month` cannot be (fully) served, by a
        plan that may buy only the offers `allowed` (None: any; a what-if policy's plan:
        its offers' lead time, not the policy, where it allows some in reach)."""
        s = self.scenario
        near = self._near(workload, site)
        if isinstance(near, str):
            return near
        offered = any(x[2] is not None for x in near)  # whatever the plan may buy
        if allowed is not None:
            near = [x for x in near if x[2] is None or allowed(x[2])]
            if not near:
                return UNMET_NOT_ALLOWED
        if self._spot_alone(workload, allowed):
            return UNMET_SPOT_ALONE
        ready = [x for x in near if self._ready(x, month)]
        if not ready:
            if any(x[2] is not None and x[2].first_month > month for x in near):
                return UNMET_LEAD_TIME
            # existing contracts alone, none running this month: why no offer serves it
            # (an outside audit read "lead time" where no offer had one)
            if offered:
                return UNMET_NOT_ALLOWED
            reason = self._sources_in_reach(workload, site, existing=False)
            return reason if isinstance(reason, str) else UNMET_LEAD_TIME
        w = s.workload_by_name[workload]
        if w.max_spot_share < 1.0 and all(_is_spot(x) for x in ready):
            # spot alone is ready here, and carries at most max_spot_share of what is
            # served: a source of another term not ready yet holds it back (an outside
            # audit read "capacity exhausted" beside an unlimited on-demand offer of
            # lead time 40 days); none serving the workload elsewhere this month, spot
            # serves none of it
            if any(x[2] is not None and not _is_spot(x) and x[2].first_month > month
                   for x in near):
                return UNMET_LEAD_TIME
            if not self._served_otherwise(workload, month, allowed):
                return UNMET_SPOT_ALONE
        # spot carries at most max_spot_share of what is served: unlimited spot alone
        # does not make serving unlimited
        unlimited = [x for x in ready if x[2] is not None and x[2].max_gpus is None]
        if any(x[2].term != "spot" or w.max_spot_share >= 1.0 for x in unlimited):
            return UNMET_PENALTY
        return UNMET_SPOT_SHARE if unlimited else UNMET_CAPACITY

    def _near(self, workload: str, site: str | None) -> str | list[tuple]:
        """`_sources_in_reach`, kept for each (workload, site): a plan may leave thousands
        of cells unmet, and each asks."""
        if (workload, site) not in self._reach:
            self._reach[(workload, site)] = self._sources_in_reach(workload, site)
        return self._reach[(workload, site)]

    def _ready(self, source: tuple, month: int) -> bool:
        """Whether a (region, GPU type, offer or None) source may serve in `month`: its
        offer's lead time past, or an existing contract active."""
        offer = source[2]
        if offer is not None:
            return offer.first_month <= month
        return any(e.active(month) for e in self.scenario.existing
                   if (e.region, e.gpu) == source[:2])

    def _served_otherwise(self, workload: str, month: int,
                          allowed: Callable[[Offer], bool] | None) -> bool:
        """Whether some demand of `workload` in `month` has a source other than spot in
        reach and ready (under `allowed`), beside which its spot may carry a share."""
        for (name, site) in self.regions_for_site:
            if name != workload or not any(
                    self.level.get((name, site, month, seg.index), 0.0) > 0
                    for seg in self.segments):
                continue
            near = self._near(name, site)
            if not isinstance(near, str) and any(
                    not _is_spot(x) and self._ready(x, month)
                    and (x[2] is None or allowed is None or allowed(x[2])) for x in near):
                return True
        return False

    def _spot_alone(self, workload: str, allowed: Callable[[Offer], bool] | None) -> bool:
        """Whether spot is all that `workload` could use from any of its sites (under
        `allowed`) while spot may carry only part of what is served (max_spot_share
        under 1): then it carries none (planner.model.space drops such sources)."""
        w = self.scenario.workload_by_name[workload]
        if w.max_spot_share >= 1.0:
            return False
        for (name, site) in self.regions_for_site:
            if name != workload:
                continue
            near = self._near(name, site)
            if not isinstance(near, str) and any(
                    x[2] is None or (x[2].term != "spot" and (allowed is None or allowed(x[2])))
                    for x in near):
                return False
        return True

    def _sources_in_reach(self, workload: str, site: str | None,
                          existing: bool = True) -> str | list[tuple]:
        """The (region, GPU type, offer or None for existing) sources `workload` may use
        at `site` in some month (existing contracts among them unless `existing` is
        false), or the reason there are none."""
        s = self.scenario
        w = s.workload_by_name[workload]
        gpus = {t.gpu for t in s.throughput if t.workload == workload}
        if not gpus:
            return UNMET_NO_GPU
        sources = [(o.region, o.gpu, o) for o in s.offers if o.gpu in gpus and _sells(o)]
        if not sources and any(o.gpu in gpus for o in s.offers):
            return UNMET_NO_CAPACITY  # (before existing contracts: no offer can sell)
        if existing:
            sources += [(e.region, e.gpu, None) for e in s.existing if e.gpu in gpus]
        if not sources:  # none sold anywhere: not a matter of jurisdictions
            return UNMET_NOT_SOLD
        allowed = [x for x in sources if _allowed(s, w, x[0])]
        if not allowed:
            return UNMET_JURISDICTION
        near = [x for x in allowed if self._within_slo(w, site, x[0])]
        if not near:  # (an audit: "within the SLO" had hidden the rule that bound too)
            return UNMET_LATENCY_JURISDICTION if any(
                self._within_slo(w, site, x[0]) for x in sources) else UNMET_LATENCY
        if w.allow_spot is False or w.max_spot_share <= 0:
            near = [x for x in near if x[2] is None or x[2].term != "spot"]
            if not near:  # (else every month read as "lead time")
                return UNMET_SPOT
        return near

    def _within_slo(self, w: Workload, site: str | None, region: str) -> bool:
        if w.latency_slo_ms is None or site is None:
            return True
        target = self.scenario.region_by_name[region].site
        return self.transit.latency(site, target) <= w.latency_slo_ms + EPS


def _sells(offer: Offer) -> bool:
    """Whether an offer can sell a GPU at all: max_gpus holds one instance (validate warns
    where it does not: no plan can use it)."""
    return offer.max_gpus is None or offer.max_gpus >= max(1, offer.gpus_per_instance)


def _is_spot(source: tuple) -> bool:
    """Whether a (region, GPU type, offer or None: an existing contract) source is spot."""
    return source[2] is not None and source[2].term == "spot"


def _allowed(scenario: Scenario, w: Workload, region: str) -> bool:
    if not w.residency:
        return True
    site = scenario.site_by_name[scenario.region_by_name[region].site]
    return site.jurisdiction in w.residency or site.country in w.residency


def find_candidates(scenario: Scenario, transit: Transit | None = None,
                    prune_dominated: bool = True, may_buy=None) -> Candidates:
    """The cells and offers a plan of `scenario` can ever use, with why the others
    cannot. `may_buy(offer)`: the offers a restricted plan may buy (what-if policies,
    comparison plans): only those prune others as dominating them."""
    s = scenario
    transit = transit or Transit(s)
    segments = make_segments(s)
    horizon = s.settings.horizon_months

    level: dict[tuple, float] = {}
    sites_of: dict[str, list[str | None]] = defaultdict(list)
    for d in s.demand:
        w = s.workload_by_name[d.workload]
        if d.site not in sites_of[d.workload]:
            sites_of[d.workload].append(d.site)
        for seg in segments:
            x = w.level(d.amount, seg.peak_for(w))
            if x > EPS:
                level[(d.workload, d.site, d.month, seg.index)] = x

    with_demand = {k[0] for k in level}
    gpus_of: dict[str, set[str]] = defaultdict(set)
    for t in s.throughput:
        gpus_of[t.workload].add(t.gpu)

    cands = Candidates(s, segments, transit, level, {}, {})
    for w in s.workloads:
        if w.workload not in with_demand:
            continue
        sites = sites_of[w.workload]
        for site in sites:
            cands.regions_for_site[(w.workload, site)] = [
                r.region for r in s.regions
                if _allowed(s, w, r.region) and cands._within_slo(w, site, r.region)
            ]
        reachable = {r for site in sites for r in cands.regions_for_site[(w.workload, site)]}
        usable = []
        for o in s.offers:
            if o.gpu not in gpus_of[w.workload]:
                reason = NO_THROUGHPUT
            elif not _allowed(s, w, o.region):
                reason = JURISDICTION
            elif o.region not in reachable:
                reason = LATENCY
            elif o.term == "spot" and (not w.allow_spot or w.max_spot_share <= 0):
                reason = SPOT
            elif o.first_month >= horizon:
                reason = LEAD_TIME
            elif not _sells(o):
                reason = NO_CAPACITY
            else:
                usable.append(o)
                continue
            cands.pruned[(w.workload, o.key)] = reason
        cands.offers[w.workload] = usable
    if prune_dominated:
        _prune_dominated(cands, may_buy or (lambda o: True))
    return cands


def _prune_dominated(cands: Candidates, may_buy) -> None:
    """Drop pay-as-you-go offers another offer beats for every workload of a pool.

    Offer o (region r) is dominated by an on-demand offer o' (region r') of the same GPU
    type when o' has no capacity limit, sells single GPUs (gpus_per_instance 1), costs no
    more per GPU-hour (ties broken by key), is usable no later, and for every workload of
    the pool that may use o: may use o' too,
    from every demand site that reaches r also reaches r', and pays no more egress per
    unit, and the plan may buy o' (`may_buy`: "on-demand from one provider only" may not
    buy another provider's cheaper offer). Moving o's replicas to o' one for one then
    never costs more, so no optimal plan needs o. Single-region workloads are left alone
    (moving part of them splits them).
    """
    s = cands.scenario
    members: dict[str, list[str]] = defaultdict(list)
    for w in s.workloads:
        if w.workload in cands.offers:
            members[w.pool_name].append(w.workload)
    egress = {r.region: r.egress_usd_per_gb for r in s.regions}
    for pool, names in members.items():
        if any(s.workload_by_name[w].single_region for w in names):
            continue
        usable = {w: {o.key for o in cands.offers[w]} for w in names}
        dropped: dict[str, set[str]] = defaultdict(set)
        reach = {w: _sites_reaching(cands, w) for w in names}
        by_gpu: dict[str, dict[str, Offer]] = defaultdict(dict)  # gpu -> key -> offer
        for w in names:
            for o in cands.offers[w]:
                if not o.is_commitment:
                    by_gpu[o.gpu].setdefault(o.key, o)
        for gpu, keyed in by_gpu.items():
            offers = list(keyed.values())
            # a winner sells single GPUs: whole instances do not move one for one
            winners = sorted((o for o in offers if o.term == "on_demand" and o.max_gpus is None
                              and o.gpus_per_instance == 1 and may_buy(o)),
                             key=lambda o: (o.usd_per_gpu_hour, o.key))
            for o in offers:
                users = [w for w in names if o.key in usable[w]]
                for b in winners:
                    if (b.usd_per_gpu_hour, b.key) >= (o.usd_per_gpu_hour, o.key):
                        break
                    if b.first_month > o.first_month:
                        continue
                    if all(b.key in usable[w]
                           and reach[w].get(o.region, set()) <= reach[w].get(b.region, set())
                           and (s.workload_by_name[w].egress_gb_per_unit_hour == 0
                                or egress[b.region] <= egress[o.region])
                           for w in users):
                        for w in users:
                            cands.pruned[(w, o.key)] = f"{DOMINATED} {b.key}"
                            dropped[w].add(o.key)
                        break
        for w in names:  # once per workload: filtering per dropped offer is quadratic
            if dropped[w]:
                cands.offers[w] = [x for x in cands.offers[w] if x.key not in dropped[w]]


def _sites_reaching(cands: Candidates, workload: str) -> dict[str, set]:
    """region → the demand sites of `workload` that may be served from it."""
    out: dict[str, set] = defaultdict(set)
    for (w, site), regions in cands.regions_for_site.items():
        if w == workload:
            for r in regions:
                out[r].add(site)
    return out
