"""Each block's best plan at given capacity prices: its LP relaxation, in closed form.

With capacity priced (y ≥ 0 dollars per GPU of a row), a block of workload w in month m
and segment k is a small LP: each demand site s takes its level L_s from sources in its
reach, at a cost per unit c_j = true cost + y_row(j) · GPUs per unit, or leaves it unmet at
the penalty P. Replicas are continuous in the LP, so a pool's workloads price apart. Its
optimum serves each site from its cheapest source, except that spot may deliver at most a
share σ of what the workload is served (max_spot_share): with a the cheapest other source
and b the cheapest spot one at each site, the block's LP value is

    max_{θ ≥ 0}  Σ_s L_s · min(P, a_s − σ θ, b_s + (1 − σ) θ)

(θ the price of the spot-share row; concave and piecewise linear in θ, so its maximum is
at one of the breakpoints, all of which are tried). A single-region workload's block is
its whole horizon on the one (region, GPU type) pair whose cells cost least in sum.

`price` returns, per block, that value under the prices, the true cost of the plan that
attains it (the column for the master LP), the GPUs it puts in each capacity row, and its
cells (site, source, month, segment, units) for the plans built from columns.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from planner.solve.decompose.blocks import Blocks, WorkloadBlocks

INF = np.inf
UNMET = -1  # the source index of unmet demand in a column's cells


@dataclass
class Priced:
    """One workload's blocks priced: n blocks, each with one column."""

    blocks: np.ndarray  # [n] (month, segment) index m·K + k, or 0 for a single-region block
    value: np.ndarray  # [n] cost at the prices (the Lagrangian block value)
    cost: np.ndarray  # [n] true cost of the column
    entry_block: np.ndarray  # [e] which of the n blocks an entry belongs to
    entry_row: np.ndarray  # [e] capacity row key (Rows.key)
    entry_gpus: np.ndarray  # [e]
    cell_block: np.ndarray  # [c]
    cell_site: np.ndarray  # [c]
    cell_source: np.ndarray  # [c] source index, or UNMET
    cell_month: np.ndarray  # [c]
    cell_segment: np.ndarray  # [c]
    cell_units: np.ndarray  # [c]


class Rows:
    """Keys of the capacity rows: a capped offer's GPUs in (month, segment), then a
    (region, GPU type)'s committed GPUs in (month, segment)."""

    def __init__(self, blocks: Blocks):
        self.months, self.segments = blocks.months, blocks.segments
        per = self.months * self.segments
        self.payg = len(blocks.payg_offers) * per
        self.count = self.payg + len(blocks.committed_pairs) * per

    def key(self, payg_row, committed_row, month, segment):
        """Row key of each entry (−1 where the source has no capacity row)."""
        cell = month * self.segments + segment
        per = self.months * self.segments
        return np.where(payg_row >= 0, payg_row * per + cell,
                        np.where(committed_row >= 0, self.payg + committed_row * per + cell,
                                 -1))


