"""Plans from the master LP: its arcs, its single-region choices, its commitments rounded."""

from __future__ import annotations

import math

import numpy as np

from planner.solve.decompose.dual import DualBound, plan_pair
from planner.solve.decompose.pricing import (
    INF,
    pair_month_costs,
    pair_range,
    pairs_by_cost,
)

# A commitment's LP GPUs are rounded up from this fraction on, down below it (what is
# short is signed for during construction where demand needs it): on the default
# scenario the plan from the LP cost $27.56 M rounding every fraction up, $27.52 M
# rounding half up, $27.50 M from 0.3, $27.66 M rounding down; 200x40x24: the same
# within 0.05 %.
ROUND_UP_FROM = 0.3


def master_arcs(dual: DualBound) -> dict:
    """Workload index → the arcs the master LP uses (site, source, month, segment,
    units); a single-region workload's the cells of its plan with the largest weight."""
    m = dual.master
    out: dict[int, list] = {}
    for w, site, source, month, segment, col in m.arcs:
        x = m.column_values(col, len(site))
        keep = x > 1e-9
        out.setdefault(w, []).append((site[keep], source[keep], month[keep], segment[keep],
                                      x[keep]))
    best: dict[int, tuple[float, object]] = {}
    for w, plan, col in m.plans:
        weight = float(m.column_values(col)[0])
        if weight > best.get(w, (1e-9, None))[0]:
            best[w] = (weight, plan)
    for w, (_, plan) in best.items():
        real = plan.cell_source >= 0
        out[w] = [(plan.cell_site[real], plan.cell_source[real], plan.cell_month[real],
                   plan.cell_segment[real], plan.cell_units[real])]
    return {w: tuple(np.concatenate([p[i] for p in parts]) for i in range(5))
            for w, parts in out.items()}


def choose_pairs(blocks, orders: dict[int, list[int]], claimed: dict | None = None,
                 reorder=None) -> dict[int, int]:
    """Single-region workload index → its pair: the first in its order of preference
    that still has room in every month for its busiest segment then, beside what the
    workloads chosen before it (the most demand first) and `claimed` ((region, GPU type)
    → GPUs by month) hold there, else the one short least in its worst month. Two runs
    that each fit a region alone are not both put there (the default scenario's
    pay-as-you-go variant left both unmet); a pair whose room comes after the first
    month (a commitment's lead time) is not chosen for a workload that needs it then (a
    burst workload held to 128 GPUs of on-demand where it needed 268 in month 0, the
    commitments there starting in month 1: $490 M of penalty). `reorder(w, order,
    claimed)`, if given, orders a workload's pairs again beside what is claimed before
    it (`FreeFirst`)."""
    claimed = {k: np.array(v, dtype=float) for k, v in (claimed or {}).items()}
    out = {}
    for w in sorted(orders, key=lambda w: (-float(blocks.workloads[w].level.sum()), w)):
        wb = blocks.workloads[w]

        order = orders[w] if reorder is None else reorder(w, orders[w], claimed)
        if not order:
            continue
        need = {p: peak_gpus(wb, p) for p in order}
        # [M] room left less what the workload needs, month by month
        spare = {p: pair_room(blocks, wb, p) - claimed.get(wb.pairs[p], 0.0) - need[p]
                 for p in order}
        fit = [p for p in order if (spare[p] >= 0).all()]
        pair = fit[0] if fit else max(order, key=lambda p: (float(spare[p].min()), -p))
        out[w] = pair
        claimed[wb.pairs[pair]] = claimed.get(wb.pairs[pair], 0.0) + need[pair]
    return out


