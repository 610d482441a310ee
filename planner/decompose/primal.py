"""Plans from the master LP: its arcs, its single-region choices, its commitments rounded."""

from __future__ import annotations

import math

import numpy as np

from planner.decompose.dual import DualBound, plan_pair
from planner.decompose.pricing import pair_range, single_region_column
from planner.solution import Solution


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


def master_pairs(dual: DualBound) -> dict:
    """Single-region workload index → the pair to hold it to, for the workloads not yet
    held: of the pairs that could carry its busiest month (`pair_room`), the one its
    plans weigh most in the master, else the cheapest at the master's prices; of several
    workloads that choose one pair, only the one with the most demand (the next LP shows
    what is left)."""
    m = dual.master
    blocks = dual.blocks
    weight: dict[int, dict[int, float]] = {}
    for w, plan, col in m.plans:
        if w in dual.pairs:
            continue
        pair = plan_pair(blocks.workloads[w], plan)
        if pair is not None:
            weight.setdefault(w, {})
            weight[w][pair] = weight[w].get(pair, 0.0) + float(m.column_values(col)[0])
    best: dict[int, int] = {}
    for w, weights in weight.items():
        wb = blocks.workloads[w]
        fits = [p for p in weights if pair_room(blocks, wb, p) >= peak_gpus(wb, p)]
        if fits:
            best[w] = max(fits, key=lambda p: (weights[p], -p))
            continue
        for rank in range(len(wb.pairs)):
            plan = single_region_column(wb, blocks, dual.rows, m.y_payg, m.y_committed,
                                        rank=rank)
            p = plan_pair(wb, plan)
            if p is not None and pair_room(blocks, wb, p) >= peak_gpus(wb, p):
                best[w] = p
                break
        else:  # no pair can carry it all: the one that can carry most
            best[w] = max(range(len(wb.pairs)), key=lambda p: (pair_room(blocks, wb, p), -p))
    chosen: dict[tuple, int] = {}  # (region, GPU type) → workload
    for w in sorted(best, key=lambda w: (-float(blocks.workloads[w].level.sum()), w)):
        chosen.setdefault(blocks.workloads[w].pairs[best[w]], w)
    return {w: best[w] for w in sorted(chosen.values())}


def pair_room(blocks, wb, pair: int) -> float:
    """The most GPUs a single-region workload could have at `pair` in a month: its
    capped offers' max_gpus, the existing GPUs and commitments' max_gpus there (inf
    where an offer has no limit)."""
    start, end = pair_range(wb, pair)
    cm = blocks.commitments
    room = 0.0
    for j in range(start, end):
        if wb.committed_row[j] >= 0:
            row = wb.committed_row[j]
            mine = cm.committed_row == row
            if (mine & (cm.cap_row < 0)).any():
                return float("inf")
            caps = np.unique(cm.cap_row[mine])
            room += float(blocks.existing[row].max()) + float(cm.caps[caps].sum())
        elif wb.payg_row[j] >= 0:
            room += float(blocks.payg_cap[wb.payg_row[j]])
        else:
            return float("inf")
    return room


def peak_gpus(wb, pair: int) -> float:
    """GPUs a single-region workload's busiest segment needs at `pair` (its most
    efficient source there)."""
    start, end = pair_range(wb, pair)
    return float(wb.level.sum(axis=0).max()) * float(wb.gpus_per_unit[start:end].min())


def rounded_commitments(dual: DualBound) -> np.ndarray:
    """The master's commitments in whole GPUs: up (what the plan does not use is trimmed
    after), a minimum order met when the LP signs at least half of it, else nothing;
    within each offer's monthly max_gpus (the latest starts give way)."""
    cm = dual.blocks.commitments
    lp = dual.master.values[:dual.master.n_commit]
    q = np.ceil(lp - 1e-6)
    small = (q > 0) & (q < cm.min_gpus)
    q[small] = np.where(lp[small] >= cm.min_gpus[small] / 2, cm.min_gpus[small], 0.0)
    q = np.clip(np.maximum(q, cm.lower), cm.lower, cm.upper)
    for c, cap in enumerate(cm.caps):
        mine = np.flatnonzero(cm.cap_row == c)
        for month in range(dual.blocks.months):
            active = mine[(cm.start[mine] <= month) & (month < cm.start[mine] + cm.months[mine])]
            over = q[active].sum() - cap
            for n in sorted(active.tolist(), key=lambda n: -int(cm.start[n])):
                if over <= 0:
                    break
                cut = min(over, q[n] - cm.lower[n])
                if 0 < q[n] - cut < cm.min_gpus[n]:
                    cut = q[n] - cm.lower[n]
                q[n] -= cut
                over -= cut
    return q