def unit_costs(wb: WorkloadBlocks, blocks: Blocks, y_payg: np.ndarray,
               y_committed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[J, M, K] true and priced cost per unit served by each source (priced: inf
    before the source's first month). y_payg [offers, M, K], y_committed [pairs, M, K].
    In the bound's blocks a unit's GPUs count as `WorkloadBlocks.gpus` says: there the
    true cost is the relaxation's, at or above the plan's own."""
    hd = blocks.hd[None]
    gpus = wb.gpus_per_unit[:, None, None]
    if wb.fill is not None:
        gpus = gpus / wb.fill
    per_unit = (wb.price[:, None, None] * gpus) * hd + wb.egress[:, None, None] * hd
    dual = np.zeros_like(per_unit)
    p = wb.payg_row >= 0
    if p.any():
        dual[p] = y_payg[wb.payg_row[p]]
    c = wb.committed_row >= 0
    if c.any():
        dual[c] = y_committed[wb.committed_row[c]]
    priced = per_unit + dual * gpus
    early = np.arange(blocks.months)[None, :] < wb.first[:, None]  # [J, M]
    priced[np.broadcast_to(early[:, :, None], priced.shape)] = INF
    return per_unit, priced


def _cheapest(priced: np.ndarray, allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per site: the least priced cost over allowed sources ([S, J] mask) and its source,
    [S, M, K] each (ties: the first source)."""
    out_value = np.empty((allowed.shape[0], *priced.shape[1:]))
    out_index = np.empty(out_value.shape, dtype=np.int64)
    for s in range(allowed.shape[0]):
        masked = np.where(allowed[s][:, None, None], priced, INF)
        idx = masked.argmin(axis=0)
        out_index[s] = idx
        out_value[s] = np.take_along_axis(masked, idx[None], axis=0)[0]
    return out_value, out_index


def spot_split(a, b, level, penalty, share):
    """The block LP with a spot share, per cell of the trailing axes (sites on axis 0):
    a, b the cheapest other and spot cost per site, penalty P per cell. Returns the
    value and the units per site on spot (x), on the other source (y) and unmet (z)."""
    value, t_star = _spot_price(a, b, level, penalty, share)
    return (value, *_spot_plan(a, b, level, penalty, share, t_star))


def _spot_price(a, b, level, penalty, share):
    """The block LP's value with a spot share and θ*, the spot-share row's price where
    the maximum over θ is attained (`spot_split`'s arguments)."""
    s_count = a.shape[0]
    with np.errstate(invalid="ignore"):
        cands = [np.zeros(penalty.shape)]
        for s in range(s_count):
            cands.append(a[s] - b[s])
            cands.append((penalty - b[s]) / (1.0 - share))
            if share > 0:
                cands.append((a[s] - penalty) / share)
        theta = np.stack(cands)  # [C, ...]
        theta = np.where(np.isfinite(theta) & (theta > 0), theta, 0.0)

        def g(t):
            total = np.zeros(t.shape)
            for s in range(s_count):
                best = np.minimum(np.minimum(penalty, a[s] - share * t),
                                  b[s] + (1.0 - share) * t)
                total += np.where(level[s] > 0, level[s] * best, 0.0)
            return total

        values = g(theta)
        pick = values.argmax(axis=0)
        t_star = np.take_along_axis(theta, pick[None], axis=0)[0]
        value = np.take_along_axis(values, pick[None], axis=0)[0]
    return value, t_star


def _spot_plan(a, b, level, penalty, share, t_star):
    """The block's plan at θ* (`_spot_price`): units per site on spot, on the other
    source and unmet."""
    # ties go first to what earns spot room (the other source, then unmet), then, where
    # θ* > 0 (the share binds), units move to spot until it is used
    cost_u = penalty
    cost_a = a - share * t_star
    cost_b = b + (1.0 - share) * t_star
    tol = 1e-9 * np.maximum(1.0, np.abs(penalty))
    low = np.minimum(np.minimum(cost_u, cost_a), cost_b)
    tie_a = cost_a <= low + tol
    tie_u = cost_u <= low + tol
    tie_b = cost_b <= low + tol
    y = np.where(tie_a, level, 0.0)
    z = np.where(~tie_a & tie_u, level, 0.0)
    x = np.where(~tie_a & ~tie_u, level, 0.0)
    room = share * y.sum(axis=0) - (1.0 - share) * x.sum(axis=0)
    binds = t_star > 0
    for s in range(a.shape[0]):
        movable = tie_b[s] & binds
        # other → spot frees 1 unit of room per unit; unmet → spot (1 − σ)
        take = np.where(movable & (y[s] > 0), np.minimum(y[s], np.maximum(room, 0.0)), 0.0)
        y[s] -= take
        x[s] += take
        room = room - take
        per = max(1.0 - share, 1e-12)
        take = np.where(movable & (z[s] > 0), np.minimum(z[s], np.maximum(room, 0.0) / per),
                        0.0)
        z[s] -= take
        x[s] += take
        room = room - take * per
    return x, y, z


def demand_prices(wb: WorkloadBlocks, blocks: Blocks, y_payg: np.ndarray,
                  y_committed: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The duals of a (not single-region) workload's blocks at capacity prices y: per
    demand cell [S, M, K] what a unit is worth, its cheapest source's priced cost (at
    most the penalty; with a spot share, moved by θ*), and per (month, segment) the
    spot-share row's −θ* (HiGHS's sign for a ≤ row; None without a spot share). With y
    they make a dual point of the LP whose value is L(y): the best bound's point, in the
    terms of the master's duals."""
    _, priced = unit_costs(wb, blocks, y_payg, y_committed)
    penalty = (wb.penalty * blocks.hd)[None]
    if not wb.limited_spot:
        a, _ = _cheapest(priced, wb.reach)
        return np.minimum(a, penalty), None
    share = wb.spot_share
    a, _ = _cheapest(priced, wb.reach & ~wb.spot[None, :])
    b, _ = _cheapest(priced, wb.reach & wb.spot[None, :])
    _, theta = _spot_price(a, b, wb.level, penalty[0], share)
    with np.errstate(invalid="ignore"):
        price = np.minimum(np.minimum(penalty, a - share * theta[None]),
                           b + (1.0 - share) * theta[None])
    return price, -theta


def _serve(wb: WorkloadBlocks, priced: np.ndarray, allowed: np.ndarray,
           penalty: np.ndarray, spot: np.ndarray | None = None):
    """Value per (M, K) cell and the plan: per site spot units x at source jb, other
    units y at source ja, unmet z ([S, M, K] each). `priced` and `allowed` may hold a
    range of the sources only (`spot`: which of them are spot; default all of them)."""
    level = wb.level
    spot = wb.spot if spot is None else spot
    if wb.limited_spot:
        a, ja = _cheapest(priced, allowed & ~spot[None, :])
        b, jb = _cheapest(priced, allowed & spot[None, :])
        value, x, y, z = spot_split(a, b, level, penalty, wb.spot_share)
        return value, x, jb, y, ja, z
    a, ja = _cheapest(priced, allowed)
    serve = a < penalty[None]
    y = np.where(serve, level, 0.0)
    z = level - y
    with np.errstate(invalid="ignore"):
        value = np.where(level > 0, level * np.minimum(a, penalty[None]), 0.0).sum(axis=0)
    zeros = np.zeros(level.shape)
    return value, zeros, ja, y, ja, z


def block_usage(wb: WorkloadBlocks, blocks: Blocks, rows: Rows, y_payg: np.ndarray,
                y_committed: np.ndarray) -> tuple[float, np.ndarray]:
    """Σ over the workload's blocks of each block's optimum at the prices (its share of
    the Lagrangian function), and the GPUs those optima put in each capacity row
    ([rows.count]: its share of the function's subgradient)."""
    _, priced = unit_costs(wb, blocks, y_payg, y_committed)
    penalty = wb.penalty * blocks.hd
    if wb.single_region:
        value, _, plan = _best_pairs(wb, priced, penalty)[0]
    else:
        plan = _serve(wb, priced, wb.reach, penalty)
        value = float(plan[0].sum())
    usage = np.zeros(rows.count)
    if plan[0] is None:  # no pair: everything unmet
        return value, usage
    _, x, jb, y, ja, _ = plan
    month = np.arange(blocks.months)[None, :, None]
    segment = np.arange(blocks.segments)[None, None, :]
    for units, source in ((x, jb), (y, ja)):
        key = rows.key(wb.payg_row[source], wb.committed_row[source], month, segment)
        has = (key >= 0) & (units > 0)
        gpus = units * wb.gpus(source, month, segment)
        usage += np.bincount(key[has], weights=gpus[has], minlength=rows.count)
    return value, usage


def single_region_column(wb: WorkloadBlocks, blocks: Blocks, rows: Rows,
                         y_payg: np.ndarray, y_committed: np.ndarray, rank: int = 0,
                         pair: int | None = None) -> Priced:
    """A single-region workload's one block at the prices: its cheapest (region, GPU
    type) pair's plan over the horizon, as a master column (`rank` r: the (r+1)-th;
    `pair`: that pair's), in whole replicas (`in_whole_replicas`)."""
    true, priced = unit_costs(wb, blocks, y_payg, y_committed)
    penalty = wb.penalty * blocks.hd
    return in_whole_replicas(wb, blocks, rows, _price_single_region(
        wb, rows, true, priced, penalty, rank, pair))


def in_whole_replicas(wb: WorkloadBlocks, blocks: Blocks, rows: Rows,
                      plan: Priced) -> Priced:
    """A single-region workload's plan with each source's load in each month and segment
    rounded up to whole replicas, in its cost and its GPUs (the larger of those and the
    relaxation's own, `WorkloadBlocks.gpus`): a plan it could run, where the relaxation
    fills fractions of replicas a workload on one pair cannot fill elsewhere. The master
    then weighs pairs by what they cost in whole replicas (generated 50x40x24 at 45 s:
    the plan $55.73 M → $55.52 M; 200x40x24 $259.30 M → $258.51 M). Not for a workload
    sharing its pool (another may fill its replicas); its block's value (the relaxation's,
    the bound's) is left as it is."""
    real = plan.cell_source >= 0
    if len(blocks.builder.members[wb.pool]) > 1 or not real.any():
        return plan
    j, m, k = plan.cell_source[real], plan.cell_month[real], plan.cell_segment[real]
    cell = (j * blocks.months + m) * blocks.segments + k
    cells, at = np.unique(cell, return_inverse=True)
    units = np.bincount(at, weights=plan.cell_units[real])
    j, rest = np.divmod(cells, blocks.months * blocks.segments)
    m, k = np.divmod(rest, blocks.segments)
    counted = units * wb.gpus(j, m, k)
    whole = np.ceil(units * wb.gpus_per_unit[j] / wb.gpus_per_replica[j] - 1e-9) \
        * wb.gpus_per_replica[j]
    more = np.maximum(counted, whole) - counted
    key = rows.key(wb.payg_row[j], wb.committed_row[j], m, k)
    has = (key >= 0) & (more > 0)
    row, at = np.unique(np.concatenate([plan.entry_row, key[has]]), return_inverse=True)
    gpus = np.bincount(at, weights=np.concatenate([plan.entry_gpus, more[has]]))
    return dataclasses.replace(
        plan, cost=plan.cost + float((more * wb.price[j] * blocks.hd[m, k]).sum()),
        entry_block=np.zeros(len(row), dtype=np.int64), entry_row=row, entry_gpus=gpus)


def pair_range(wb: WorkloadBlocks, pair: int) -> tuple[int, int]:
    """The sources of a single-region workload's `pair`: [start, end)."""
    end = wb.pair_start[pair + 1] if pair + 1 < len(wb.pair_start) else len(wb.sources)
    return int(wb.pair_start[pair]), int(end)


def _best_pairs(wb, priced, penalty, only: int | None = None):
    """The pairs' plans, cheapest first: [(value, pair index, plan)] (`only`: that pair's
    alone); with no pair, the plan that leaves everything unmet."""
    options = []
    for i in range(len(wb.pairs)):
        if only is not None and i != only:
            continue
        # the pair's own range of sources (masking the others cost 3.6 of the 5.2 s of
        # three Lagrangian evaluations at 1000x100x36)
        start, end = pair_range(wb, i)
        value, x, jb, y, ja, z = _serve(wb, priced[start:end], wb.reach[:, start:end],
                                        penalty, wb.spot[start:end])
        plan = (value, x, jb + start, y, ja + start, z)
        options.append((float(value.sum()), i, plan))
    options.sort(key=lambda x: (x[0], x[1]))
    if not options:
        zeros = np.zeros(wb.level.shape)
        idx = np.zeros(wb.level.shape, dtype=np.int64)
        unmet = float((wb.level * penalty[None]).sum())
        options = [(unmet, -1, (None, zeros, idx, zeros, idx, wb.level.copy()))]
    return options


def arc_prices(wb: WorkloadBlocks, priced: np.ndarray, demand_dual: np.ndarray,
               spot_dual: np.ndarray | None, per_cell: int, among: np.ndarray | None = None):
    """The arcs (site, source, month, segment) whose reduced cost at the master's duals
    is most negative, at most `per_cell` per demand cell (`among`: of those sources
    alone, [J] bool): priced cost − the demand row's dual − the spot-share row's dual ×
    the arc's coefficient in it. Returns arrays (site, source, month, segment, reduced
    cost)."""
    out = []
    for s in range(wb.level.shape[0]):
        arcs = wb.arcs[s] if among is None else wb.arcs[s] & among
        rc = np.where(arcs[:, None, None], priced, INF) - demand_dual[s][None]
        if spot_dual is not None:
            coef = np.where(wb.spot, 1.0 - wb.spot_share, -wb.spot_share)
            rc = rc - coef[:, None, None] * spot_dual[None]
        demand = wb.level[s] > 0
        k = min(per_cell, rc.shape[0])
        best = np.argpartition(rc, k - 1, axis=0)[:k] if k < rc.shape[0] else \
            np.broadcast_to(np.arange(rc.shape[0])[:, None, None], rc.shape)
        for r in range(best.shape[0]):
            j = best[r]
            value = np.take_along_axis(rc, j[None], axis=0)[0]
            months, segments = np.nonzero(demand & np.isfinite(value))
            out.append((np.full(len(months), s), j[months, segments], months, segments,
                        value[months, segments]))
    if not out:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(4)) + (np.zeros(0),)
    return tuple(np.concatenate([o[i] for o in out]) for i in range(5))


