"""What the model ranges over, computed once from every candidate: the sources each
workload may use and from which month, the demand it serves (servable and unservable),
and every variable's bound — without listing the cells (tens of millions at enterprise
scale). Both the PuLP model (planner.model.builder) and the decomposition
(planner.solve.decompose.blocks) read it.

Index names as in planner.model.builder: w workload, p pool, r region, g GPU type,
src a source at (r, g) (a pay-as-you-go offer's key, or COMMITTED), month, k segment.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from planner.io.scenario import Offer, Scenario
from planner.model.candidates import Candidates

COMMITTED = "committed"


@dataclass(frozen=True)
class Restrictions:
    """Limits a variant puts on the plan (what-if policies, baselines, stress tests).

    terms: allowed term → longest commit_months (None: any length); None allows all.
    gpu_of: workload → the only GPU type it may use.
    fixed_commitments: (offer key, start month) → GPUs; when given, exactly these
        commitments are signed and no others (a stress test of a signed plan).
    providers: the only providers whose offers may be bought (existing contracts stay).
    """

    terms: dict[str, int | None] | None = None
    gpu_of: dict[str, str] | None = None
    fixed_commitments: dict[tuple[str, int], int] | None = None
    providers: frozenset[str] | None = None

    def allows(self, scenario: Scenario, o: Offer) -> bool:
        """Whether a plan within these limits may buy offer `o`."""
        providers = self.providers
        if providers is not None and scenario.region_by_name[o.region].provider \
                not in providers:
            return False
        fixed = self.fixed_commitments
        if fixed is not None and o.is_commitment:
            return any(key == o.key for key, _ in fixed)
        if self.terms is None:
            return True
        if o.term not in self.terms:
            return False
        longest = self.terms[o.term]
        return longest is None or o.commit_months <= longest


class ModelSpace:
    """Sources, demand levels and bounds of one scenario within its restrictions."""

    def __init__(self, scenario: Scenario, candidates: Candidates,
                 restrictions: Restrictions | None = None):
        self.s = scenario
        self.c = candidates
        self.settings = scenario.settings
        self.restrictions = restrictions or Restrictions()
        self.hours = [seg.share * scenario.settings.hours_per_month
                      for seg in candidates.segments]
        self._sources()
        self._levels()
        self._bounds()

    @property
    def scenario(self):
        return self.s

    @property
    def candidates(self):
        return self.c

    def _offer_allowed(self, o: Offer) -> bool:
        return self.restrictions.allows(self.s, o)

    def per_replica(self, w: str, g: str, src: str) -> float:
        """Units one replica of `w` on `g` delivers from `src` (spot: derated)."""
        t = self.s.throughput_by_pair[(w, g)]
        derate = self.payg_offer[src].derate if src != COMMITTED else 1.0
        return t.units_per_gpu * t.gpus_per_replica * derate

    def supply_cost(self, w: str, r: str, month: int, k: int) -> float:
        """Objective coefficient of one unit of `w` served from `r` for a segment: egress."""
        rate = self.s.workload_by_name[w].egress_gb_per_unit_hour * \
            self.s.region_by_name[r].egress_usd_per_gb
        return rate * self.hours[k] * self.settings.discount(month)

    def replica_cost(self, p: str, g: str, src: str, month: int, k: int) -> float:
        """Objective coefficient of one pay-as-you-go replica for a segment (committed: 0)."""
        if src == COMMITTED:
            return 0.0
        return (self.gpus_per_replica[(p, g)] * self.hours[k]
                * self.payg_offer[src].usd_per_gpu_hour * self.settings.discount(month))

    def cells(self):
        """Every supply cell of the full model: (w, r, g, src, month, k), in build order."""
        for (w, month, k) in self.demand_cells:
            for (r, g, src), first in self.sources.get(w, {}).items():
                if first <= month:
                    yield (w, r, g, src, month, k)

    def cells_of(self, w: str, sources) -> list[tuple]:
        """The supply cells of workload `w` from `sources` ((r, g, src) keys)."""
        usable = self.sources.get(w, {})
        return [(w, *x, month, k) for x in sources for (month, k) in self.demand_of[w]
                if usable[x] <= month]

    def in_build_order(self, cells) -> list[tuple]:
        """`cells` sorted as `cells()` yields them, so a build is the same on every run
        (a set's order of strings changes from one process to the next)."""
        rank = self.source_rank
        return sorted(cells, key=lambda c: (c[4], c[5], c[0], rank[c[0]][c[1:4]]))

    def replica_bound(self, key: tuple) -> int:
        """The most replicas pool p can use in a cell: what its whole load there needs."""
        p, r, g, src, month, k = key
        need = 0.0
        for w in self.members[p]:
            first = self.sources.get(w, {}).get((r, g, src))
            if first is not None and first <= month and (w, month, k) in self.total_level:
                need += self.total_level[(w, month, k)] / self.per_replica(w, g, src)
        return max(math.ceil(need - 1e-9), 0)

    # -- what every build shares -----------------------------------------------------------
    def _sources(self):
        """GPU sources per workload: (region, gpu, src) → first month it can be used."""
        s = self.s
        tp = s.throughput_by_pair
        self.payg_offer: dict[str, Offer] = {}
        self.commit_offers: dict[tuple[str, str], list[Offer]] = defaultdict(list)
        self.sources: dict[str, dict[tuple[str, str, str], int]] = {}
        # GPUs of existing contracts per (region, gpu, month)
        self.existing_gpus: dict[tuple, int] = defaultdict(int)
        for e in s.existing:
            for month in self.settings.months:
                if e.active(month):
                    self.existing_gpus[(e.region, e.gpu, month)] += e.gpus
        # the existing contracts' cost inside the horizon: sunk, a constant of the objective
        self.existing_usd = sum(
            e.gpus * self.settings.hours_per_month * e.usd_per_gpu_hour
            * self.settings.discount(month)
            for e in s.existing for month in self.settings.months if e.active(month))
        existing_start: dict[tuple[str, str], int] = {}
        for e in s.existing:
            if e.gpus > 0 and e.end >= 0 and e.start < self.settings.horizon_months:
                rg = (e.region, e.gpu)
                existing_start[rg] = min(existing_start.get(rg, 10**9), max(e.start, 0))
        for w in s.workloads:
            if w.workload not in self.c.offers:
                continue
            found: dict[tuple[str, str, str], int] = {}
            only = (self.restrictions.gpu_of or {}).get(w.workload)
            for o in self.c.offers[w.workload]:
                if not self._offer_allowed(o) or (only is not None and o.gpu != only):
                    continue
                if o.is_commitment:
                    key = (o.region, o.gpu, COMMITTED)
                    if o not in self.commit_offers[(o.region, o.gpu)]:
                        self.commit_offers[(o.region, o.gpu)].append(o)
                else:
                    key = (o.region, o.gpu, o.key)
                    self.payg_offer[o.key] = o
                found[key] = min(found.get(key, 10**9), o.first_month)
            # existing contracts are committed GPUs even where no offer is listed
            reachable = {r for (ww, _), rs in self.c.regions_for_site.items()
                         if ww == w.workload for r in rs}
            for (region, gpu), start in existing_start.items():
                if only is not None and gpu != only:
                    continue
                if (w.workload, gpu) in tp and region in reachable:
                    key = (region, gpu, COMMITTED)
                    found[key] = min(found.get(key, 10**9), start)
            if w.max_spot_share < 1.0 and not any(
                    src == COMMITTED or self.payg_offer[src].term != "spot"
                    for (_, _, src) in found):
                # spot carries at most max_spot_share (< 1) of what is served: with
                # nothing else to serve beside it, it serves none (an outside audit:
                # such demand had been left in the gap as "capacity exhausted")
                found = {}
            self.sources[w.workload] = dict(sorted(found.items()))

    def _existing_active(self, w: str, near, month: int) -> bool:
        """Whether an existing contract `w` may use in a region of `near` runs in
        `month`."""
        return any(src == COMMITTED and r in near
                   and self.existing_gpus.get((r, g, month), 0) > 0
                   for (r, g, src) in self.sources.get(w, {}))

    def _levels(self):
        """Demand the model serves, per site and in total per (workload, month, segment).

        Demand no source can serve is taken out of the model and left unmet at its
        penalty (a constant of the objective, `out_of_model_usd`): none within its latency
        SLO and allowed jurisdictions (nor a GPU type, a term or provider the variant
        allows) in any month, none usable yet that month (lead time), and demand beyond
        what every source in reach could deliver at its max_gpus. Of these, the first —
        no source at all, in any month (`never`: also where every offer in reach starts
        past the horizon, which no plan can change) — is unservable (SPEC §4 v2):
        `unservable_usd`, left out of the gap; demand a lead time holds back in some
        months only, or the capacity, stays in the gap (a source within reach serves
        the workload in the horizon)."""
        reach = {key: set(regions) for key, regions in self.c.regions_for_site.items()}
        first_in: dict[tuple, int] = {}  # (workload, site) -> first month a source serves
        offered: set[tuple] = set()  # (workload, site) with an offer in reach
        for (w, site), near in reach.items():
            months = [f for (r, _, _), f in self.sources.get(w, {}).items() if r in near]
            first_in[(w, site)] = min(months, default=10**9)
            if any(r in near and (src != COMMITTED or self.commit_offers.get((r, g)))
                   for (r, g, src) in self.sources.get(w, {})):
                offered.add((w, site))
        self.level: dict[tuple, float] = {}
        self.out_of_model: dict[tuple, float] = {}  # cell -> units left out, unmet
        self.beyond_capacity: set[tuple] = set()  # out of the model for want of capacity
        self.never: set[tuple] = set()  # cells with no source in reach in any month
        self.out_of_model_usd = self.unservable_usd = 0.0
        capacity = _ReachCapacity(self, reach)
        for (w, site, month, k), x in self.c.level.items():
            out = x
            if month >= first_in.get((w, site), 10**9):
                # beyond what every source in reach could deliver, demand is certainly
                # unmet: out of the model too, so one mistyped amount cannot swamp it
                most = capacity.units(w, site, month)
                out = max(0.0, x - most)
                if x - out > 0:
                    self.level[(w, site, month, k)] = x - out
                if out > 0:
                    self.beyond_capacity.add((w, site, month, k))
            if out > 0:
                self.out_of_model[(w, site, month, k)] = out
                usd = (out * self.s.workload_by_name[w].unmet_penalty_usd_per_unit_hour
                       * self.hours[k] * self.settings.discount(month))
                self.out_of_model_usd += usd
                if first_in.get((w, site), 10**9) >= 10**9 or (
                        (w, site) not in offered
                        and not self._existing_active(w, reach.get((w, site), ()), month)):
                    # no source in any month; or no offer, only existing contracts, none
                    # of them running this month (an outside audit: such months had been
                    # "lead time" and "capacity exhausted", in the gap)
                    self.never.add((w, site, month, k))
                    self.unservable_usd += usd
        sites_of: dict[str, list] = defaultdict(list)
        for (w, site, _, _) in self.level:
            if site not in sites_of[w]:
                sites_of[w].append(site)
        self.sites_of = sites_of
        total: dict[tuple[str, int, int], float] = defaultdict(float)
        for (w, site, month, k), x in self.level.items():
            total[(w, month, k)] += x
        self.total_level = dict(total)
        self.demand_cells = sorted(self.total_level, key=lambda x: (x[1], x[2], x[0]))
        self.demand_of: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for (w, month, k) in self.demand_cells:
            self.demand_of[w].append((month, k))
        self.members: dict[str, list[str]] = defaultdict(list)  # pool → its workloads
        for w in sorted(self.s.workloads, key=lambda w: w.workload):
            self.members[w.pool_name].append(w.workload)
        # a pool's workloads have the same GPUs per replica on a GPU type (SPEC)
        pool_of = {w.workload: w.pool_name for w in self.s.workloads}
        self.gpus_per_replica: dict[tuple[str, str], int] = {
            (pool_of[t.workload], t.gpu): t.gpus_per_replica for t in self.s.throughput}
        self.source_rank = {w: {x: i for i, x in enumerate(sources)}
                            for w, sources in self.sources.items()}

    def _bounds(self):
        """What bounds every build needs, from every candidate cell without listing them
        (tens of millions at enterprise scale): how many cells the full model has, the
        (r, g) whose committed GPUs some cell may use, and `busiest[(r, g)]`, the GPUs the
        whole demand that may use (r, g)'s committed GPUs needs in its busiest segment —
        no more are worth committing there. A cell's replica bound is `replica_bound`."""
        horizon, segments = self.settings.horizon_months, len(self.hours)
        level: dict[str, np.ndarray] = {}
        for w, cells in self.demand_of.items():
            level[w] = np.zeros((horizon, segments))
            for (month, k) in cells:
                level[w][month, k] = self.total_level[(w, month, k)]
        self.cell_count = 0
        self.cells_per_workload: dict[str, int] = defaultdict(int)
        self.committed_used: set[tuple[str, str]] = set()
        per_cell: dict[tuple[str, str], np.ndarray] = {}
        for p, members in self.members.items():
            need: dict[tuple[str, str], np.ndarray] = {}
            for w in members:
                months = np.array([month for month, _ in self.demand_of.get(w, [])])
                for (r, g, src), first in self.sources.get(w, {}).items():
                    usable = int((months >= first).sum())
                    self.cell_count += usable
                    self.cells_per_workload[w] += usable
                    if src != COMMITTED or usable == 0:
                        continue
                    self.committed_used.add((r, g))
                    if (r, g) not in need:
                        need[(r, g)] = np.zeros((horizon, segments))
                    need[(r, g)][first:] += level[w][first:] / self.per_replica(w, g, src)
            for (r, g), x in need.items():
                gpus = np.maximum(np.ceil(x - 1e-9), 0) * self.gpus_per_replica[(p, g)]
                if (r, g) in per_cell:
                    per_cell[(r, g)] += gpus
                else:
                    per_cell[(r, g)] = gpus
        self.busiest: dict[tuple[str, str], float] = {
            rg: float(x.max()) for rg, x in per_cell.items()}



class _ReachCapacity:
    """The most units per hour of a workload that every source in reach of a demand
    site could deliver in a month, at every offer's max_gpus (inf: some source is
    unlimited) — an upper bound, whatever else the sources serve."""

    def __init__(self, space: ModelSpace, reach: dict[tuple, set]):
        self.space, self.reach = space, reach
        self.sources: dict[tuple, tuple[int, list]] = {}

    def _of(self, w: str, site) -> tuple[int, list]:
        """(first month an unlimited source serves, [(first month, src, r, g, units per
        GPU)] of the limited ones)."""
        key = (w, site)
        if key not in self.sources:
            sp = self.space
            near = self.reach.get(key, set())
            unlimited, limited = 10**9, []
            for (r, g, src), first in sp.sources.get(w, {}).items():
                if r not in near:
                    continue
                per_gpu = sp.s.throughput_by_pair[(w, g)].units_per_gpu
                if src == COMMITTED:
                    offers = sp.commit_offers.get((r, g), [])
                    if any(o.max_gpus is None for o in offers):
                        unlimited = min(unlimited, min(o.first_month for o in offers
                                                       if o.max_gpus is None))
                    limited.append((first, src, r, g, per_gpu))
                else:
                    o = sp.payg_offer[src]
                    if o.max_gpus is None:
                        unlimited = min(unlimited, first)
                    else:
                        limited.append((first, src, r, g, per_gpu * o.derate))
            self.sources[key] = (unlimited, limited)
        return self.sources[key]

    def units(self, w: str, site, month: int) -> float:
        unlimited, limited = self._of(w, site)
        if month >= unlimited:
            return math.inf
        sp = self.space
        total = 0.0
        for first, src, r, g, per_gpu in limited:
            if first > month:
                continue
            if src == COMMITTED:
                gpus = sp.existing_gpus.get((r, g, month), 0) + sum(
                    o.max_gpus for o in sp.commit_offers.get((r, g), [])
                    if o.max_gpus is not None and o.first_month <= month)
            else:
                gpus = sp.payg_offer[src].max_gpus
            total += gpus * per_gpu
        return total
