"""Whole replicas in the bound: two ways above the LP relaxation, in which replicas are
fractional.

1. Small loads (`small_load_fill`). Where a pool's whole demand in reach of a source,
   in a month and segment, is less than one replica — a share f < 1 of one — any load
   it puts there, at most f of a replica, still takes a whole one: replicas ≥ load ÷ f
   is valid for whole replicas (HiGHS's presolve finds these rows on the whole model).
   The bound's blocks count each unit's GPUs there 1/f times, in its cost and in its
   capacity row (`WorkloadBlocks.gpus`): the master LP and the Lagrangian function are
   then those of the model with these rows, still under every plan. A block of merged
   demand sites (planner.solve.decompose.kinds) takes the largest f of its members'
   pools. A block that left out a source the LP never needs (`blocks._arcs`: another
   serves a unit no dearer) takes none unless that source is still dearer a unit than
   a dominator kept, each counted at its share (`_still_dominated`): in whole replicas
   the source left out can be the cheaper one, and lifting the one kept would lift the
   bound above the optimum.

2. Whole replicas in a single-region workload's block (`whole_replica_gain`). Its block
   is its whole horizon on one (region, GPU type) pair, and at given capacity prices its
   months and segments are independent: in each, any plan serves S ≤ L of the level L in
   reach of the pair's region (the rest unmet at the penalty P a unit) on n_j whole
   replicas of the pair's sources, j a replica of C_j dollars at the prices (its GPUs'
   price and capacity price: egress apart) carrying a_j units, each unit served paying
   egress e. Then

       Σ_j C_j n_j ≥ ρ·S          (ρ: the least cost a unit, as the relaxation counts it)
       Σ_j C_j n_j ≥ C·q          (C = min_j C_j, q = Σ_j n_j ≥ ⌈S / a⌉, a = max_j a_j)

   so the cell costs at least f(q) = P·(L − S_q) + e·S_q + max(ρ·S_q, C·q) with
   S_q = min(q·a, L), least over q at 0, ⌈L/a⌉ − 1 or ⌈L/a⌉ (f is linear in q below
   ⌈L/a⌉). That floor and the relaxation's value (which keeps the spot-share rule the
   floor leaves out) both bound the cell's whole-replica optimum, so their larger does;
   the block's is the least over pairs of the cells' sum. It lifts the bound where a
   replica is large against the demand it serves: the default scenario's training
   workloads, whose LP relaxation serves 0.4 of a replica in some months, lift it by
   $53 k (measured at the LP relaxation's prices: the whole model without its capacity
   rows, by HiGHS per part).

   A workload that shares its pool's replicas keeps its relaxation's value: a replica it
   rounds up may carry another workload's load.

Whole replicas in pools' blocks lift nothing more at the bound's prices: measured at
200x40x24, 80 (month, segment) cells of pools solved whole by HiGHS are within $5 of
their LP (a cell's many sources, of several replica sizes at near-equal cost per unit,
fill any load almost exactly).
"""

from __future__ import annotations

import copy

import numpy as np

from planner.solve.decompose.blocks import Blocks, WorkloadBlocks
from planner.solve.decompose.kinds import Kinds
from planner.solve.decompose.pricing import _best_pairs, pair_range, unit_costs

INF = np.inf


def small_load_fill(kinds: Kinds) -> Blocks:
    """The bound's blocks (`kinds.blocks`, copied) with each source's `fill` where the
    pool's whole demand in reach fills less than one replica (module docstring, 1.)."""
    loads = _pool_loads(kinds.original)
    out = copy.copy(kinds.blocks)
    out.workloads = []
    for wb, members in zip(kinds.blocks.workloads, kinds.members):
        pools = sorted({kinds.original.workloads[w].pool for w, _ in members})
        # merged sites of several pools: the largest share, valid for each of them
        share = np.stack([np.max([loads[(p, source)] for p in pools], axis=0)
                          for source in wb.sources])
        wb = copy.copy(wb)
        fill = _share_to_fill(share)
        if fill is not None and all(_still_dominated(kinds.original.workloads[w], site, wb,
                                                     fill, loads) for w, site in members):
            wb.fill = fill
        out.workloads.append(wb)
    return out


def _share_to_fill(share: np.ndarray) -> np.ndarray | None:
    """The fill of a share of one replica (1 where the share is 0 or 1 or more), or None
    where no share is under 1."""
    if not ((share > 0) & (share < 1)).any():
        return None
    return np.where(share > 0, np.minimum(share, 1.0), 1.0)


