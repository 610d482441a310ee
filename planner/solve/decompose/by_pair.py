"""The Lagrangian bound split the other way: by (region, GPU type) pair, demand priced.

planner.solve.decompose.master prices the capacity rows (y) and the model falls apart by
workload. Price the demand rows instead — each demand cell at π, each spot-share row at
τ: the restricted master's duals — keep every capacity row, and it falls apart by
(region, GPU type) pair: what can each pair's sources earn serving demand at π, within
their capacity?

    L'(π) = constant + Σ_cells level · (π + min(0, penalty − π))
            + Σ_arcs of uncapped offers level · min(0, rc)
            + Σ_(capped offer, month, segment) min Σ rc · x  within max_gpus
            + Σ_committed pairs  min Σ rc · x + Σ cost · commit  within their commitments
            + Σ_single-region workloads  their block at the prices y

with rc = cost − π − τ · (the arc's spot-share coefficient) per unit, 0 ≤ x ≤ level.
A capped offer's month and segment is a fractional knapsack; a committed pair's months
and segments share its commitments, a small LP per pair. Single-region workloads keep
their own block (one pair over the horizon) at capacity prices y, the master's; the GPUs
they may put in a row are sold to them at y, up to the most they could use there. Any
π, τ, y give a lower bound on every plan (weak duality, as L(y)).

Why: a restricted master lacks the arcs that would fill many of its rows and prices
them 0; L(y) then lets every block in reach use their GPUs for free, however few there
are (200x40x24, round 1: 2.4 M GPUs over supply). Here those arcs earn at most what the
rows hold. And the pairs' LP duals are capacity prices y' at which L(y') is better still:
200x40x24, master rounds 5 and 10: L at the master's duals (best so far) 221.9 / 251.1 M,
L'(π) 241.4 / 251.4 M, L(y') 249.7 / 252.0 M; the master's LP 253.6 / 253.3 M.
"""

from __future__ import annotations

import numpy as np

from planner.solve.decompose.blocks import Blocks
from planner.solve.decompose.pricing import Rows, block_usage, unit_costs
from planner.solve.highs import new_highs

# Arcs of a row that earn within this fraction of each other per GPU share one column
# (`_grouped`): 1000x100x36's first master round left 33 M arcs with a negative reduced
# cost, whose pairs' LPs took 534 s one by one.
EARNINGS_STEP = 0.005
# Arcs gathered, workload after workload, are grouped again whenever they exceed
# MERGE_AT: the memory they take stays that of their groups.
MERGE_AT = 2_000_000


def pair_split(blocks: Blocks, rows: Rows, master, y) -> tuple[float, tuple]:
    """L'(π) at `master`'s last duals (single-region blocks at `y`, (y_payg,
    y_committed)), and capacity prices y' from the pairs' problems: their rows' duals."""
    b = blocks
    value, arcs, single = _cells(b, rows, master, y)
    prices = np.zeros(rows.count)
    y_rows = np.concatenate([y[0].ravel(), y[1].ravel()])
    # the GPUs single-region workloads may put in a row: sold to them at y
    sold = np.flatnonzero((single > 0) & (y_rows > 0))
    key, total, gpus = _grouped(*(np.concatenate([a, s]) for a, s in
                                  zip(arcs, (sold, -y_rows[sold] * single[sold],
                                             single[sold]))))
    payg = key < rows.payg
    value += _knapsacks(b, rows, key[payg], total[payg], gpus[payg], prices)
    value += _pairs(b, rows, key[~payg] - rows.payg, total[~payg], gpus[~payg], prices)
    shape = (-1, rows.months, rows.segments)
    return value, (prices[:rows.payg].reshape(shape), prices[rows.payg:].reshape(shape))