class FreeFirst:
    """Single-region workloads' pairs cheapest first at first prices, GPUs that cost
    nothing counted only as far as they go. At first prices existing contracts' GPUs and
    commitments already signed are free (`first_prices`), so a pair with a few of them
    looked free to a workload that needs many more, and the plan paid on-demand rates
    there beside idle commitments elsewhere (an audit's stress test: $0.29 M of its
    $1.44 M plan). A pair's cost is taken month by month: the share of the workload's
    GPUs that the free ones still cover, less those claimed before it, at first prices,
    the rest as if those GPUs were not there."""

    def __init__(self, blocks, prices):
        self.blocks = blocks
        y_payg, y_committed = prices
        self.free = free_gpus(blocks)
        self.costless = y_committed.max(axis=2) <= 0  # [rows, M]: GPUs there cost nothing
        paid = (y_payg, np.where(self.costless[:, :, None], INF, y_committed))
        # workload → (pair → [M] cost at first prices, the same with no free GPUs)
        self.costs = {w: (pair_month_costs(wb, blocks, prices),
                          pair_month_costs(wb, blocks, paid))
                      for w, wb in enumerate(blocks.workloads) if wb.single_region}

    def orders(self) -> dict[int, list[int]]:
        """Each workload's pairs, for `choose_pairs` (`reorder` ranks them)."""
        return {w: list(free) for w, (free, _) in self.costs.items()}

    def reorder(self, w: int, order: list[int], claimed: dict) -> list[int]:
        """`order` cheapest first, free GPUs counted as far as they go beside `claimed`."""
        wb = self.blocks.workloads[w]
        free, paid = self.costs[w]

        def cost(p: int) -> float:
            start, end = pair_range(wb, p)
            row = int(wb.committed_row[start:end].max(initial=-1))
            if row < 0:
                return float(free[p].sum())
            need = peak_gpus(wb, p)
            left = self.free[row] - claimed.get(wb.pairs[p], 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(self.costless[row] & (need > 0),
                                 np.clip(left / need, 0.0, 1.0), 1.0)
            return float((share * free[p] + (1.0 - share) * paid[p]).sum())

        return sorted(order, key=lambda p: (cost(p), p))


def free_gpus(blocks) -> np.ndarray:
    """[rows, M] GPUs of each (region, GPU type) whose cost is paid whatever the plan:
    existing contracts' and commitments already decided (`Commitments.lower`)."""
    cm = blocks.commitments
    free = np.array(blocks.existing, dtype=float)
    np.add.at(free, cm.committed_row, cm.active_months(blocks.months) * cm.lower[:, None])
    return free


def master_orders(dual: DualBound, workloads) -> dict[int, list[int]]:
    """Each single-region workload's pairs: those its plans weigh most in the master
    first, then the rest cheapest first at the master's prices."""
    m = dual.master
    weight: dict[int, dict[int, float]] = {w: {} for w in workloads}
    for w, plan, col in m.plans:
        pair = plan_pair(dual.blocks.workloads[w], plan)
        if w in weight and pair is not None:
            weight[w][pair] = weight[w].get(pair, 0.0) + float(m.column_values(col)[0])
    orders = {}
    for w in workloads:
        wb = dual.blocks.workloads[w]
        by_cost = pairs_by_cost(wb, dual.blocks, (m.y_payg, m.y_committed))
        weighed = sorted((p for p, x in weight[w].items() if x > 1e-9),
                         key=lambda p: (-weight[w][p], p))
        orders[w] = weighed + [p for p in by_cost if p not in weighed]
    return orders


def held_claims(dual: DualBound) -> dict:
    """(region, GPU type) → GPUs by month the held single-region workloads' busiest
    segments take."""
    claimed: dict = {}
    for w, pair in dual.pairs.items():
        wb = dual.blocks.workloads[w]
        claimed[wb.pairs[pair]] = claimed.get(wb.pairs[pair], 0.0) + peak_gpus(wb, pair)
    return claimed


def master_pairs(dual: DualBound) -> dict:
    """The next single-region workloads to hold to a pair (`choose_pairs` on the
    master's preferences), one per (region, GPU type): the next LP shows what is left."""
    blocks = dual.blocks
    pending = [w for w, wb in enumerate(blocks.workloads)
               if wb.single_region and w not in dual.pairs and wb.pairs]
    chosen = choose_pairs(blocks, master_orders(dual, pending), held_claims(dual))
    first: dict[tuple, int] = {}
    for w in sorted(chosen, key=lambda w: (-float(blocks.workloads[w].level.sum()), w)):
        first.setdefault(blocks.workloads[w].pairs[chosen[w]], w)
    return {w: chosen[w] for w in sorted(first.values())}


def all_pairs(dual: DualBound) -> dict:
    """Every single-region workload's pair: those held, and for the rest (the clock
    stopped the holding) their `choose_pairs` on the master's preferences."""
    blocks = dual.blocks
    pending = [w for w, wb in enumerate(blocks.workloads)
               if wb.single_region and w not in dual.pairs and wb.pairs]
    return {**dual.pairs,
            **choose_pairs(blocks, master_orders(dual, pending), held_claims(dual))}


def pair_room(blocks, wb, pair: int) -> np.ndarray:
    """[M] the most GPUs a single-region workload could have at `pair` in each month:
    its capped offers' max_gpus from their first month, the existing GPUs, and the
    max_gpus of the commitment offers whose terms can be active then (inf where an offer
    in use then has no limit)."""
    start, end = pair_range(wb, pair)
    cm = blocks.commitments
    months = np.arange(blocks.months)
    room = np.zeros(blocks.months)
    for j in range(start, end):
        if wb.committed_row[j] >= 0:
            row = wb.committed_row[j]
            mine = np.flatnonzero(cm.committed_row == row)
            active = cm.active_months(blocks.months, mine)  # [n, M]
            caps = cm.cap_row[mine]  # each commitment's offer's cap row (−1: no cap)
            room += blocks.existing[row]
            room[active[caps < 0].any(axis=0)] = np.inf
            for cap in np.unique(caps[caps >= 0]).tolist():
                room += np.where(active[caps == cap].any(axis=0), float(cm.caps[cap]), 0.0)
        elif wb.payg_row[j] >= 0:
            room += np.where(months >= wb.first[j], float(blocks.payg_cap[wb.payg_row[j]]),
                             0.0)
        else:
            room[months >= wb.first[j]] = np.inf
    return room


def peak_gpus(wb, pair: int) -> np.ndarray:
    """[M] GPUs a single-region workload's busiest segment of each month needs at
    `pair`, in whole replicas of its most efficient source there."""
    start, end = pair_range(wb, pair)
    peak = wb.level.sum(axis=0).max(axis=1)  # [M]
    gpr = wb.gpus_per_replica[start:end, None]
    return (np.ceil(peak[None] * wb.gpus_per_unit[start:end, None] / gpr - 1e-9)
            * gpr).min(axis=0)


def rounded_commitments(dual: DualBound) -> np.ndarray:
    """The master's commitments in whole GPUs: up from ROUND_UP_FROM of a GPU (what the
    plan does not use is trimmed after), a minimum order met when the LP signs at least
    half of it, else nothing; within each offer's monthly max_gpus (the latest starts
    give way)."""
    cm = dual.blocks.commitments
    lp = dual.master.values[:dual.master.n_commit]
    q = np.floor(lp / cm.step + 1.0 - ROUND_UP_FROM) * cm.step  # whole instances
    small = (q > 0) & (q < cm.min_gpus)
    q[small] = np.where(lp[small] >= cm.min_gpus[small] / 2, cm.min_gpus[small], 0.0)
    q = np.clip(np.maximum(q, cm.lower), cm.lower, cm.upper)
    for cap, active in cm.cap_rows(dual.blocks.months):
        over = q[active].sum() - cap
        for n in sorted(active.tolist(), key=lambda n: -int(cm.start[n])):
            if over <= 0:
                break
            cut = min(math.ceil(over / cm.step[n]) * cm.step[n], q[n] - cm.lower[n])
            if 0 < q[n] - cut < cm.min_gpus[n]:
                cut = q[n] - cm.lower[n]
            q[n] -= cut
            over -= cut
    return q