def single_region_columns(wb: WorkloadBlocks, blocks: Blocks, rows: Rows,
                          y_payg: np.ndarray, y_committed: np.ndarray,
                          count: int) -> list[Priced]:
    """A single-region workload's plans on its `count` cheapest pairs at the prices,
    cheapest first (one pricing of every pair for all of them)."""
    true, priced = unit_costs(wb, blocks, y_payg, y_committed)
    penalty = wb.penalty * blocks.hd
    return [in_whole_replicas(wb, blocks, rows,
                              _single_region_plan(wb, rows, true, penalty, option))
            for option in _best_pairs(wb, priced, penalty)[:count]]


def _price_single_region(wb, rows, true, priced, penalty, rank=0, pair=None) -> Priced:
    options = _best_pairs(wb, priced, penalty, pair)
    return _single_region_plan(wb, rows, true, penalty, options[min(rank, len(options) - 1)])


def _single_region_plan(wb, rows, true, penalty, option) -> Priced:
    """One of `_best_pairs`'s options as a master column."""
    value, _, (_, x, jb, y, ja, z) = option
    months, segments = np.nonzero(wb.level.sum(axis=0) > 0)
    return _columns(wb, rows, true, penalty, months, segments,
                    np.zeros(len(months), dtype=np.int64), np.array([value]),
                    x, jb, y, ja, z, single=True)


