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
plus, for every cell, min(0, reduced cost) × the most that column can carry.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass

from planner.highs import IncrementalLP
from planner.model import COMMITTED, ModelBuilder, PlanningModel

START_SOURCES = 2  # cheapest sources per (workload, site, kind of source) in the start set
ADD_PER_CELL = 3  # most negative cells joining per (workload, month, segment) and round
COVER = 2.0  # the start set could carry this many times each site's busiest level
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
                     progress=None) -> Generated | None:
    """Column generation on `builder`'s model, within `time_limit` seconds;
    `progress(round, cells, lp value, bound)` hears of each round. None when an LP fails
    (or the first one does not finish in time)."""
    deadline = time.perf_counter() + time_limit
    lp = IncrementalLP(time_limit, threads)
    pricing = _Pricing(builder)
    cells, groups = pricing.start()
    rounds = 0
    while True:
        rounds += 1
        model = builder.build(_with_groups(builder, cells, groups))
        value = lp.solve(model.prob)
        if value is None:
            return None
        new_cells, new_groups, below = pricing.price(model)
        bound = value + below
        if progress is not None:
            progress(rounds, len(model.supply), value, bound)
        converged = not new_cells and not new_groups
        if converged or time.perf_counter() >= deadline:
            model.full_bound = value if converged else bound
            model.lp_objective = value
            return Generated(model, value, model.full_bound, converged, rounds,
                             len(model.supply), builder.cell_count)
        cells |= new_cells
        groups |= new_groups


def _with_groups(builder: ModelBuilder, cells: set, groups: set) -> set:
    """The supply cells of `cells` plus every cell of each (workload, region, GPU) group."""
    if not groups:
        return cells
    out = set(cells)
    for key in builder.cells():
        if key[:3] in groups:
            out.add(key)
    return out