def _still_dominated(wb: WorkloadBlocks, site: int | None, kind: WorkloadBlocks,
                     fill: np.ndarray, loads: dict) -> bool:
    """Whether every source that `wb` (an original workload) left out of its arcs at
    `site` (None: at any of its sites, a workload kept whole) as the LP never needs it
    (`blocks._arcs`: an uncapped on-demand source serves a unit no dearer) is still
    dominated once small loads take whole replicas: a dominator kept in `kind`, usable
    no later, costs no more a unit with its GPUs counted 1/fill times (`kind`'s `fill`)
    than the source left out with its own pool's fill, in every month and segment.
    Else the fill may not be taken: in whole replicas the source left out can be the
    cheaper one (a spot-free market, 4 units: a 5-unit replica at $50 where the 10-unit
    one costs $100, the same a unit), and lifting the kept source would lift the bound
    above the optimum."""
    def unit_cost(j: int, fill_j) -> np.ndarray:  # [M, K] a unit from source j
        return wb.price[j] * wb.gpus_per_unit[j] / fill_j + wb.egress[j]

    free = (wb.committed_row < 0) & (wb.payg_row < 0) & ~wb.spot  # uncapped on-demand
    sites = range(wb.reach.shape[0]) if site is None else [site]
    for s in sites:
        kept = np.flatnonzero(wb.arcs[s] & free)
        for j in np.flatnonzero(wb.reach[s] & ~wb.arcs[s]).tolist():
            own = _share_to_fill(loads[(wb.pool, wb.sources[j])])
            left_out = unit_cost(j, 1.0 if own is None else own)
            if not any((unit_cost(d, fill[kind.index_of[wb.sources[d]]]) <= left_out).all()
                       for d in kept.tolist() if wb.first[d] <= wb.first[j]):
                return False
    return True


def _pool_loads(blocks: Blocks) -> dict:
    """(pool, source) → [M, K] the replicas the pool's demand in reach of the source
    would fill there, all of it served there."""
    loads: dict = {}
    for wb in blocks.workloads:
        per_replica = wb.gpus_per_unit / wb.gpus_per_replica  # replicas a unit fills
        fills = np.einsum("sj,smk->jmk", wb.reach.astype(float), wb.level)
        fills *= per_replica[:, None, None]
        for j, source in enumerate(wb.sources):
            key = (wb.pool, source)
            loads[key] = loads[key] + fills[j] if key in loads else fills[j]
    return loads


def whole_replica_gain(blocks: Blocks, y_payg: np.ndarray, y_committed: np.ndarray) -> float:
    """How far whole replicas lift the Lagrangian function at prices y above its LP
    value (≥ 0): Σ over single-region workloads not sharing a pool of the block's
    floor less its LP value."""
    members = blocks.builder.members  # pool → its workloads
    gain = 0.0
    for wb in blocks.workloads:
        if wb.single_region and wb.pairs and len(members[wb.pool]) == 1:
            lp, floor = single_region_floor(wb, blocks, y_payg, y_committed)
            gain += max(0.0, floor - lp)
    return gain


def single_region_floor(wb: WorkloadBlocks, blocks: Blocks, y_payg: np.ndarray,
                        y_committed: np.ndarray) -> tuple[float, float]:
    """A single-region workload's block at the prices: its LP value (the least over
    pairs, as `_best_pairs` prices them) and its whole-replica floor (the least over
    pairs of each cell's larger of LP value and floor)."""
    _, priced = unit_costs(wb, blocks, y_payg, y_committed)
    penalty = wb.penalty * blocks.hd  # [M, K] dollars a unit left unmet
    egress = wb.egress[:, None, None] * blocks.hd[None]  # [J, M, K] a unit served
    units = wb.gpus_per_replica / wb.gpus_per_unit  # [J] a replica carries
    rate = priced - egress  # [J, M, K] a unit, as the relaxation counts it; inf before first
    # a replica's own cost: the relaxation counts small loads' GPUs 1/fill times
    replica = rate * units[:, None, None] * (1.0 if wb.fill is None else wb.fill)
    options = _best_pairs(wb, priced, penalty)  # (value, pair, plan), cheapest first
    best = INF
    for _, i, plan in options:
        cells = plan[0]  # the pair's LP value per cell [M, K]
        start, end = pair_range(wb, i)
        reached = wb.reach[:, start:end].any(axis=1)
        floor = _cell_floor(wb.level[reached].sum(axis=0), penalty, replica[start:end],
                            rate[start:end], units[start:end], egress[start:end])
        unreached = (wb.level[~reached] * penalty[None]).sum(axis=0)
        best = min(best, float(np.maximum(cells, floor + unreached).sum()))
    return options[0][0], best


def _cell_floor(level: np.ndarray, penalty: np.ndarray, replica: np.ndarray,
                rate: np.ndarray, units: np.ndarray, egress: np.ndarray) -> np.ndarray:
    """Per cell [M, K]: the least of f(0), f(⌈L/a⌉ − 1), f(⌈L/a⌉) (module docstring),
    from the level L in reach, the penalty, and the sources' replica costs and costs a
    unit (egress apart) [j, M, K], units a replica [j] and egress a unit [j, M, K]
    (sources not yet usable: inf)."""
    usable = np.isfinite(replica)
    cost = np.where(usable, replica, INF).min(axis=0)  # C
    rate = np.where(usable, rate, INF).min(axis=0)  # ρ
    size = np.where(usable, units[:, None, None], 0.0).max(axis=0)  # a
    e = np.where(usable, egress, INF).min(axis=0)
    floor = level * penalty  # f(0): everything unmet
    can = (level > 0) & (size > 0) & np.isfinite(cost)
    top = np.ceil(np.where(can, level / np.where(can, size, 1.0), 0.0) - 1e-9)
    for q in (top - 1, top):
        ok = can & (q >= 1)
        served = np.minimum(q * size, level)
        with np.errstate(invalid="ignore"):
            f = (penalty * (level - served) + e * served
                 + np.maximum(rate * served, cost * q))
        floor = np.where(ok, np.minimum(floor, f), floor)
    return floor