def _columns(wb, rows: Rows, true, penalty, months, segments, block_of_cell, value,
             x, jb, y, ja, z, single: bool = False) -> Priced:
    """Gather the plan at each active (month, segment) into columns: cost, capacity
    entries and cells. `block_of_cell[i]`: the column of the i-th active cell."""
    n_blocks = 1 if single else len(months)
    cost = np.zeros(n_blocks)
    e_block, e_row, e_gpus = [], [], []
    c_block, c_site, c_source, c_units = [], [], [], []
    c_month, c_segment = [], []
    for s in range(wb.level.shape[0]):
        for units, source in ((x[s], jb[s]), (y[s], ja[s])):
            u = units[months, segments]
            keep = u > 1e-12
            if not keep.any():
                continue
            j = source[months, segments][keep]
            mm, kk, uu = months[keep], segments[keep], u[keep]
            blk = block_of_cell[keep]
            np.add.at(cost, blk, uu * true[j, mm, kk])
            key = rows.key(wb.payg_row[j], wb.committed_row[j], mm, kk)
            has = key >= 0
            e_block.append(blk[has])
            e_row.append(key[has])
            e_gpus.append(uu[has] * wb.gpus(j[has], mm[has], kk[has]))
            c_block.append(blk)
            c_site.append(np.full(len(uu), s))
            c_source.append(j)
            c_month.append(mm)
            c_segment.append(kk)
            c_units.append(uu)
        u = z[s][months, segments]
        keep = u > 1e-12
        if keep.any():
            mm, kk, uu = months[keep], segments[keep], u[keep]
            blk = block_of_cell[keep]
            np.add.at(cost, blk, uu * penalty[mm, kk])
            c_block.append(blk)
            c_site.append(np.full(len(uu), s))
            c_source.append(np.full(len(uu), UNMET))
            c_month.append(mm)
            c_segment.append(kk)
            c_units.append(uu)

    def cat(parts, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    e_block, e_row, e_gpus = cat(e_block, np.int64), cat(e_row, np.int64), cat(e_gpus, float)
    if len(e_row):  # one entry per (column, row)
        pair = e_block * rows.count + e_row
        uniq, inverse = np.unique(pair, return_inverse=True)
        e_gpus = np.bincount(inverse, weights=e_gpus, minlength=len(uniq))
        e_block, e_row = uniq // rows.count, uniq % rows.count
    block_ids = np.zeros(1, dtype=np.int64) if single else \
        months * wb.level.shape[2] + segments
    return Priced(blocks=block_ids, value=value, cost=cost, entry_block=e_block,
                  entry_row=e_row, entry_gpus=e_gpus, cell_block=cat(c_block, np.int64),
                  cell_site=cat(c_site, np.int64), cell_source=cat(c_source, np.int64),
                  cell_month=cat(c_month, np.int64), cell_segment=cat(c_segment, np.int64),
                  cell_units=cat(c_units, float))


def pairs_by_cost(wb: WorkloadBlocks, blocks: Blocks, prices) -> list[int]:
    """A single-region workload's (region, GPU type) pairs, cheapest first at `prices`."""
    _, priced = unit_costs(wb, blocks, *prices)
    return [pair for _, pair, _ in _best_pairs(wb, priced, wb.penalty * blocks.hd)
            if pair >= 0]


def pair_month_costs(wb: WorkloadBlocks, blocks: Blocks, prices) -> dict[int, np.ndarray]:
    """A single-region workload's cost at `prices` on each of its pairs, month by month
    (capacity unseen): pair index → [M]."""
    _, priced = unit_costs(wb, blocks, *prices)
    return {pair: plan[0].sum(axis=1)
            for _, pair, plan in _best_pairs(wb, priced, wb.penalty * blocks.hd) if pair >= 0}


def cheapest_arcs(blocks: Blocks, prices, pairs: dict) -> dict:
    """Each workload's plan at `prices` alone, ignoring capacity (single-region ones on
    their `pairs`): workload index → arrays (site, source, month, segment, units). What
    the plan starts from when no master LP is at hand."""
    wanted = {}
    for w, wb in enumerate(blocks.workloads):
        _, priced = unit_costs(wb, blocks, *prices)
        penalty = wb.penalty * blocks.hd
        if wb.single_region:
            if w not in pairs:
                continue
            plan = _best_pairs(wb, priced, penalty, pairs[w])[0][2]
        else:
            plan = _serve(wb, priced, wb.reach, penalty)
        _, x, jb, y, ja, _ = plan
        parts = []
        for units, source in ((x, jb), (y, ja)):
            s, m, k = np.nonzero(units > 1e-12)
            parts.append((s, source[s, m, k], m, k, units[s, m, k]))
        wanted[w] = tuple(np.concatenate([p[i] for p in parts]) for i in range(5))
    return wanted
