"""Column generation: the LP relaxation over the few supply cells an optimal plan uses.

The full model has a supply column (and a pool's replica column) for every workload,
source, month and segment a candidate allows: millions at enterprise scale, of which an
optimal plan uses a few per demand cell. So we build a restricted model over a start set
of cells (the cheapest sources per demand site), solve its LP relaxation, and price every
cell left out with the LP's duals; cells that would lower the cost join, and the model is
built again, until none would. Then the restricted LP's optimum is the full LP's optimum,
a valid lower bound for every plan, and the MIP runs on the restricted model only.

Pricing a cell that is not built (the dual algebra, minimisation, HiGHS's signs: a row's
dual y enters a column's reduced cost as c − a·y):

* its supply column x sits in the demand row of its site (dual π) or, for workloads with
  several sites, in the flow balance of its region (dual φ; a region without one gets
  φ = max π over the sites it reaches, which makes the new flows' reduced costs ≥ 0);
* in the spot-share row of (w, m, k) if there is one (a new one gets dual 0);
* in its pool's replica row (dual ρ; a new row gets the ρ that makes the new replica
  column's reduced cost 0: c_y − gpus · y_capacity, capacity being the offer's max_gpus row
  or the committed capacity of (r, g) in that month and segment);
* single-region workloads join by whole (workload, region, GPU type) groups: a group's
  choice column prices at ψ' − Σ_mk level_mk · max(0, −min_src rc_x), ψ' the dual of
  "one choice" (the new single-region rows take the least dual that keeps every x ≥ 0).

When time runs out before no cell prices out, the bound is Lagrangian: the restricted LP
plus, per demand cell, its level × the least reduced cost of a cell left out (their supply
together never exceeds the level), and per single-region workload the least reduced cost
of a group left out; or, where higher (early rounds), the price bound: every unit served
by its cheapest source in reach, ignoring capacity and whole replicas.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from planner.costs import counted_per_gpu, months_inside
from planner.highs import IncrementalLP
from planner.model import COMMITTED, ModelBuilder, PlanningModel

START_SOURCES = 2  # cheapest sources per (site, kind of source) or single-region workload
ADD_PER_CELL = 3  # most negative cells joining per (workload, month, segment) and round
COVER = 2.0  # per kind of source, the start set could carry this many times a site's peak
# Cells above which the start set is taken again with one source per kind and cover 1: its
# first LP at 200x40x24 took 142 s over 531 k cells (benchmarks/README.md)
START_BUDGET = 150_000
TOLERANCE = 1e-6  # relative: reduced costs above −TOLERANCE · price do not count


@dataclass
class Generated:
    model: PlanningModel  # the restricted model, its variables at the LP optimum
    lp_objective: float  # the restricted LP's optimum
    bound: float  # a valid lower bound on the full model (= lp_objective when converged)
    converged: bool
    rounds: int
    cells: int  # supply cells built
    all_cells: int  # supply cells of the full model


def generate_columns(builder: ModelBuilder, time_limit: float, threads: int | None = 1,
                     progress=None, stop_gap: float = 0.0,
                     max_rounds: int | None = None,
                     start: PlanningModel | None = None,
                     pricing: Pricing | None = None) -> Generated | None:
    """Column generation on `builder`'s model, within `time_limit` seconds;
    `progress(round, cells, lp value, bound)` hears of each round. Stops early once the
    Lagrangian bound is within `stop_gap` (relative) of the restricted LP, or after
    `max_rounds`. When a later round's LP does not finish in time, the last round's
    solution stands. None when the first LP fails or does not finish in time. `start`:
    the model over `start_cells`, built by a caller that keeps it (grown in place);
    `pricing`: the caller's `Pricing(builder)`, if it has one."""
    deadline = time.perf_counter() + time_limit
    lp = IncrementalLP(time_limit, threads)
    pricing = pricing or Pricing(builder)
    model = start if start is not None else builder.build(start_cells(pricing))
    floor = pricing.price_bound(model.prob.objective.constant)
    growth = None
    rounds = 0
    last = None  # the last round's LP value and bound
    while True:
        rounds += 1
        started = time.perf_counter()
        value = lp.solve(model.prob, growth)
        took = time.perf_counter() - started
        if value is None:
            if last is None:
                return None
            # out of time: the last round's LP solution stands (new columns at zero)
            for v in growth.variables:
                v.varValue = 0.0
            return _generated(model, lp, builder, *last, False, rounds - 1)
        new_cells, new_groups, below = pricing.price(model)
        bound = max(value + below, floor)
        if progress is not None:
            progress(rounds, len(model.supply), value, bound)
        converged = not new_cells and not new_groups
        close = value - bound <= stop_gap * abs(value)
        out_of_rounds = max_rounds is not None and rounds >= max_rounds
        # a round's LP costs about what the last one did: stop rather than be cut short
        # (an LP stopped halfway leaves a basis that the start's LPs would pay for)
        out_of_time = deadline - time.perf_counter() < 2 * took
        if converged or close or out_of_rounds or out_of_time:
            return _generated(model, lp, builder, value, value if converged else bound,
                              converged, rounds)
        last = (value, bound)
        growth = builder.extend(model, _with_groups(builder, new_cells, new_groups))