def _cells(b: Blocks, rows: Rows, master, y):
    """The demand cells' part of L'(π) (their π, unmet demand, arcs of offers without a
    capacity row, single-region blocks at y), the arcs into capacity rows whose reduced
    cost is negative, as (row key, rc · level, GPUs at level), and per row the most GPUs
    the single-region workloads could put there."""
    months = np.arange(b.months)[None, :, None]
    segments = np.arange(b.segments)[None, None, :]
    zero = (np.zeros_like(y[0]), np.zeros_like(y[1]))
    value = b.constant
    parts = []
    single = np.zeros(rows.count)
    for w, wb in enumerate(b.workloads):
        keys = rows.key(wb.payg_row[:, None, None], wb.committed_row[:, None, None],
                        months, segments)  # [J, M, K]
        if wb.single_region:
            value += block_usage(wb, b, rows, *y)[0]
            sources = np.arange(len(wb.sources))[:, None, None]
            most = wb.gpus(sources, months, segments) * wb.level.sum(axis=0)[None]
            mine = np.zeros(rows.count)
            has = keys >= 0
            np.maximum.at(mine, keys[has], most[has])
            single += mine
            continue
        _, cost = unit_costs(wb, b, *zero)  # true cost per unit, inf before a source starts
        pi = master.demand_duals(w)
        tau = master.spot_duals(w)
        value += float((wb.level * (pi + np.minimum(0.0, wb.penalty * b.hd[None] - pi))).sum())
        if tau is not None:  # a ≤ row's multiplier: ≤ 0 (HiGHS's sign), whatever its noise
            share = np.where(wb.spot, 1.0 - wb.spot_share, -wb.spot_share)
            cost = cost - share[:, None, None] * np.minimum(tau, 0.0)[None]
        mine = []
        for s in range(wb.level.shape[0]):
            rc = np.where(wb.arcs[s][:, None, None], cost, np.inf) - pi[s][None]
            j, m, k = np.nonzero((rc < 0) & (wb.level[s] > 0)[None])
            total = rc[j, m, k] * wb.level[s, m, k]
            key = keys[j, m, k]
            free = key < 0
            value += float(total[free].sum())
            row = ~free
            mine.append((key[row].astype(np.int32), total[row],
                         wb.level[s, m[row], k[row]] * wb.gpus(j[row], m[row], k[row])))
        if mine:
            parts.append(_grouped(*(np.concatenate([p[i] for p in mine]) for i in range(3))))
            if sum(len(p[0]) for p in parts) > MERGE_AT:
                parts = [_merged(parts)]
    return value, _merged(parts), single


def _merged(parts):
    """Parts of (row key, rc · level, GPUs) as one, grouped (`_grouped`)."""
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
    return _grouped(*(np.concatenate([p[i] for p in parts]) for i in range(3)))


def _grouped(key, total, gpus):
    """The arcs of each row merged where they earn within EARNINGS_STEP of each other
    per GPU, a group earning what its best arc earns: fewer columns for the pairs' LPs,
    and each row's problem only relaxed (it may earn more, never less), so the bound
    stays a bound."""
    if not len(key):
        return key, total, gpus
    per_gpu = total / gpus  # < 0: each arc's reduced cost per GPU
    step = np.floor(np.log(-per_gpu) / np.log1p(EARNINGS_STEP)).astype(np.int64)
    step -= step.min()
    group = key.astype(np.int64) * (int(step.max()) + 1) + step
    order = np.argsort(group, kind="stable")
    group, per_gpu, gpus = group[order], per_gpu[order], gpus[order]
    first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    gpus = np.add.reduceat(gpus, first)
    per_gpu = np.minimum.reduceat(per_gpu, first)
    return key[order][first], per_gpu * gpus, gpus


