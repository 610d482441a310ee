"""The model as independent blocks, laid out in arrays.

The model (planner.model.builder) links workloads only through capacity: the GPUs of a capped
pay-as-you-go offer in a month and segment, and the committed GPUs of a region and GPU
type. Price those rows instead of enforcing them and it falls apart into one small
problem per workload, month and segment — which sources serve each demand site — or per
workload over the whole horizon when it must stay in one region and on one GPU type.
The commitments are left with the capacity rows: they are few and they link months.

Everything here is computed once per solve from the model builder's index (its sources,
levels and bounds), so a block and the full model agree on every coefficient.

Units: a source's cost per unit of demand served for one segment is
    price · GPUs per unit · hours · discount + egress per unit-hour · hours · discount,
GPUs per unit being 1 / (units_per_gpu · (1 − interruption rate for spot)), and a
capacity row's price (its Lagrange multiplier, y ≥ 0) is in dollars per GPU.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from planner.model.builder import COMMITTED, ModelBuilder
from planner.model.costs import counted_per_gpu


@dataclass
class WorkloadBlocks:
    """One workload's sources and demand, as arrays (J sources, S sites, M months, K
    segments). Its blocks are its (month, segment) pairs with demand, or the whole
    horizon when it is single-region."""

    name: str
    pool: str
    single_region: bool
    spot_share: float  # max_spot_share (≥ 1: no limit)
    penalty: float  # dollars per unit-hour left unmet
    sources: list  # (region, gpu, src): src a pay-as-you-go offer key or COMMITTED
    first: np.ndarray  # [J] first month a source may serve
    gpus_per_unit: np.ndarray  # [J]
    gpus_per_replica: np.ndarray  # [J]
    price: np.ndarray  # [J] dollars per GPU-hour (committed GPUs: 0, paid by commitments)
    spot: np.ndarray  # [J] bool
    payg_row: np.ndarray  # [J] the capped offer's capacity row, or −1
    committed_row: np.ndarray  # [J] the (region, GPU type)'s committed row, or −1
    egress: np.ndarray  # [J] dollars per unit-hour
    sites: list
    reach: np.ndarray  # [S, J] bool: the source's region is within the site's SLO
    level: np.ndarray  # [S, M, K] units of demand
    # single-region workloads: the (region, GPU type) choices, and their sources' ranges
    pairs: list = field(default_factory=list)
    pair_start: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # [S, J] bool: arcs the master may need: in reach and not dominated (`_arcs`)
    arcs: np.ndarray = None
    index_of: dict = field(default_factory=dict)  # source → its index j
    # [J, M, K] or None: the bound's blocks only — the share of one replica that the pool's
    # whole demand in reach of each source fills, where under 1 (1 elsewhere; None: under
    # 1 nowhere). planner.solve.decompose.replicas
    fill: np.ndarray | None = None

    @property
    def limited_spot(self) -> bool:
        return self.spot_share < 1.0 - 1e-12 and bool(self.spot.any())

    def gpus(self, source, month, segment) -> np.ndarray:
        """The GPUs a unit served from `source` in (month, segment) counts for in the
        relaxation, in its cost and in its capacity row: its own (`gpus_per_unit`), or
        1/fill times them where the pool's demand fills less than one replica there (that
        replica is whole all the same)."""
        gpus = self.gpus_per_unit[source]
        return gpus if self.fill is None else gpus / self.fill[source, month, segment]


@dataclass
class Commitments:
    """Every commitment the model may sign: offer o from start month t (arrays of N)."""

    offer: list  # offer keys, one per variable
    start: np.ndarray  # [N] start month
    months: np.ndarray  # [N] commit_months
    committed_row: np.ndarray  # [N] the (region, GPU type) it adds GPUs to
    cost: np.ndarray  # [N] counted cost per GPU (tail policy, discounting)
    lower: np.ndarray  # [N] GPUs already decided (a stress test's fixed commitments)
    upper: np.ndarray  # [N] most GPUs worth committing (the model's bound)
    min_gpus: np.ndarray  # [N]
    cap_row: np.ndarray  # [N] the offer's row among capped commitment offers, or −1
    caps: np.ndarray  # [C] max_gpus of each capped commitment offer
    step: np.ndarray  # [N] GPUs signed at a time: the offer's gpus_per_instance

    def active(self, month: int) -> np.ndarray:
        """Indexes of the commitments whose GPUs are there in `month`."""
        return np.flatnonzero((self.start <= month) & (month < self.start + self.months))

    def active_months(self, months: int, among: np.ndarray | None = None) -> np.ndarray:
        """[N, months] bool: commitment n (of `among`, default every one) has its GPUs
        there in month m."""
        among = slice(None) if among is None else among
        m = np.arange(months)[None, :]
        start, end = self.start[among, None], (self.start + self.months)[among, None]
        return (start <= m) & (m < end)

    def cap_rows(self, months: int, among: np.ndarray | None = None):
        """The rows "Σ active commitments of a capped offer ≤ max_gpus", one per capped
        offer and month with a commitment active, offer by offer: (max_gpus, positions
        in `among` (default: every commitment) of the commitments active then)."""
        among = np.arange(len(self.offer)) if among is None else among
        active = self.active_months(months, among)
        cap_row = self.cap_row[among]
        for c in np.unique(cap_row[cap_row >= 0]).tolist():
            of = np.flatnonzero(cap_row == c)
            for month in range(months):
                on = of[active[of, month]]
                if len(on):
                    yield float(self.caps[c]), on


class Blocks:
    """The decomposed model of one solve: workloads, capacity rows, commitments."""

    def __init__(self, builder: ModelBuilder):
        b = builder
        self.builder = builder
        self.cells = builder.cell_count  # supply cells: what the steps' work is reckoned by
        self.months = b.settings.horizon_months
        self.segments = len(b.hours)
        discount = np.array([b.settings.discount(m) for m in range(self.months)])
        # hours of each segment, discounted: what one unit-hour rate costs per segment
        self.hd = discount[:, None] * np.array(b.hours)[None, :]
        # sunk cost of existing contracts and the unservable demand's penalty, as the model
        self.constant = b.existing_usd + b.out_of_model_usd

        # capacity rows: capped pay-as-you-go offers, committed (region, GPU type)
        self.payg_offers: list[str] = []
        payg_index: dict[str, int] = {}
        self.committed_pairs: list[tuple[str, str]] = []
        committed_index: dict[tuple[str, str], int] = {}
        for w in sorted(b.sources):
            for (r, g, src) in b.sources[w]:
                if src == COMMITTED:
                    committed_index.setdefault((r, g), len(committed_index))
                elif b.payg_offer[src].max_gpus is not None:
                    payg_index.setdefault(src, len(payg_index))
        self.payg_offers = list(payg_index)
        self.committed_pairs = list(committed_index)
        self.payg_index, self.committed_index = payg_index, committed_index
        # whole instances (SPEC §2 v2): no more than max_gpus paid, so at most the whole
        # instances within it in use (the model's bound, and the plan's room)
        self.payg_cap = np.array([b.payg_offer[o].max_gpus // b.payg_offer[o].gpus_per_instance
                                  * b.payg_offer[o].gpus_per_instance
                                  for o in self.payg_offers], dtype=float)
        # pay-as-you-go offers sold in instances of n > 1 GPUs, capped or not: the plan
        # pays each month and segment's GPUs in use rounded up to whole instances
        self.instance_offers = sorted({src for w in b.sources for (_, _, src) in b.sources[w]
                                       if src != COMMITTED
                                       and b.payg_offer[src].gpus_per_instance > 1})
        self.instance_index = {o: i for i, o in enumerate(self.instance_offers)}
        self.instance_size = np.array([b.payg_offer[o].gpus_per_instance
                                       for o in self.instance_offers], dtype=float)
        self.instance_rate = np.array([b.payg_offer[o].usd_per_gpu_hour
                                       for o in self.instance_offers])
        self.existing = np.zeros((len(self.committed_pairs), self.months))
        for (r, g, m), gpus in b.existing_gpus.items():
            if (r, g) in committed_index and m < self.months:
                self.existing[committed_index[(r, g)], m] += gpus

        self.workloads: list[WorkloadBlocks] = []
        levels: dict[str, list] = defaultdict(list)  # workload → its ((site, m, k), units)
        for (w, site, m, k), x in b.level.items():
            levels[w].append(((site, m, k), x))
        for w in sorted(b.demand_of):
            if w in b.sources:
                self.workloads.append(self._workload(w, payg_index, committed_index,
                                                     levels[w]))
        self.commitments = self._commitments(committed_index)

    @property
    def single_region_pairs(self) -> int:
        """The single-region workloads' (region, GPU type) choices, summed: each is
        priced as a plan over the horizon (what a round's pricing is reckoned by)."""
        return sum(len(wb.pairs) for wb in self.workloads if wb.single_region)

    # -- workloads ---------------------------------------------------------------------------
    def _workload(self, w: str, payg_index, committed_index, levels: list) -> WorkloadBlocks:
        b = self.builder
        s = b.s
        wl = s.workload_by_name[w]
        pool = wl.pool_name
        sources = list(b.sources[w])
        tp = s.throughput_by_pair
        n = len(sources)
        first = np.array([b.sources[w][x] for x in sources], dtype=np.int64)
        gpus_per_unit = np.empty(n)
        gpr = np.empty(n, dtype=np.int64)
        price = np.zeros(n)
        spot = np.zeros(n, dtype=bool)
        payg_row = np.full(n, -1, dtype=np.int64)
        committed_row = np.full(n, -1, dtype=np.int64)
        egress = np.empty(n)
        for j, (r, g, src) in enumerate(sources):
            t = tp[(w, g)]
            if src == COMMITTED:
                derate = 1.0
                committed_row[j] = committed_index[(r, g)]
            else:
                o = b.payg_offer[src]
                derate = o.derate
                price[j] = o.usd_per_gpu_hour
                spot[j] = o.term == "spot"
                payg_row[j] = payg_index.get(src, -1)
            gpus_per_unit[j] = 1.0 / (t.units_per_gpu * derate)
            gpr[j] = b.gpus_per_replica[(pool, g)]
            egress[j] = wl.egress_gb_per_unit_hour * s.region_by_name[r].egress_usd_per_gb
        sites = list(b.sites_of[w])
        reach = np.zeros((len(sites), n), dtype=bool)
        for i, site in enumerate(sites):
            near = set(b.c.regions_for_site.get((w, site), ()))
            reach[i] = [r in near for (r, _, _) in sources]
        level = np.zeros((len(sites), self.months, self.segments))
        site_index = {site: i for i, site in enumerate(sites)}
        for (site, m, k), x in levels:
            level[site_index[site], m, k] = x
        blocks = WorkloadBlocks(
            name=w, pool=pool, single_region=wl.single_region,
            spot_share=wl.max_spot_share, penalty=wl.unmet_penalty_usd_per_unit_hour,
            sources=sources, first=first, gpus_per_unit=gpus_per_unit, gpus_per_replica=gpr,
            price=price, spot=spot, payg_row=payg_row, committed_row=committed_row,
            egress=egress, sites=sites, reach=reach, level=level)
        blocks.arcs = _arcs(blocks)
        blocks.index_of = {x: j for j, x in enumerate(sources)}
        if wl.single_region:
            # sources come sorted by (region, GPU type, src): each choice is a range
            pairs, starts = [], []
            for j, (r, g, _) in enumerate(sources):
                if not pairs or pairs[-1] != (r, g):
                    pairs.append((r, g))
                    starts.append(j)
            blocks.pairs = pairs
            blocks.pair_start = np.array(starts, dtype=np.int64)
        return blocks

    # -- commitments -------------------------------------------------------------------------
    def _commitments(self, committed_index) -> Commitments:
        """The model's commitment variables (`ModelBuilder.add_commitments`): offers at a
        (region, GPU type) whose committed GPUs some workload may use, every start month
        from the lead time on, at most the GPUs the busiest segment there needs (or the
        offer's minimum) and max_gpus. A stress test's fixed commitments are exactly
        those; the ones no workload can use are paid all the same (`self.constant`)."""
        b = self.builder
        st = b.settings
        fixed = b.restrictions.fixed_commitments
        offer, start, months, row, cost, lower, upper, least, cap_row, step = (
            [] for _ in range(10))
        caps: list[float] = []
        cap_of: dict[str, int] = {}
        for (r, g) in sorted(b.committed_used):
            for o in b.commit_offers.get((r, g), []):
                up = max(math.ceil(b.busiest.get((r, g), 0.0) - 1e-9), o.min_gpus)
                n = o.gpus_per_instance  # whole instances, as the model's bound
                up = -(-up // n) * n
                if o.max_gpus is not None:
                    up = min(up, o.max_gpus // n * n)
                if up <= 0 and fixed is None:
                    continue
                if o.max_gpus is not None and o.key not in cap_of:
                    cap_of[o.key] = len(caps)
                    caps.append(float(o.max_gpus // n * n))
                for t in range(o.first_month, self.months):
                    if fixed is not None and (o.key, t) not in fixed:
                        continue
                    payments, upfront = counted_per_gpu(o, t, st, discounted=True)
                    offer.append(o.key)
                    start.append(t)
                    months.append(o.commit_months)
                    row.append(committed_index[(r, g)])
                    cost.append(payments + upfront)
                    q = None if fixed is None else fixed[(o.key, t)]
                    lower.append(0 if q is None else q)
                    upper.append(up if q is None else q)
                    least.append(o.min_gpus)
                    cap_row.append(cap_of.get(o.key, -1))
                    step.append(n)
        for (key, t), q in sorted((fixed or {}).items()):
            if (key, t) not in set(zip(offer, start)):  # signed, of no use to this variant
                payments, upfront = counted_per_gpu(b.s.offer_by_key[key], t, st, True)
                self.constant += q * (payments + upfront)
        return Commitments(
            offer=offer, start=np.array(start, dtype=np.int64),
            months=np.array(months, dtype=np.int64),
            committed_row=np.array(row, dtype=np.int64), cost=np.array(cost),
            lower=np.array(lower, dtype=float), upper=np.array(upper, dtype=float),
            min_gpus=np.array(least, dtype=float),
            cap_row=np.array(cap_row, dtype=np.int64), caps=np.array(caps),
            step=np.array(step, dtype=float))


def _arcs(wb: WorkloadBlocks) -> np.ndarray:
    """[S, J] the arcs the LP relaxation may need. A pay-as-you-go arc costs at least its
    price and egress per unit at any capacity prices; an uncapped on-demand (not spot)
    arc in reach that costs no more per unit and is usable no later serves the same units
    with no capacity row and no spot share, so an optimal LP never needs the dearer one
    (ties: the first source stays). Committed arcs are never dropped: what they cost
    depends on commitments, not on a price per unit."""
    per_unit = wb.price * wb.gpus_per_unit + wb.egress
    payg = wb.committed_row < 0
    free = payg & (wb.payg_row < 0) & ~wb.spot  # uncapped on-demand
    out = wb.reach.copy()
    if wb.single_region or not free.any():
        return out
    index = np.arange(len(per_unit))
    for s in range(wb.reach.shape[0]):
        d = np.flatnonzero(wb.reach[s] & free)
        if not len(d):
            continue
        # better[i, j]: dominator d[i] serves a unit of j no dearer, no later (ties: the
        # first source stays)
        better = ((per_unit[d][:, None] < per_unit[None, :])
                  | ((per_unit[d][:, None] == per_unit[None, :])
                     & (d[:, None] < index[None, :])))
        better &= (wb.first[d][:, None] <= wb.first[None, :]) & (d[:, None] != index[None, :])
        out[s] &= ~(better.any(axis=0) & payg)
    return out