def start_cells(pricing: Pricing) -> set:
    """The supply cells of column generation's first LP (`Pricing.start`, with every cell
    of its single-region groups)."""
    cells, groups = pricing.start(START_SOURCES, COVER)
    if len(cells) > START_BUDGET:  # a first LP that large would not finish in time
        cells, groups = pricing.start(1, 1.0)
    return _with_groups(pricing.b, cells, groups)


def room_cells(pricing: Pricing) -> set:
    """Supply cells that leave a part of a plan in parts room where earlier parts took the
    cheap capacity: the start set on what they left in their busiest month. A model from
    column generation stopped after a round or two (or none: a part without an LP) may
    hold only sources that are full in some months, and the LP-guided start's repair
    serves unmet demand only from the cells a model holds."""
    cells, groups = pricing.start(START_SOURCES, COVER, busiest=True)
    return _with_groups(pricing.b, cells, groups)


def _generated(model: PlanningModel, lp: IncrementalLP, builder: ModelBuilder,
               value: float, bound: float, converged: bool, rounds: int) -> Generated:
    model.full_bound = bound
    model.lp_objective = value
    model.warm_lp = lp
    return Generated(model, value, bound, converged, rounds, len(model.supply),
                     builder.cell_count)


def _with_groups(builder: ModelBuilder, cells: set, groups: set) -> set:
    """The supply cells of `cells` plus every cell of each (workload, region, GPU) group."""
    out = set(cells)
    for (w, r, g) in groups:
        out.update(builder.cells_of(w, [x for x in builder.sources[w] if x[:2] == (r, g)]))
    return out


class _Sources:
    """One workload's sources as arrays (what pricing needs of them, fixed across rounds)."""

    def __init__(self, b: ModelBuilder, w: str, capacity_row: dict):
        s = b.s
        work = s.workload_by_name[w]
        self.keys = list(b.sources[w])
        self.first = np.array(list(b.sources[w].values()))
        self.regions = sorted({r for r, _, _ in self.keys})
        row_of = {r: i for i, r in enumerate(self.regions)}
        self.region = np.array([row_of[r] for r, _, _ in self.keys], dtype=int)
        self.groups = sorted({(r, g) for r, g, _ in self.keys})
        row_of = {rg: i for i, rg in enumerate(self.groups)}
        self.group = np.array([row_of[(r, g)] for r, g, _ in self.keys], dtype=int)
        self.egress = np.array([work.egress_gb_per_unit_hour * s.region_by_name[r].egress_usd_per_gb
                                for r, _, _ in self.keys])
        self.per_replica = np.array([b.per_replica(w, g, src) for _, g, src in self.keys])
        self.gpus = np.array([b.gpus_per_replica[(work.pool_name, g)] for _, g, _ in self.keys],
                             dtype=float)
        self.usd = np.array([0.0 if src == COMMITTED else b.payg_offer[src].usd_per_gpu_hour
                             for _, _, src in self.keys])
        share = work.max_spot_share
        self.spot_coef = np.array([
            (1.0 - share) if src != COMMITTED and b.payg_offer[src].term == "spot" else -share
            for _, _, src in self.keys])
        self.capacity = np.array([capacity_row[(r, g) if src == COMMITTED else src]
                                  for r, g, src in self.keys], dtype=int)
        self.index = {x: i for i, x in enumerate(self.keys)}
        demand = b.demand_of[w]
        self.month = np.array([m for m, _ in demand], dtype=int)
        self.segment = np.array([k for _, k in demand], dtype=int)
        self.column = {x: j for j, x in enumerate(demand)}
        self.level = np.array([b.total_level[(w, m, k)] for m, k in demand])
        self.valid = self.month[None, :] >= self.first[:, None]