def _knapsacks(b: Blocks, rows: Rows, key, total, gpus, prices) -> float:
    """Capped offers' rows: each a fractional knapsack of its arcs (most earned per GPU
    first) within max_gpus; a full row's price is what its last arc earns per GPU."""
    if not len(key):
        return 0.0
    per_gpu = total / gpus
    order = np.lexsort((per_gpu, key))
    key, gpus, per_gpu = key[order], gpus[order], per_gpu[order]
    ends = np.cumsum(gpus)
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    before_row = np.repeat(np.r_[0.0, ends[first[1:] - 1]], np.diff(np.r_[first, len(key)]))
    before = ends - gpus - before_row  # the row's GPUs taken before this arc
    cap = b.payg_cap[key // (rows.months * rows.segments)]
    taken = np.clip(cap - before, 0.0, gpus)
    last = (before < cap) & (before + gpus >= cap)
    prices[key[last]] = -per_gpu[last]
    return float((per_gpu * taken).sum())


def _pairs(b: Blocks, rows: Rows, key, total, gpus, prices) -> float:
    """Committed pairs: each an LP over its arcs and commitments (`_pair_lp`); the
    duals of its rows are their prices. −inf if an LP ends other than optimal (no bound
    then; the prices of the others still stand, its rows at 0)."""
    cm = b.commitments
    per = rows.months * rows.segments
    order = np.argsort(key // per, kind="stable")
    key, total, gpus = key[order], total[order], gpus[order]
    bounds = np.searchsorted(key // per, np.arange(len(b.committed_pairs) + 1))
    active = cm.active_months(b.months)
    value = 0.0
    for pair in range(len(b.committed_pairs)):
        lo, hi = bounds[pair], bounds[pair + 1]
        mine = np.flatnonzero(cm.committed_row == pair)
        if lo == hi:  # nothing to earn: the commitments at their least
            value += float((cm.cost[mine] * cm.lower[mine]).sum())
            continue
        cell = key[lo:hi] - pair * per
        used = np.unique(cell)
        pair_value, duals = _pair_lp(b, rows, pair, mine, active[mine], cell, used,
                                     total[lo:hi], gpus[lo:hi])
        value += pair_value
        prices[rows.payg + pair * per + used] = np.maximum(-duals, 0.0)
    return value


def _pair_lp(b: Blocks, rows: Rows, pair: int, mine, active, cell, used, total, gpus):
    """One committed pair's LP: columns its arcs (in GPUs, at their reduced cost per
    GPU) and its commitments `mine` (`active[i, month]`); a row per month and segment
    `used` (Σ GPUs − Σ active commitments ≤ existing) and per capped commitment offer
    and month (Σ active commitments ≤ max_gpus). Its value, and the first rows' duals."""
    import highspy

    cm = b.commitments
    n_arcs, n = len(cell), len(cell) + len(mine)
    row_of = np.full(rows.months * rows.segments, -1)
    row_of[used] = np.arange(len(used))
    i, r = np.nonzero(active[:, used // rows.segments])  # commitment i there in row r
    row, col = [row_of[cell], r], [np.arange(n_arcs), n_arcs + i]
    coef = [np.ones(n_arcs), -np.ones(len(i))]
    upper = list(b.existing[pair, used // rows.segments])
    for cap, on in cm.cap_rows(b.months, mine):
        row.append(np.full(len(on), len(upper)))
        col.append(n_arcs + on)
        coef.append(np.ones(len(on)))
        upper.append(cap)
    row, col, coef = (np.concatenate(x) for x in (row, col, coef))
    order = np.lexsort((col, row))
    row, col, coef = row[order], col[order], coef[order]
    h = new_highs()
    for option, setting in (("threads", 1), ("random_seed", 0), ("presolve", "off")):
        # presolve took 85 % of the time (200x40x24: 8.4 s with it, 1.3 s without)
        h.setOptionValue(option, setting)
    h.addCols(n, np.concatenate([total / gpus, cm.cost[mine]]),
              np.concatenate([np.zeros(n_arcs), cm.lower[mine]]),
              np.concatenate([gpus, cm.upper[mine]]), 0,
              np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
    h.addRows(len(upper), np.full(len(upper), -highspy.kHighsInf), np.array(upper),
              len(col), np.searchsorted(row, np.arange(len(upper))).astype(np.int32),
              col.astype(np.int32), coef)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return -np.inf, np.zeros(len(used))
    return (h.getInfo().objective_function_value,
            np.asarray(h.getSolution().row_dual)[:len(used)])
