"""Whole replicas in a single-region workload's block: a bound above the LP relaxation.

The Lagrangian function prices each block's LP relaxation, in which replicas are
fractional. A single-region workload's block is its whole horizon on one (region, GPU
type) pair, and at given capacity prices its months and segments are independent: in
each, any plan serves S ≤ L of the level L in reach of the pair's region (the rest
unmet at the penalty P a unit) on n_j whole replicas of the pair's sources, j a
replica of C_j dollars at the prices (its GPUs' price and capacity price: egress
apart) carrying a_j units, each unit served paying egress e. Then

    Σ_j C_j n_j ≥ ρ·S          (ρ = min_j C_j / a_j: the LP relaxation's rate)
    Σ_j C_j n_j ≥ C·q          (C = min_j C_j, q = Σ_j n_j ≥ ⌈S / a⌉, a = max_j a_j)

so the cell costs at least f(q) = P·(L − S_q) + e·S_q + max(ρ·S_q, C·q) with
S_q = min(q·a, L), least over q at 0, ⌈L/a⌉ − 1 or ⌈L/a⌉ (f is linear in q below
⌈L/a⌉). That floor and the LP value (which keeps the spot-share rule the floor leaves
out) both bound the cell's whole-replica optimum, so their larger does; the block's is
the least over pairs of the cells' sum. It lifts the bound where a replica is large
against the demand it serves: the default scenario's training workloads, whose LP
relaxation serves 0.4 of a replica in some months, lift it by $53 k (measured at the LP
relaxation's prices: the whole model without its capacity rows, by HiGHS per part).

A workload that shares its pool's replicas keeps its LP value: a replica it rounds up
may carry another workload's load.
"""

from __future__ import annotations

import numpy as np

from planner.solve.decompose.blocks import Blocks, WorkloadBlocks
from planner.solve.decompose.pricing import _best_pairs, pair_range, unit_costs

INF = np.inf


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
    replica = (priced - egress) * units[:, None, None]  # [J, M, K]; inf before first
    options = _best_pairs(wb, priced, penalty)  # (value, pair, plan), cheapest first
    best = INF
    for _, i, plan in options:
        cells = plan[0]  # the pair's LP value per cell [M, K]
        start, end = pair_range(wb, i)
        reached = wb.reach[:, start:end].any(axis=1)
        floor = _cell_floor(wb.level[reached].sum(axis=0), penalty,
                            replica[start:end], units[start:end], egress[start:end])
        unreached = (wb.level[~reached] * penalty[None]).sum(axis=0)
        best = min(best, float(np.maximum(cells, floor + unreached).sum()))
    return options[0][0], best


def _cell_floor(level: np.ndarray, penalty: np.ndarray, replica: np.ndarray,
                units: np.ndarray, egress: np.ndarray) -> np.ndarray:
    """Per cell [M, K]: the least of f(0), f(⌈L/a⌉ − 1), f(⌈L/a⌉) (module docstring),
    from the level L in reach, the penalty, and the sources' replica costs [j, M, K],
    units a replica [j] and egress a unit [j, M, K] (sources not yet usable: inf)."""
    usable = np.isfinite(replica)
    cost = np.where(usable, replica, INF).min(axis=0)  # C
    rate = np.where(usable, replica / units[:, None, None], INF).min(axis=0)  # ρ
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