@dataclass
class _Duals:
    """One round's duals, as arrays over (month, segment) per row family."""

    capacity: np.ndarray  # [capacity row, month, segment]: committed (r, g) or offer
    demand: dict  # (w, site) -> [month, segment], NaN where no row
    flow: dict  # (w, region) -> [month, segment], NaN where no row
    spot: dict  # w -> [month, segment]
    replicas: dict  # pool -> [((r, g, src), (month, segment), dual)]
    choice: dict  # w -> dual of its one-choice row


class Pricing:
    """What a scenario's sources cost, per unit of each workload: the start set of column
    generation, the pricing of cells left out under an LP's duals, and the price bound
    (also the bound, and the order of parts, of a plan in parts)."""

    def __init__(self, builder: ModelBuilder):
        self.b = builder
        s = builder.s
        self.pool_of = {w.workload: w.pool_name for w in s.workloads}
        self.single = {w.workload for w in s.workloads if w.single_region}
        self.shape = (builder.settings.horizon_months, len(builder.hours))
        self.hours_discount = np.array([[h * builder.settings.discount(month)
                                         for h in builder.hours]
                                        for month in builder.settings.months])
        # one row of capacity duals per committed (r, g) and per pay-as-you-go offer
        self.capacity_row: dict = {}
        for sources in builder.sources.values():
            for r, g, src in sources:
                key = (r, g) if src == COMMITTED else src
                self.capacity_row.setdefault(key, len(self.capacity_row))
        self.reach = {key: set(regions) for key, regions in builder.c.regions_for_site.items()}
        self._arrays: dict[str, _Sources] = {}
        # GPUs earlier parts of a plan in parts use — per pay-as-you-go offer, and per
        # (r, g) of existing GPUs (committed GPUs in use beyond those committed: what
        # `Taken.committed` holds below zero) — on average over months and segments, and
        # per month in its busiest segment (before their commitments are ready, earlier
        # parts fill pay-as-you-go offers in month 0, which their average hides)
        cells = self.shape[0] * self.shape[1]
        self.used: dict = defaultdict(float)
        self.used_in: dict = defaultdict(float)
        for (src, month, _), gpus in builder.taken.offer.items():
            self.used[src] += gpus / cells
            self.used_in[(src, month)] = max(self.used_in[(src, month)], gpus)
        for (r, g, month, _), spare in builder.taken.committed.items():
            self.used[(r, g)] += max(-spare, 0.0) / cells
            self.used_in[((r, g), month)] = max(self.used_in[((r, g), month)], -spare)
        self.used_most: dict = defaultdict(float)
        for (key, _month), gpus in self.used_in.items():
            self.used_most[key] = max(self.used_most[key], gpus)
        signed: dict = defaultdict(float)  # ((r, g), month) -> GPUs signed on its offers
        for (offer, month), gpus in builder.taken.signed.items():
            o = builder.s.offer_by_key[offer]
            signed[((o.region, o.gpu), month)] += gpus
        self.signed_most: dict = defaultdict(float)
        for (key, _month), gpus in signed.items():
            self.signed_most[key] = max(self.signed_most[key], gpus)

    def arrays(self, w: str) -> _Sources:
        if w not in self._arrays:
            self._arrays[w] = _Sources(self.b, w, self.capacity_row)
        return self._arrays[w]

    # -- the start set ---------------------------------------------------------------------
    def unit_cost(self, w: str, r: str, g: str, src: str) -> float:
        """Dollars per unit-hour of `w` from this source, ignoring whole replicas: the
        cheapest commitment's hourly price (upfront spread over its term) for committed
        GPUs, the offer's price for pay-as-you-go, plus egress."""
        b = self.b
        if src == COMMITTED:
            offers = b.commit_offers.get((r, g), [])
            hours = b.settings.hours_per_month
            price = min((o.usd_per_gpu_hour + o.upfront_usd_per_gpu / (o.commit_months * hours)
                         for o in offers), default=0.0)
        else:
            price = b.payg_offer[src].usd_per_gpu_hour
        gpr = b.gpus_per_replica[(self.pool_of[w], g)]
        egress = b.s.workload_by_name[w].egress_gb_per_unit_hour * \
            b.s.region_by_name[r].egress_usd_per_gb
        return price * gpr / b.per_replica(w, g, src) + egress

    def price_bound(self, constant: float) -> float:
        """A valid lower bound from prices alone: each unit of demand served by the cheapest
        source within reach and usable that month, ignoring capacity and whole replicas,
        or left unmet; existing contracts' GPUs at a price that rations them
        (`price_terms`). `constant`: the sunk cost in the objective."""
        per_workload, rationed = self.price_terms()
        return constant + sum(per_workload.values()) - rationed

    def price_terms(self) -> tuple[dict[str, float], float]:
        """The price bound's terms: per workload, what its demand costs at the cheapest
        source within reach of each site and usable that month, per unit (or the unmet
        penalty), and the existing contracts' GPUs priced at λ; and Σ λ × their GPUs.

        A committed GPU-hour costs `committed_rates`. Existing contracts' GPUs are sunk
        but few: pricing them at 0 would let every unit in reach use them. Instead each
        (r, g, month, segment) with existing GPUs E gets a price λ ≥ 0 per GPU, and the
        bound subtracts λ × E (a Lagrangian relaxation of their capacity, valid for any
        λ ≥ 0). λ is the cost above which units in reach would want more than E GPUs."""
        b = self.b
        rates = self.committed_rates()
        horizon = b.settings.horizon_months
        existing: dict[tuple[str, str], np.ndarray] = {}  # (r, g) -> GPUs per month
        for (r, g, m), gpus in b.existing_gpus.items():
            if gpus > 0:
                existing.setdefault((r, g), np.zeros(horizon))[m] += gpus
        share = np.array(b.hours) / b.settings.hours_per_month
        by_site: dict[str, dict] = defaultdict(dict)
        for (w, site, month, k), level in b.c.level.items():
            by_site[w].setdefault(site, []).append((month, k, level))
        # first pass: per site, the least cost per demand cell without existing GPUs, and
        # what units in reach of existing GPUs would pay for one of them
        sites_seen = []  # (w, level, least without existing, [(rows, egress, GPUs/unit)])
        wants: dict[tuple, list] = defaultdict(list)  # row -> [(price, GPUs)]
        for w, sites in by_site.items():
            penalty = b.s.workload_by_name[w].unmet_penalty_usd_per_unit_hour
            x = self.arrays(w) if b.sources.get(w) else None
            if x is None:
                amount = sum(level * penalty * self.hours_discount[month, k]
                             for cells in sites.values() for month, k, level in cells)
                sites_seen.append((w, np.array([1.0]), np.array([amount]), []))
                continue
            month, k = x.month, x.segment
            hd = self.hours_discount[month, k]
            per_unit = x.gpus / x.per_replica  # GPUs per unit of level
            egress = x.egress[:, None] * hd[None, :]
            cost = x.usd[:, None] * per_unit[:, None] * hd[None, :] + egress
            for i, (r, g, src) in enumerate(x.keys):
                if src == COMMITTED:
                    hourly = rates.get((r, g), np.full(horizon, np.inf))
                    cost[i] += hourly[month] * per_unit[i] * share[k] * \
                        b.settings.hours_per_month
            cost[~x.valid] = np.inf
            regions = np.array([r for r, _, _ in x.keys])
            for site, cells in sites.items():
                near = np.isin(regions, list(self.reach.get((w, site), ())))
                js = np.array([x.column[(m, kk)] for m, kk, _ in cells], dtype=int)
                level = np.array([lv for _, _, lv in cells])
                least = np.minimum(cost[near][:, js].min(axis=0) if near.any()
                                   else np.inf, penalty * hd[js])
                uses = []
                for i in np.flatnonzero(near):
                    r, g, src = x.keys[i]
                    if src != COMMITTED or (r, g) not in existing:
                        continue
                    months = month[js]
                    there = existing[(r, g)][months] > 0
                    ok = there & x.valid[i, js]
                    rows = [(r, g, int(m), int(kk)) if o else None
                            for m, kk, o in zip(months, k[js], ok)]
                    uses.append((rows, egress[i, js], per_unit[i]))
                    price = (least - egress[i, js]) / per_unit[i]
                    for row, p, lv in zip(rows, price, level):
                        if row is not None:
                            wants[row].append((p, lv * per_unit[i]))
                sites_seen.append((w, level, least, uses))
        # λ per row: the highest price at which units in reach want at least E GPUs
        lam: dict[tuple, float] = {}
        for row, bids in wants.items():
            r, g, m, _ = row
            have = existing[(r, g)][m]
            bids.sort(key=lambda pg: -pg[0])
            taken = 0.0
            lam[row] = 0.0
            for p, gpus in bids:
                taken += gpus
                if taken >= have:
                    lam[row] = max(float(p), 0.0)
                    break
        # second pass: the bound at these λ
        per_workload: dict[str, float] = defaultdict(float)
        for w, level, least, uses in sites_seen:
            least = least.copy()
            for rows, egress, per_unit in uses:
                price = np.array([np.inf if row is None else lam[row] for row in rows])
                least = np.minimum(least, egress + price * per_unit)
            per_workload[w] += float((level * least).sum())
        rationed = sum(value * existing[(r, g)][m] for (r, g, m, _), value in lam.items())
        return dict(per_workload), float(rationed)

    def committed_rates(self) -> dict[tuple[str, str], np.ndarray]:
        """Per (r, g) and month, the least a committed GPU-hour there can cost: over every
        commitment active in that month, its counted cost (tail policy, discounting) spread
        over the GPU-hours it is active inside the horizon. Valid because a commitment's
        rate times the hours it could serve never exceeds its cost."""
        b = self.b
        horizon, hours = b.settings.horizon_months, b.settings.hours_per_month
        rates: dict[tuple[str, str], np.ndarray] = {}
        for (r, g), offers in b.commit_offers.items():
            rate = np.full(horizon, np.inf)
            for o in offers:
                for t in range(o.first_month, horizon):
                    inside = months_inside(o, t, b.settings)
                    payments, upfront = counted_per_gpu(o, t, b.settings, discounted=True)
                    rate[t:t + inside] = np.minimum(rate[t:t + inside],
                                                    (payments + upfront) / (hours * inside))
            rates[(r, g)] = rate
        return rates

    def _kind(self, src: str) -> str:
        return COMMITTED if src == COMMITTED else self.b.payg_offer[src].term

    def capacity_gpus(self, r: str, g: str, src: str, month: int | None = None,
                      busiest: bool = False) -> float:
        """GPUs the source has at most in an hour (inf: no limit), less what earlier parts
        of a plan in parts use there: on average over months and segments, in `month`'s
        busiest segment, or (`busiest`) in the busiest month and segment."""
        b = self.b
        key = (r, g) if src == COMMITTED else src
        if busiest:  # commitments signed count too: no part signs beyond max_gpus
            used = self.used_most.get(key, 0.0) + (self.signed_most.get(key, 0.0)
                                                   if src == COMMITTED else 0.0)
        elif month is not None:
            used = self.used_in.get((key, month), 0.0)
        else:
            used = self.used.get(key, 0.0)
        if src == COMMITTED:
            gpus = sum(math.inf if o.max_gpus is None else o.max_gpus
                       for o in b.commit_offers.get((r, g), []))
            gpus += max((e.gpus for e in b.s.existing if (e.region, e.gpu) == (r, g)),
                        default=0)
            return max(gpus - used, 0.0)
        o = b.payg_offer[src]
        if o.max_gpus is None:
            return math.inf
        return max(o.max_gpus - used, 0.0)

    def units_per_gpu(self, w: str, g: str, src: str) -> float:
        t = self.b.s.throughput_by_pair[(w, g)]
        return t.units_per_gpu * (1.0 if src == COMMITTED else self.b.payg_offer[src].derate)

    def capacity_units(self, w: str, r: str, g: str, src: str, busiest: bool = False
                       ) -> float:
        """Units of `w` the source can deliver at most in an hour (inf: no limit)."""
        return self.capacity_gpus(r, g, src, busiest=busiest) * self.units_per_gpu(w, g, src)

    def start(self, per_kind: int, cover: float, busiest: bool = False) -> tuple[set, set]:
        """Per demand site and kind of source (spot, on-demand, committed), the cheapest
        sources until they could carry `cover` × the site's busiest level (at least
        `per_kind` with capacity left), sites with the highest levels first, each taking
        its share of an offer's capacity (workloads compete for the cheap ones); then the
        same among sources usable from the first month of demand, on what earlier parts
        left in that month. `busiest`: on what earlier parts left in their busiest month
        (not on average). For single-region workloads the `per_kind` cheapest groups,
        those that can hold it from its first month first."""
        b = self.b
        peak: dict[tuple, float] = defaultdict(float)
        for (w, site, month, k), level in b.c.level.items():
            peak[(w, site)] = max(peak[(w, site)], level)
        chosen: dict[str, set] = defaultdict(set)
        groups: set = set()
        ranked: dict[str, list] = {}
        first: dict[str, int] = {}
        for w, sources in b.sources.items():
            if w not in b.demand_of:
                continue
            ranked[w] = sorted(sources, key=lambda x: (self.unit_cost(w, *x), x))
            first[w] = min(month for month, _ in b.demand_of[w])
            if w in self.single:  # groups usable from the first month of demand first
                need = cover * max(peak[(w, site)] for site in b.sites_of[w])
                group_units: dict[tuple, float] = defaultdict(float)
                for x in sources:
                    group_units[x[:2]] += self.capacity_units(w, *x, busiest=busiest)
                fits = [(r, g) for (r, g, src) in ranked[w]
                        if sources[(r, g, src)] <= first[w] and group_units[(r, g)] >= need]
                best = []
                for (r, g) in fits + [(r, g) for (r, g, _) in ranked[w]]:
                    if (w, r, g) not in best:
                        best.append((w, r, g))
                groups.update(best[:per_kind])
        sites = sorted(((w, site) for w in ranked if w not in self.single
                        for site in b.sites_of[w]), key=lambda x: (-peak[x], x[0], str(x[1])))
        for early in (False, True):
            left: dict = {}  # GPUs of each offer, or committed (r, g), not yet taken
            for (w, site) in sites:
                near = set(b.c.regions_for_site[(w, site)])
                taken: dict[str, int] = defaultdict(int)  # per kind of source
                carried: dict[str, float] = defaultdict(float)
                need = cover * peak[(w, site)]
                consumed = 0.0
                for x in ranked[w]:
                    kind = self._kind(x[2])
                    if x[0] not in near or (early and b.sources[w][x] > first[w]):
                        continue
                    if taken[kind] >= per_kind and carried[kind] >= need:
                        continue
                    key = x[:2] if x[2] == COMMITTED else x[2]
                    if key not in left:
                        left[key] = self.capacity_gpus(*x, first[w] if early else None,
                                                       busiest=busiest and not early)
                    if left[key] <= 0 and taken[kind] > 0:
                        continue  # taken up by bigger sites
                    chosen[w].add(x)
                    taken[kind] += 1
                    per_gpu = self.units_per_gpu(w, x[1], x[2])
                    units = min(left[key] * per_gpu, max(need - carried[kind], 0.0))
                    carried[kind] += units
                    # the site takes what its peak needs once, whatever kind serves it
                    use = min(units, max(peak[(w, site)] - consumed, 0.0))
                    consumed += use
                    left[key] -= use / per_gpu
        cells = {key for w, sources in chosen.items() for key in b.cells_of(w, sources)}
        return cells, groups

    # -- pricing ---------------------------------------------------------------------------
    def duals(self, model: PlanningModel) -> _Duals:
        rows = model.rows

        def dual(c) -> float:
            return c.pi or 0.0

        capacity = np.zeros((len(self.capacity_row), *self.shape))
        for (r, g, month, k), c in rows["committed_capacity"].items():
            if (r, g) in self.capacity_row:
                capacity[self.capacity_row[(r, g)], month, k] = dual(c)
        for (src, month, k), c in rows["offer_capacity"].items():
            capacity[self.capacity_row[src], month, k] = dual(c)
        demand: dict = {}
        for (w, site, month, k), c in rows["demand"].items():
            if (w, site) not in demand:
                demand[(w, site)] = np.full(self.shape, np.nan)
            demand[(w, site)][month, k] = dual(c)
        flow: dict = {}
        for (w, r, month, k), c in rows["flow_balance"].items():
            if (w, r) not in flow:
                flow[(w, r)] = np.full(self.shape, np.nan)
            flow[(w, r)][month, k] = dual(c)
        spot: dict = {}
        for (w, month, k), c in rows["spot_share"].items():
            if w not in spot:
                spot[w] = np.zeros(self.shape)
            spot[w][month, k] = dual(c)
        replicas: dict = defaultdict(list)
        for (p, r, g, src, month, k), c in rows["replicas"].items():
            replicas[p].append(((r, g, src), (month, k), dual(c)))
        choice = {w: dual(c) for w, c in rows["single_region_choice"].items()}
        return _Duals(capacity, demand, flow, spot, replicas, choice)

    def matrix(self, w: str, duals: _Duals) -> tuple[_Sources, np.ndarray, np.ndarray]:
        """Workload `w`'s sources, and the reduced cost and demand price of each of its
        cells [source, demand cell] (NaN where the cell is not in the full model)."""
        b, x = self.b, self.arrays(w)
        month, k = x.month, x.segment
        hd = self.hours_discount[month, k]
        sites = b.sites_of[w]
        # what one more unit served from each region is worth
        if len(sites) == 1:
            price = np.broadcast_to(duals.demand[(w, sites[0])][month, k],
                                    (len(x.keys), len(month)))
        else:
            per_region = np.full((len(x.regions), len(month)), np.nan)
            for i, r in enumerate(x.regions):
                flow = duals.flow.get((w, r))
                if flow is not None and not np.isnan(flow[month, k]).any():
                    per_region[i] = flow[month, k]
                    continue
                for site in sites:  # a new flow balance: the best price it reaches
                    if r in self.reach[(w, site)] and (w, site) in duals.demand:
                        per_region[i] = np.fmax(per_region[i], duals.demand[(w, site)][month, k])
                if flow is not None:
                    per_region[i] = np.where(np.isnan(flow[month, k]), per_region[i],
                                             flow[month, k])
            price = per_region[x.region]
        rc = x.egress[:, None] * hd[None, :] - price
        if w in duals.spot:
            rc -= x.spot_coef[:, None] * duals.spot[w][month, k][None, :]
        # the replica row's dual; a new row takes the one that prices its replica column
        # at zero: −(replica cost − GPUs per replica × capacity dual)
        capacity = duals.capacity[x.capacity[:, None], month[None, :], k[None, :]]
        rho = x.gpus[:, None] * (capacity - x.usd[:, None] * hd[None, :])
        for source, cell, value in duals.replicas.get(self.pool_of[w], ()):
            i, j = x.index.get(source), x.column.get(cell)
            if i is not None and j is not None:
                rho[i, j] = value
        rc -= rho / x.per_replica[:, None]
        rc[~x.valid] = np.nan
        return x, rc, price

    def _built(self, model: PlanningModel) -> dict[str, list]:
        out: dict[str, list] = defaultdict(list)
        for (w, r, g, src, month, k) in model.supply:
            out[w].append(((r, g, src), (month, k)))
        return out

    def reduced_costs(self, model: PlanningModel, built: bool = False):
        """(cell, reduced cost, demand price) of every supply cell not in `model` (with
        `built`: of those in it) under its LP duals; single-region workloads left out."""
        duals, in_model = self.duals(model), self._built(model)
        for w, sources in self.b.sources.items():
            if not sources or w not in self.b.demand_of or w in self.single:
                continue
            x, rc, price = self.matrix(w, duals)
            mark = np.zeros(rc.shape, dtype=bool)
            for source, cell in in_model.get(w, ()):
                mark[x.index[source], x.column[cell]] = True
            for i, j in zip(*np.nonzero((mark == built) & ~np.isnan(rc))):
                (r, g, src), (month, k) = x.keys[i], (int(x.month[j]), int(x.segment[j]))
                yield (w, r, g, src, month, k), float(rc[i, j]), float(price[i, j])

    def price(self, model: PlanningModel) -> tuple[set, set, float]:
        """Cells and groups that price out (reduced cost < 0), and the Lagrangian
        correction to the LP value: per demand cell its level × the least reduced cost of
        a cell left out (their supply together never exceeds the level), per single-region
        workload the least reduced cost of a group left out (it chooses one)."""
        duals, in_model = self.duals(model), self._built(model)
        below = 0.0
        new_cells, new_groups = set(), set()
        for w, sources in self.b.sources.items():
            if not sources or w not in self.b.demand_of:
                continue
            x, rc, price = self.matrix(w, duals)
            for source, cell in in_model.get(w, ()):
                rc[x.index[source], x.column[cell]] = np.nan
            rc = np.where(np.isnan(rc), np.inf, rc)
            if w in self.single:
                below += self._price_groups(w, x, rc, model, duals, new_groups)
                continue
            least = rc.min(axis=0)
            below += float((x.level * np.minimum(least, 0.0)).sum())
            tolerance = TOLERANCE * np.maximum(1.0, np.abs(np.nan_to_num(price)))
            rc = np.where(rc < -tolerance, rc, np.inf)
            columns = np.flatnonzero(np.isfinite(rc).any(axis=0))
            if len(columns) == 0:
                continue
            take = min(ADD_PER_CELL, len(x.keys))
            best = np.argsort(rc[:, columns], axis=0, kind="stable")[:take]
            for row, j in zip(best.ravel(), np.tile(columns, take)):
                if np.isfinite(rc[row, j]):
                    new_cells.add((w, *x.keys[row], int(x.month[j]), int(x.segment[j])))
        return new_cells, new_groups, below

    def _price_groups(self, w, x: _Sources, rc, model, duals, new_groups) -> float:
        """A group's choice column prices at −ψ − Σ level · max(0, −least rc in the
        group); the one that prices out most joins. Returns the Lagrangian correction."""
        best = np.full((len(x.groups), rc.shape[1]), np.inf)
        np.minimum.at(best, x.group, rc)
        value = (x.level[None, :] * np.where(np.isfinite(best), np.maximum(-best, 0.0), 0.0)
                 ).sum(axis=1)
        least, best_group = 0.0, None
        for gi, (r, g) in enumerate(x.groups):
            if (w, r, g) in model.choose:
                continue
            reduced = -duals.choice.get(w, 0.0) - float(value[gi])
            if reduced < least and reduced < -TOLERANCE * max(1.0, float(value[gi])):
                best_group = (w, r, g)
            least = min(least, reduced)
        if best_group is not None:  # one a round: a group brings every month and source
            new_groups.add(best_group)
        return least