class _Pricing:
    def __init__(self, builder: ModelBuilder):
        self.b = builder
        s = builder.s
        self.pool_of = {w.workload: w.pool_name for w in s.workloads}
        self.single = {w.workload for w in s.workloads if w.single_region}
        self.by_w: dict[str, list] = defaultdict(list)  # w -> [(month, k)]
        for (w, month, k) in builder.demand_cells:
            self.by_w[w].append((month, k))

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

    def _kind(self, src: str) -> str:
        return COMMITTED if src == COMMITTED else self.b.payg_offer[src].term

    def capacity_units(self, w: str, r: str, g: str, src: str) -> float:
        """Units of `w` the source can deliver at most in an hour (inf: no limit)."""
        b = self.b
        if src == COMMITTED:
            gpus = sum(math.inf if o.max_gpus is None else o.max_gpus
                       for o in b.commit_offers.get((r, g), []))
            gpus += max((e.gpus for e in b.s.existing if (e.region, e.gpu) == (r, g)),
                        default=0)
        else:
            o = b.payg_offer[src]
            gpus = math.inf if o.max_gpus is None else o.max_gpus
        t = b.s.throughput_by_pair[(w, g)]
        return gpus * t.units_per_gpu * (1.0 if src == COMMITTED else b.payg_offer[src].derate)

    def start(self) -> tuple[set, set]:
        """Per demand site and kind of source (spot, on-demand, committed), the cheapest
        sources until they could carry COVER × the site's busiest level (at least
        START_SOURCES); for single-region workloads the cheapest groups likewise."""
        b = self.b
        peak: dict[tuple, float] = defaultdict(float)
        for (w, site, month, k), level in b.c.level.items():
            peak[(w, site)] = max(peak[(w, site)], level)
        chosen: dict[str, set] = defaultdict(set)
        groups: set = set()
        for w, sources in b.sources.items():
            if w not in self.by_w:
                continue
            ranked = sorted(sources, key=lambda x: (self.unit_cost(w, *x), x))
            first = min(month for month, _ in self.by_w[w])
            if w in self.single:  # groups usable from the first month of demand first
                need = COVER * max(peak[(w, site)] for site in b.sites_of[w])
                group_units: dict[tuple, float] = defaultdict(float)
                for x in sources:
                    group_units[x[:2]] += self.capacity_units(w, *x)
                fits = [(r, g) for (r, g, src) in ranked
                        if sources[(r, g, src)] <= first and group_units[(r, g)] >= need]
                best = []
                for (r, g) in fits + [(r, g) for (r, g, _) in ranked]:
                    if (w, r, g) not in best:
                        best.append((w, r, g))
                groups.update(best[:START_SOURCES])
                continue
            # the cheapest of all, and the cheapest usable from the first month of demand
            for early in (False, True):
                for site in b.sites_of[w]:
                    near = set(b.c.regions_for_site[(w, site)])
                    taken: dict[str, int] = defaultdict(int)
                    carried: dict[str, float] = defaultdict(float)
                    for x in ranked:
                        kind = self._kind(x[2])
                        if x[0] not in near or (early and sources[x] > first):
                            continue
                        if taken[kind] < START_SOURCES or carried[kind] < COVER * peak[(w, site)]:
                            taken[kind] += 1
                            carried[kind] += self.capacity_units(w, *x)
                            chosen[w].add(x)
        cells = {key for key in b.cells() if key[1:4] in chosen[key[0]]}
        return cells, groups

    # -- pricing ---------------------------------------------------------------------------
    def reduced_costs(self, model: PlanningModel, built: bool = False):
        """(cell, reduced cost, demand price) of every supply cell not in `model` (with
        `built`: of those in it, single-region workloads left out) under its LP duals."""
        b = self.b
        rows = model.rows
        demand, flow_balance = rows["demand"], rows["flow_balance"]
        spot_rows, replica_rows = rows["spot_share"], rows["replicas"]
        offer_cap, committed_cap = rows["offer_capacity"], rows["committed_capacity"]

        def dual(table, key) -> float:
            c = table.get(key)
            return (c.pi or 0.0) if c is not None else 0.0

        for key in b.cells():
            if (key in model.supply) != built:
                continue
            w, r, g, src, month, k = key
            if built and w in self.single:
                continue
            # what one more unit served from r is worth
            sites = b.sites_of[w]
            if len(sites) == 1:
                price = dual(demand, (w, sites[0], month, k))
            elif (w, r, month, k) in flow_balance:
                price = dual(flow_balance, (w, r, month, k))
            else:
                prices = [dual(demand, (w, site, month, k)) for site in sites
                          if (w, site, month, k) in demand
                          and r in b.c.regions_for_site[(w, site)]]
                if not prices:
                    continue
                price = max(prices)
            rc = b.supply_cost(w, r, month, k) - price
            if (w, month, k) in spot_rows:
                share = b.s.workload_by_name[w].max_spot_share
                is_spot = src != COMMITTED and b.payg_offer[src].term == "spot"
                rc -= ((1.0 - share) if is_spot else -share) * dual(spot_rows, (w, month, k))
            p = self.pool_of[w]
            cell = (p, r, g, src, month, k)
            if cell in replica_rows:
                rho = dual(replica_rows, cell)
            else:  # the dual that prices the new replica column at zero
                capacity = (dual(committed_cap, (r, g, month, k)) if src == COMMITTED
                            else dual(offer_cap, (src, month, k)))
                rho = -(b.replica_cost(p, g, src, month, k)
                        - b.gpus_per_replica[(p, g)] * capacity)
            yield key, rc - rho / b.per_replica(w, g, src), price

    def price(self, model: PlanningModel) -> tuple[set, set, float]:
        """Cells and groups that price out (reduced cost < 0), and Σ min(0, rc) × the most
        each column can carry (the Lagrangian correction to the LP value)."""
        b = self.b
        below = 0.0
        found: dict[tuple, list] = defaultdict(list)
        best_in_group: dict[tuple, float] = {}
        for key, rc, price in self.reduced_costs(model):
            w, r, g, _src, month, k = key
            if w in self.single:
                if (w, r, g) not in model.choose:
                    cell = (w, r, g, month, k)
                    best_in_group[cell] = min(best_in_group.get(cell, math.inf), rc)
                continue
            if rc < -TOLERANCE * max(1.0, abs(price)):
                found[(w, month, k)].append((rc, key))
                below += rc * b.total_level[(w, month, k)]
        new_cells = set()
        for cells in found.values():
            cells.sort()
            new_cells.update(key for _, key in cells[:ADD_PER_CELL])
        group_value: dict[tuple, float] = defaultdict(float)
        for (w, r, g, month, k), rc in best_in_group.items():
            group_value[(w, r, g)] += b.total_level[(w, month, k)] * max(0.0, -rc)
        choice = model.rows["single_region_choice"]
        new_groups = set()
        for (w, r, g), value in sorted(group_value.items()):
            c = choice.get(w)
            rc = -((c.pi or 0.0) if c is not None else 0.0) - value
            if rc < -TOLERANCE * max(1.0, value):
                new_groups.add((w, r, g))
                below += rc
        return new_cells, new_groups, below
