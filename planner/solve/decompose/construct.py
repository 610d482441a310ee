"""A whole plan from the LP's arcs: whole replicas within capacity, month by month.

Given the commitments to sign (whole GPUs) and, per workload, the arcs it would like to
be served by (the master LP's, or the cheapest at given prices), each month and segment
is planned on its own — commitments fixed, nothing else links months:

1. pool by pool (the least flexible first, then the largest), each source's load in
   replicas is rounded down to the replicas it fills (the pool's largest at least
   one), as far as the source has room (a capped offer's GPUs left, the committed GPUs
   of its region and type not yet in use);
2. what did not fit, and the fractions, go to the workload's sources in reach, cheapest
   first at the prices: first into replicas the pool already runs there with room to
   spare, then into new replicas where there is capacity; spot only within the
   workload's spot share; committed GPUs are signed for if that is what it takes;
3. what is still left is unmet — no source in reach had room.

The plan is kept as a `Draft`: one `PoolPlan` per pool, month and segment, and the
capacity each uses, so that a pool can be planned again alone (planner.solve.decompose.
improve); commitments idle in every month they are active are trimmed at the end.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import chain, repeat

import numpy as np

from planner.model.builder import COMMITTED
from planner.model.solution import Solution
from planner.solve.decompose.blocks import Blocks
from planner.solve.decompose.pricing import pair_range, unit_costs

EPS = 1e-9
# A change to a plan (a pool planned again, replicas moved, commitments topped up) is
# kept only where it is cheaper by more than this share of the cost: below it the
# difference is the float sums' noise, and keeping it would make plans depend on it.
CHEAPER = 1e-7


def cheaper(after: float, before: float) -> bool:
    """Whether a plan costing `after` is cheaper than one costing `before` (CHEAPER)."""
    return after < before - CHEAPER * max(1.0, before)


@dataclass
class PoolPlan:
    """One pool in one month and segment."""

    replicas: dict = field(default_factory=dict)  # source key (r, g, src) → replicas
    served: dict = field(default_factory=dict)  # (workload index, site, source) → units
    unmet: dict = field(default_factory=dict)  # (workload index, site) → units
    cost: float = 0.0  # pay-as-you-go GPUs, egress and unmet penalty (discounted)


class Draft:
    """A whole plan under construction: commitments, and a PoolPlan per pool, month and
    segment, with the capacity they use."""

    def __init__(self, blocks: Blocks, commit: np.ndarray, pairs: dict):
        b = self.b = blocks
        cm = b.commitments
        self.commit = np.zeros(len(cm.offer))
        self.pairs = dict(pairs)
        self.committed = b.existing.copy()  # GPUs per (r, g) pair and month
        # GPUs signed on each capped commitment offer per month (its max_gpus holds)
        self.signed = np.zeros((len(cm.caps), b.months))
        self.of_pair: dict[int, np.ndarray] = {}  # pair → its commitments
        for row in np.unique(cm.committed_row).tolist():
            self.of_pair[row] = np.flatnonzero(cm.committed_row == row)
        for n in np.flatnonzero(np.asarray(commit) > 0).tolist():
            self.add_commit(n, float(commit[n]))
        self.used_payg = np.zeros((len(b.payg_offers), b.months, b.segments))
        self.used_committed = np.zeros((len(b.committed_pairs), b.months, b.segments))
        # GPUs in use on each offer sold in whole instances (capped or not)
        self.used_instances = np.zeros((len(b.instance_offers), b.months, b.segments))
        # GPUs of each capacity row held, in the (month, segment) being constructed, for
        # the pools not yet planned there (`hold`); zero outside construction
        self.held_payg = np.zeros(len(b.payg_offers))
        self.held_committed = np.zeros(len(b.committed_pairs))
        self.held_cells = 0  # (month, segment)s in which capacity was held (`construct`)
        self.pools: dict[tuple[int, int, str], PoolPlan] = {}
        self.pools_cost = 0.0  # their costs' sum, kept as they change (running_cost)
        self.priced: dict[int, np.ndarray] = {}  # workload → [J, M, K] cost at the prices
        self.members: dict[str, list[int]] = defaultdict(list)
        for w, wb in enumerate(b.workloads):
            self.members[wb.pool].append(w)
        self.allowed = {}  # workload → [J] sources it may use (a held pair's only)
        for w, wb in enumerate(b.workloads):
            ok = np.ones(len(wb.sources), dtype=bool)
            if wb.single_region:
                ok[:] = False
                if w in pairs:
                    start, end = pair_range(wb, pairs[w])
                    ok[start:end] = True
            self.allowed[w] = ok

    # -- capacity ----------------------------------------------------------------------------
    def room(self, wb, j: int, m: int, k: int) -> float:
        """GPUs source j of `wb` has left in (m, k), less those held for other pools
        (inf: no limit)."""
        if wb.committed_row[j] >= 0:
            row = wb.committed_row[j]
            return (self.committed[row, m] - self.used_committed[row, m, k]
                    - self.held_committed[row])
        if wb.payg_row[j] >= 0:
            row = wb.payg_row[j]
            return self.b.payg_cap[row] - self.used_payg[row, m, k] - self.held_payg[row]
        return math.inf

    def rooms(self, wb, m: int, k: int) -> np.ndarray:
        """[J] GPUs each source of `wb` has left in (m, k), less those held for other
        pools (inf: no limit)."""
        out = np.full(len(wb.sources), math.inf)
        c, row = wb.committed_row >= 0, wb.committed_row
        out[c] = (self.committed[row[c], m] - self.used_committed[row[c], m, k]
                  - self.held_committed[row[c]])
        p, row = wb.payg_row >= 0, wb.payg_row
        out[p] = (self.b.payg_cap[row[p]] - self.used_payg[row[p], m, k]
                  - self.held_payg[row[p]])
        return out

    def hold(self, wanted: dict, order: list, m: int, k: int) -> dict:
        """Hold for each pool, in the order they are planned, the GPUs its wanted arcs
        take of each capacity row in (m, k) in the whole replicas each source's load
        fills (what step 1 of `_plan_pool` runs; the fractions go where there is room),
        as far as the row has room beside the pools before it: pool → ({payg row: GPUs},
        {committed row: GPUs}), to `release` when the pool is planned. (200x40x24's
        single-GPU-type plan, held in every cell: holding the LP's own GPUs 2.75 % over
        its bound, every fraction as a whole replica 3.05 %, the whole replicas filled
        1.78 %.)"""
        b = self.b
        left = {}  # (payg row, committed row) → GPUs not yet held there
        holds = {}
        for pool in order:
            # replicas the pool's load fills at each capped source: (its payg row, its
            # committed row, GPUs a replica) → replicas
            replicas: dict = defaultdict(float)
            for w in self.members[pool]:
                wb = b.workloads[w]
                for _, j, units in wanted.get(w, ()):
                    p, c = int(wb.payg_row[j]), int(wb.committed_row[j])
                    if p >= 0 or c >= 0:
                        gpr = int(wb.gpus_per_replica[j])
                        replicas[(p, c, gpr)] += units * wb.gpus_per_unit[j] / gpr
            if not replicas:
                continue
            payg: dict = defaultdict(float)
            committed: dict = defaultdict(float)
            for (p, c, gpr), n in sorted(replicas.items()):
                gpus = math.floor(n + 1e-6) * gpr
                room = left.setdefault((p, c), (
                    b.payg_cap[p] - self.used_payg[p, m, k] if p >= 0
                    else self.committed[c, m] - self.used_committed[c, m, k]))
                held, row = (payg, p) if p >= 0 else (committed, c)
                held[row] += min(gpus, max(room, 0.0))
                left[(p, c)] = room - gpus
            holds[pool] = (payg, committed)
            for p, gpus in payg.items():
                self.held_payg[p] += gpus
            for c, gpus in committed.items():
                self.held_committed[c] += gpus
        return holds

    def release(self, holds: dict, pool: str) -> None:
        """The GPUs held for `pool` are its own to plan with (or, at the end of the
        (month, segment), no pool's: every hold released)."""
        if pool in holds:
            payg, committed = holds.pop(pool)
            for p, gpus in payg.items():
                self.held_payg[p] -= gpus
            for c, gpus in committed.items():
                self.held_committed[c] -= gpus
        if not holds:
            self.held_payg[:] = 0.0
            self.held_committed[:] = 0.0

    def _use(self, pool: str, plan: PoolPlan, m: int, k: int, sign: float) -> None:
        b = self.b
        for (r, g, src), n in plan.replicas.items():
            gpus = sign * n * b.builder.gpus_per_replica[(pool, g)]
            if src == COMMITTED:
                self.used_committed[b.committed_index[(r, g)], m, k] += gpus
                continue
            if src in b.payg_index:
                self.used_payg[b.payg_index[src], m, k] += gpus
            if src in b.instance_index:
                self.used_instances[b.instance_index[src], m, k] += gpus

    def set(self, pool: str, m: int, k: int, plan: PoolPlan) -> None:
        old = self.pools.get((m, k, pool))
        if old is not None:
            self._use(pool, old, m, k, -1.0)
            self.pools_cost -= old.cost
        self.pools[(m, k, pool)] = plan
        self.pools_cost += plan.cost
        self._use(pool, plan, m, k, 1.0)

    def add_commit(self, n: int, gpus: float) -> None:
        """Sign `gpus` more (or fewer) GPUs on commitment n."""
        cm = self.b.commitments
        end = min(int(cm.start[n] + cm.months[n]), self.b.months)
        self.commit[n] += gpus
        self.committed[cm.committed_row[n], int(cm.start[n]):end] += gpus
        if cm.cap_row[n] >= 0:
            self.signed[cm.cap_row[n], int(cm.start[n]):end] += gpus

    def sign(self, pair: int, m: int, gpus: float) -> None:
        """Sign up to `gpus` more committed GPUs at `pair` active in month m, on the
        commitments that cost least per GPU and month they are there from m to the end
        of the horizon (months before m are planned already), within their bounds and
        their offers' monthly max_gpus."""
        cm = self.b.commitments
        mine = self.of_pair.get(pair, np.zeros(0, dtype=np.int64))
        active = mine[(cm.start[mine] <= m) & (m < cm.start[mine] + cm.months[mine])
                      & (self.commit[mine] < cm.upper[mine])]
        useful = np.minimum(cm.start[active] + cm.months[active], self.b.months) - m
        for n in active[np.lexsort((active, cm.cost[active] / useful))].tolist():
            room = cm.upper[n] - self.commit[n]
            end = min(int(cm.start[n] + cm.months[n]), self.b.months)
            step = cm.step[n]  # whole instances
            if cm.cap_row[n] >= 0:  # the offer's max_gpus in every month it is active
                c = cm.cap_row[n]
                wanted = max(math.ceil(gpus / step - 1e-9) * step,
                             cm.min_gpus[n] if self.commit[n] == 0 else 0.0)
                short = wanted - (cm.caps[c] - self.signed[c, int(cm.start[n]):end].max())
                if short > 0:
                    self._give_way(n, m, short)
                room = min(room, cm.caps[c] - self.signed[c, int(cm.start[n]):end].max())
            room = math.floor(room / step + 1e-9) * step
            add = min(math.ceil(gpus / step - 1e-9) * step, room)
            if add > 0 and self.commit[n] == 0 and add < cm.min_gpus[n]:
                add = cm.min_gpus[n] if cm.min_gpus[n] <= room else 0  # a minimum order
            if add <= 0:
                continue
            self.add_commit(n, add)
            gpus -= add
            if gpus <= 0:
                return

    def _give_way(self, n: int, m: int, gpus: float) -> None:
        """Make room for `gpus` more on commitment n's capped offer by signing fewer on
        its commitments that start after month m and overlap n, the latest first, as far
        as their GPUs are idle (in construction, months after m are not planned yet); a
        minimum order stays whole or goes entirely. (1000x100x36's cheapest-single-GPU-
        type plan: a month-12 commitment rounded up to the offer's whole max_gpus left
        the months before it no room for their minimum order: their demand went unmet.)"""
        cm, b = self.b.commitments, self.b
        end = min(int(cm.start[n] + cm.months[n]), b.months)
        later = np.flatnonzero((cm.cap_row == cm.cap_row[n]) & (cm.start > m)
                               & (cm.start < end) & (self.commit > cm.lower))
        for other in sorted(later.tolist(), key=lambda o: (-int(cm.start[o]), o)):
            if gpus <= 0:
                return
            row, step = cm.committed_row[other], cm.step[other]
            months = slice(int(cm.start[other]),
                           min(int(cm.start[other] + cm.months[other]), b.months))
            idle = float((self.committed[row, months]
                          - self.used_committed[row, months].max(axis=1)).min())
            have = self.commit[other] - cm.lower[other]
            cut = min(math.ceil(gpus / step - 1e-9) * step,
                      math.floor(min(idle, have) / step + 1e-9) * step)
            if 0 < self.commit[other] - cut < cm.min_gpus[other]:
                cut = self.commit[other] if idle >= self.commit[other] else (
                    self.commit[other] - cm.min_gpus[other])
            if cut > 0:
                self.add_commit(other, -cut)
                gpus -= cut

    def trim_commitments(self) -> int:
        """Sign no GPU that is idle in every month its commitment is active: the latest
        starts give way first (a minimum order stays whole or goes entirely). Returns
        how many commitments were cut."""
        b = self.b
        cm = b.commitments
        cuts = 0
        busy = self.used_committed.max(axis=2)  # [pairs, M]
        for n in sorted(np.flatnonzero(self.commit > cm.lower + 0.5).tolist(),
                        key=lambda n: (-int(cm.start[n]), n)):
            pair = cm.committed_row[n]
            end = min(int(cm.start[n] + cm.months[n]), b.months)
            months = slice(int(cm.start[n]), end)
            idle = float((self.committed[pair, months] - busy[pair, months]).min()) \
                if end > cm.start[n] else self.commit[n]
            cut = min(math.floor(idle / cm.step[n] + 1e-9) * cm.step[n],
                      self.commit[n] - cm.lower[n])
            if cut <= 0:
                continue
            left = self.commit[n] - cut
            if 0 < left < cm.min_gpus[n]:
                cut, left = self.commit[n] - cm.min_gpus[n], cm.min_gpus[n]
                if cut <= 0:
                    continue
            self.add_commit(n, -cut)
            cuts += 1
        return cuts

    # -- the result --------------------------------------------------------------------------
    def cost(self) -> float:
        return self._cost(sum(p.cost for p in self.pools.values()))

    def running_cost(self) -> float:
        """cost(), the pools' part kept as they change rather than summed again (at
        1000x100x36 summing after every pool MIP halved the MIPs fix and optimize ran)."""
        return self._cost(self.pools_cost)

    def _cost(self, pools: float) -> float:
        """The plan's cost with its pools' costing `pools`."""
        b = self.b
        return (b.constant + float((self.commit * b.commitments.cost).sum()) + pools
                + self.idle_instances())

    def idle_instances(self, rows=None, m=None, k=None) -> float:
        """What the idle GPUs of part-used instances cost (pool plans count the GPUs in
        use): on `rows` of the offers sold in instances in (m, k), or everywhere."""
        b = self.b
        if not len(b.instance_offers):
            return 0.0
        if rows is None:
            used, size, rate, hd = (self.used_instances, b.instance_size[:, None, None],
                                    b.instance_rate[:, None, None], b.hd[None])
        else:
            used, size, rate, hd = (self.used_instances[rows, m, k], b.instance_size[rows],
                                    b.instance_rate[rows], b.hd[m, k])
        idle = np.ceil(used / size - 1e-9) * size - used
        return float((np.maximum(idle, 0.0) * rate * hd).sum())

    def solution(self) -> Solution:
        b = self.b
        sol = Solution()
        for (m, k, pool), plan in self.pools.items():
            for (w, site, j), units in plan.served.items():
                if units <= EPS:
                    continue
                wb = b.workloads[w]
                r, g, src = wb.sources[j]
                key = (wb.name, r, g, src, m, k)
                sol.supply[key] = sol.supply.get(key, 0.0) + units
                if len(wb.sites) > 1:
                    fkey = (wb.name, wb.sites[site], r, m, k)
                    sol.flow[fkey] = sol.flow.get(fkey, 0.0) + units
            for (r, g, src), n in plan.replicas.items():
                if n > 0:
                    sol.replicas[(pool, r, g, src, m, k)] = int(n)
            for (w, site), units in plan.unmet.items():
                if units > EPS:
                    wb = b.workloads[w]
                    key = (wb.name, wb.sites[site], m, k)
                    sol.unmet[key] = sol.unmet.get(key, 0.0) + units
        cm = b.commitments
        for n in np.flatnonzero(self.commit > 0):
            sol.commit[(cm.offer[n], int(cm.start[n]))] = int(round(self.commit[n]))
        for n in range(len(cm.offer)):
            sol.commit_upper[(cm.offer[n], int(cm.start[n]))] = float(cm.upper[n])
        return sol

    def rows(self) -> int:
        """About how many rows the plan's tables will have: one a workload and source
        serving it, one a pool's source in use (each month and segment; the sites a
        workload's source serves share its row)."""
        b = self.b
        return sum(len({(w, b.workloads[w].sources[j]) for w, _, j in p.served})
                   + len(p.replicas) for p in self.pools.values())

    def arcs(self) -> tuple[dict, dict]:
        """The arcs the plan serves (workload index → arrays (site, source, month,
        segment)) and its single-region pairs."""
        parts: dict[int, list] = defaultdict(list)
        for (m, k, _), plan in self.pools.items():
            for (w, site, j) in plan.served:
                parts[w].append((site, j, m, k))
        arcs = {w: tuple(np.array(col, dtype=np.int64) for col in zip(*rows))
                for w, rows in parts.items()}
        return arcs, dict(self.pairs)

    def pool_cost(self, pool: str, m: int, k: int, plan: PoolPlan) -> float:
        """What `plan` costs: its pay-as-you-go GPUs, egress and unmet penalty."""
        b = self.b
        hd = b.hd[m, k]
        cost = 0.0
        for (w, site, j), units in plan.served.items():
            cost += units * b.workloads[w].egress[j] * hd
        for (r, g, src), n in plan.replicas.items():
            if src != COMMITTED and n > 0:
                cost += (n * b.builder.gpus_per_replica[(pool, g)]
                         * b.builder.payg_offer[src].usd_per_gpu_hour * hd)
        for (w, site), units in plan.unmet.items():
            cost += units * b.workloads[w].penalty * hd
        return cost


def construct(blocks: Blocks, prices, commit: np.ndarray, wanted: dict, pairs: dict,
              hold: bool = False) -> Draft:
    """The plan of the wanted arcs (workload index → arrays (site, source, month,
    segment, units)) with `commit` signed (more where it takes that to serve demand).
    `pairs`: the single-region workloads' (region, GPU type) pairs.
    `hold`: the arcs are an LP's, within capacity; in each (month, segment) where they
    leave demand unmet, the capacity they give a pool is held for it until it is
    planned (`Draft.hold`). 200x40x24's cheapest-single-GPU-type plan, capacity short
    in its first month: pools planned first took, for what their arcs left over, the
    GPUs the LP gave later ones, which were then left unmet: 627 k units, its plan
    13.1 % above its bound; held, 1.54 %. Not where the LP serves all: there a pool
    that finds no room goes to a dearer source, not unmet, and holding made the
    LP-guided plan dearer (50x40x24 $56.16 M → $56.35 M, 200x40x24 $260.63 M →
    $261.10 M)."""
    draft = Draft(blocks, commit, pairs)
    priced = draft.priced = {w: unit_costs(wb, blocks, *prices)[1]
                             for w, wb in enumerate(blocks.workloads)}
    by_cell: dict[tuple[int, int], dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for w, (site, source, month, segment, units) in wanted.items():
        for i in range(len(site)):
            by_cell[(int(month[i]), int(segment[i]))][w].append(
                (int(site[i]), int(source[i]), float(units[i])))
    pools = sorted(draft.members)
    # [M, K] units of demand, to tell where the arcs leave some unmet (`hold`)
    level = sum(wb.level.sum(axis=0) for wb in blocks.workloads) if hold else None
    # the least flexible pools first: fewest sources they may use
    flexibility = {p: min(int(draft.allowed[w].sum()) for w in draft.members[p])
                   for p in pools}
    for m in range(blocks.months):
        for k in range(blocks.segments):
            wanted_here = by_cell.get((m, k), {})
            load = {p: sum(u for w in draft.members[p] for *_, u in wanted_here.get(w, ()))
                    for p in pools}
            order = sorted(pools, key=lambda p: (flexibility[p], -load[p], p))
            short = hold and (float(level[m, k]) - sum(load.values())
                              > 1e-6 * max(float(level[m, k]), 1.0))
            holds = draft.hold(wanted_here, order, m, k) if short else {}
            draft.held_cells += bool(holds)
            for p in order:
                draft.release(holds, p)
                plan = _plan_pool(draft, priced, p, m, k, wanted_here)
                if plan.served or plan.unmet:
                    draft.set(p, m, k, plan)
    draft.trim_commitments()
    return draft


def _plan_pool(draft: Draft, priced, pool: str, m: int, k: int, wanted) -> PoolPlan:
    b = draft.b
    ws = draft.members[pool]
    plan = PoolPlan()
    carried: dict[tuple, float] = defaultdict(float)  # source key → load in replicas
    served: dict[tuple, float] = defaultdict(float)
    short: list[tuple[int, int, float]] = []  # (w, site, units) not yet served
    need = {w: b.workloads[w].level[:, m, k].copy() for w in ws}
    used = defaultdict(float)  # GPUs this pool takes from each source key, this cell
    # 1. the wanted arcs, each source's load rounded up within its room
    by_key: dict[tuple, list] = defaultdict(list)
    for w in ws:
        wb = b.workloads[w]
        for site, j, units in wanted.get(w, ()):
            units = min(units, need[w][site])
            if units <= EPS or not draft.allowed[w][j]:
                continue
            need[w][site] -= units
            by_key[wb.sources[j]].append((w, site, j, units))
    for key in sorted(by_key, key=lambda x: (-sum(u for *_, u in by_key[x]), x)):
        arcs = by_key[key]
        w0, _, j0, _ = arcs[0]
        wb0 = b.workloads[w0]
        gpr = int(wb0.gpus_per_replica[j0])
        load = sum(u * b.workloads[w].gpus_per_unit[j] / gpr for w, _, j, u in arcs)
        # whole replicas the load fills: the fractions go to step 2, first into spare
        # room of replicas the pool already runs (200x40x24: 262.2 M -> 261.2 M;
        # rounding each load up took room other pools' loads had). A load that fills
        # none gets a replica of its own only if the pool has none yet: else it joins
        # their spare room too (200x40x24's LP-guided plan 261.24 M -> 261.05 M; a
        # pool's small off-peak loads spread over several sources each took a replica)
        want = math.floor(load + 1e-6)
        if want == 0 and not plan.replicas:
            want = 1
        fit = min(want, _whole(draft.room(wb0, j0, m, k) - used[key], gpr))
        if fit <= 0:
            short.extend((w, site, u) for w, site, _, u in arcs)
            continue
        used[key] += fit * gpr
        plan.replicas[key] = fit
        share = min(1.0, fit / load) if load > 0 else 1.0
        for w, site, j, u in arcs:
            served[(w, site, j)] += u * share
            if share < 1.0:
                short.append((w, site, u * (1.0 - share)))
        carried[key] = load * share
    # what no arc wanted (the LP left it unmet, or arcs fell short of the level)
    for w in ws:
        for site in np.flatnonzero(need[w] > EPS).tolist():
            short.append((w, site, float(need[w][site])))
    # 2. the rest at the other sources in reach, cheapest first; committed GPUs signed
    # for, if that is what it takes
    for w, site, units in sorted(short, key=lambda x: (-x[2], x[0], x[1])):
        for sign in (False, True):
            if units > EPS:
                units = _place(draft, priced, pool, w, site, units, m, k, plan, carried,
                               served, used, sign)
        if units > EPS:
            plan.unmet[(w, site)] = plan.unmet.get((w, site), 0.0) + units
    # spot beyond its share of what is served (demand left unmet shrinks what is
    # served) goes to the other sources, else unmet
    _spot_within_share(draft, priced, pool, m, k, plan, carried, served, used)
    plan.served = {key: u for key, u in served.items() if u > EPS}
    plan.cost = draft.pool_cost(pool, m, k, plan)
    return plan


def fill_unmet(draft: Draft) -> None:
    """Serve what pools left unmet from any source in reach with room where a replica is
    worth its cost (the pools' MIPs choose among a few sources only): demand is left
    unmet only where nothing in reach could serve it."""
    b = draft.b
    for (m, k, pool), plan in sorted(draft.pools.items()):
        if not any(u > EPS for u in plan.unmet.values()):
            continue
        new = PoolPlan(replicas=dict(plan.replicas), served=defaultdict(float, plan.served))
        carried: dict[tuple, float] = defaultdict(float)
        for (w, site, j), units in plan.served.items():
            wb = b.workloads[w]
            carried[wb.sources[j]] += units * wb.gpus_per_unit[j] / wb.gpus_per_replica[j]
        used: dict[tuple, float] = defaultdict(float)
        draft.set(pool, m, k, PoolPlan())  # the room its own replicas hold is its again
        for key in new.replicas:
            w, j = next((w, j) for w in draft.members[pool]
                        for j, src in enumerate(b.workloads[w].sources) if src == key)
            used[key] = new.replicas[key] * int(b.workloads[w].gpus_per_replica[j])
        for (w, site), units in sorted(plan.unmet.items()):
            left = _place(draft, draft.priced, pool, w, site, units, m, k, new, carried,
                          new.served, used, False)
            if left > EPS:
                new.unmet[(w, site)] = left
        # spot is held to its share of what is served, not of the demand: where what is
        # left unmet is what spot alone could serve, that spot goes to other sources or
        # stays unmet (a spot-only market with a 50 % share: all of it unmet, not served
        # on spot; the plan had failed the checker)
        _spot_within_share(draft, draft.priced, pool, m, k, new, carried, new.served, used)
        new.served = {key: u for key, u in new.served.items() if u > EPS}
        new.cost = draft.pool_cost(pool, m, k, new)
        draft.set(pool, m, k, new if new.cost < plan.cost else plan)


def _place(draft, priced, pool, w, site, units, m, k, plan, carried, served, used,
           sign: bool, spot: bool = True) -> float:
    """Serve `units` of w at `site` from its sources, cheapest first at the prices;
    returns what is left. `sign`: committed sources only, signing more GPUs where they
    have none. `spot`: whether spot may serve (within the workload's share). A new
    replica is only added where it serves what it can of the units for less than their
    penalty (what the checker asks of a plan)."""
    b = draft.b
    wb = b.workloads[w]
    usable = wb.reach[site] & draft.allowed[w]
    if sign:
        usable = usable & (wb.committed_row >= 0)
    if not spot:
        usable = usable & ~wb.spot
    cost = np.where(usable, priced[w][:, m, k], np.inf)
    # only sources that can take something: spare in the pool's replicas there, room
    # for a replica worth its cost, or (signing) committed GPUs to sign for
    hd = b.hd[m, k]
    room = draft.rooms(wb, m, k)
    spare = np.zeros(len(cost))
    for key, n in plan.replicas.items():
        j = wb.index_of.get(key)
        if j is not None:
            room[j] -= used[key]
            spare[j] = n - carried[key]
    worth_any = (np.minimum(units, wb.gpus_per_replica / wb.gpus_per_unit)
                 * (wb.penalty - wb.egress) > wb.gpus_per_replica * wb.price)
    can = np.isfinite(cost) & ((spare > 1e-9) | (worth_any & (
        (room >= wb.gpus_per_replica - 1e-9) | (sign & (wb.committed_row >= 0)))))
    cost = np.where(can, cost, np.inf)
    spot_room = _spot_room(wb, w, m, k, served)
    # first the spare room of replicas the pool runs (paid for: a unit there costs its
    # egress alone), then new replicas, cheapest first
    paid = np.flatnonzero(np.isfinite(cost) & (spare > 1e-9))
    paid = paid[np.argsort(wb.egress[paid], kind="stable")].tolist()
    order = chain(zip(paid, repeat(False)),
                  zip(np.argsort(cost, kind="stable").tolist(), repeat(True)))
    for j, grow in order:
        if units <= EPS or not np.isfinite(cost[j]):
            break
        limit = units if not wb.spot[j] else min(units, spot_room)
        if limit <= EPS:
            continue
        key = wb.sources[j]
        gpr = int(wb.gpus_per_replica[j])
        per_replica = gpr / wb.gpus_per_unit[j]  # units one replica carries
        spare_units = (plan.replicas.get(key, 0) - carried[key]) * per_replica
        use = min(limit, max(spare_units, 0.0))
        new = 0
        worth = grow and min(limit - use, per_replica) * (wb.penalty - wb.egress[j]) * hd \
            > gpr * wb.price[j] * hd
        if use < limit - EPS and worth:
            want = math.ceil((limit - use) / per_replica - 1e-9)
            if sign:
                short = want * gpr - (draft.room(wb, j, m, k) - used[key])
                if short > 0:
                    draft.sign(wb.committed_row[j], m, short)
            new = max(min(want, _whole(draft.room(wb, j, m, k) - used[key], gpr)), 0)
            use = min(limit, use + new * per_replica)
        if use <= EPS:
            continue
        if new:
            used[key] += new * gpr
            plan.replicas[key] = plan.replicas.get(key, 0) + new
        carried[key] += use / per_replica
        served[(w, site, j)] += use
        units -= use
        if wb.spot[j]:
            spot_room -= use
    return units


def _spot_room(wb, w, m, k, served) -> float:
    """Units of spot w may still take in (m, k) if all its demand were served."""
    if not wb.limited_spot:
        return math.inf
    spot = sum(u for (ww, _, j), u in served.items() if ww == w and wb.spot[j])
    return max(0.0, wb.spot_share * float(wb.level[:, m, k].sum()) - spot)


def _spot_within_share(draft: Draft, priced, pool: str, m: int, k: int, plan: PoolPlan,
                       carried, served, used) -> None:
    """Spot `served` beyond a workload's share of what it is served (`_spot_beyond_share`)
    moved to its other sources (`_place`, no spot), what none can take left unmet."""
    for w, site, units in _spot_beyond_share(draft, served, m, k):
        units = _place(draft, priced, pool, w, site, units, m, k, plan, carried, served,
                       used, False, spot=False)
        if units > EPS:
            plan.unmet[(w, site)] = plan.unmet.get((w, site), 0.0) + units


def _spot_beyond_share(draft: Draft, served: dict, m: int, k: int) -> list:
    """Spot units served beyond each workload's share of what it is served, taken off
    spot: [(workload, site, units)]."""
    b = draft.b
    out = []
    for w in sorted({key[0] for key in served}):
        wb = b.workloads[w]
        if not wb.limited_spot:
            continue
        spot = [(key, u) for key, u in served.items() if key[0] == w and wb.spot[key[2]]]
        total = sum(u for key, u in served.items() if key[0] == w)
        excess = sum(u for _, u in spot) - wb.spot_share * total
        if excess <= 1e-7:
            continue
        cut = excess / (1.0 - wb.spot_share)
        for key, u in sorted(spot, key=lambda x: (-x[1], x[0])):
            take = min(u, cut)
            served[key] -= take
            out.append((w, key[1], take))
            cut -= take
            if cut <= 1e-12:
                break
    return out


def _whole(room: float, gpr: int) -> float:
    """Whole replicas of `gpr` GPUs that fit in `room` GPUs (inf: no limit)."""
    return room if math.isinf(room) else max(int(math.floor(room + 1e-9)) // gpr, 0)
