"""Demand cells of one kind merged for the LP: the bound's blocks, smaller and exact.

Two demand sites (of one workload or of two) whose arcs are the same — the same
sources, each at the same cost and GPUs per unit, usable from the same month, unmet at
the same penalty — are one column set in the LP relaxation: any flow that serves their
summed demand splits between them in proportion to their levels, at the same cost and
on the same capacity rows. Only whole replicas tell them apart, and the LP has none.
So the bound and its master run on one block per kind of cell (`Kinds.blocks`), whose
level is its members' sum; the plan is built on the workloads' own blocks from the
master's arcs shared out again (`Kinds.original_arcs`).

Generated markets have many such sites: a pool's workloads at one site with the same
SLO and residency, bursts at one site. 200x40x24's workloads are 61 blocks (its 28
single-region ones, and 297 other sites in 33 kinds), 1000x100x36's 215 (84 and 1,620
in 131): the master's first LP at 1000x100x36 has a tenth of the supply cells, and
column generation reaches within 2 % of the plan where it had stopped 8 % short.

What stays as it is: a single-region workload (one plan over the horizon: its cells
are not free to split), and a workload with a spot share over several sites (its share
binds its sites together); one with a single site merges with others of its share.
Arcs an uncapped on-demand source dominates (`blocks._arcs`) are left out of a kind:
at any capacity prices the LP never needs them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from planner.solve.decompose.blocks import Blocks, WorkloadBlocks


@dataclass
class Kinds:
    """The merged blocks, and which original workload (and site) each one stands for."""

    blocks: Blocks
    original: Blocks
    # merged workload → its members: (original workload, its site) each, or a whole
    # workload kept as it is: [(w, None)]
    members: list[list[tuple[int, int | None]]]
    merged_of: dict[int, int]  # original workload kept whole → its merged index

    def merged_seed(self, seed: tuple[dict, dict]) -> tuple[dict, dict]:
        """A plan's arcs (workload → (site, source, month, segment)) and single-region
        pairs, in the merged blocks' indices (arcs a kind leaves out are dropped)."""
        arcs, pairs = seed
        parts: dict[int, list] = {}
        kind_of = self._kind_of()
        for w, (site, source, month, segment) in arcs.items():
            if w in self.merged_of:
                parts.setdefault(self.merged_of[w], []).append((site, source, month,
                                                                segment))
                continue
            wb = self.original.workloads[w]
            for s in np.unique(site).tolist():
                a = kind_of[(w, s)]
                index = self.blocks.workloads[a].index_of
                on = site == s
                j = np.array([index.get(wb.sources[x], -1) for x in source[on].tolist()],
                             dtype=np.int64)
                keep = j >= 0
                parts.setdefault(a, []).append((np.zeros(int(keep.sum()), dtype=np.int64),
                                                j[keep], month[on][keep], segment[on][keep]))
        merged = {a: tuple(np.concatenate([p[i] for p in ps]) for i in range(4))
                  for a, ps in sorted(parts.items())}
        return merged, {self.merged_of[w]: p for w, p in pairs.items()}

    def original_arcs(self, arcs: dict) -> dict:
        """The merged blocks' arcs with their units (merged workload → (site, source,
        month, segment, units)) shared out to the members, in the original blocks'
        indices. In each month and segment every member gets its level's share of the
        kind's units, from the arcs in turn (`_fill`): a member is served from as few
        sources as the kind's flow allows (whole replicas are planned on what each
        gets), and spot and other units are shared apart, so that each member's spot
        share is the kind's."""
        out: dict[int, list] = {}
        for a, (site, source, month, segment, units) in arcs.items():
            kind = self.blocks.workloads[a]
            if self.members[a][0][1] is None:  # a workload kept whole
                w = self.members[a][0][0]
                out.setdefault(w, []).append((site, source, month, segment, units))
                continue
            members = [(self.original.workloads[w], w, s) for w, s in self.members[a]]
            parts: dict[int, list] = {w: [] for _, w, _ in members}
            stream = kind.spot[source] if kind.limited_spot else np.zeros(len(units), bool)
            order = np.lexsort((np.arange(len(units)), stream, segment, month))
            key = (month[order] * kind.level.shape[2] + segment[order]) * 2 + stream[order]
            for arcs_in in np.split(order, np.flatnonzero(np.diff(key)) + 1):
                if len(arcs_in):
                    _fill(kind, members, arcs_in, source, units,
                          int(month[arcs_in[0]]), int(segment[arcs_in[0]]), parts)
            for w, rows in parts.items():
                if rows:
                    out.setdefault(w, []).append(tuple(np.array(c) for c in zip(*rows)))
        return {w: tuple(np.concatenate([p[i] for p in ps]).astype(np.int64 if i < 4
                                                                    else float)
                         for i in range(5))
                for w, ps in sorted(out.items())}

    def original_pairs(self, pairs: dict[int, int]) -> dict[int, int]:
        """Single-region pairs (merged index → pair) in the original indices."""
        back = {a: w for w, a in self.merged_of.items()}
        return {back[a]: p for a, p in pairs.items()}

    def _kind_of(self) -> dict[tuple[int, int], int]:
        return {(w, s): a for a, members in enumerate(self.members)
                for w, s in members if s is not None}


def merge(blocks: Blocks) -> Kinds:
    """`blocks` with the demand sites of one kind merged (the module's docstring)."""
    merged: list[WorkloadBlocks] = []
    members: list[list[tuple[int, int | None]]] = []
    merged_of: dict[int, int] = {}
    kind_index: dict[tuple, int] = {}
    for w, wb in enumerate(blocks.workloads):
        if wb.single_region or (wb.limited_spot and len(wb.sites) > 1):
            merged_of[w] = len(merged)
            merged.append(wb)
            members.append([(w, None)])
            continue
        for s in range(len(wb.sites)):
            if not (wb.level[s] > 0).any():
                continue
            j = np.flatnonzero(wb.arcs[s])
            key = (wb.limited_spot and float(wb.spot_share), float(wb.penalty),
                   tuple(wb.sources[x] for x in j.tolist()), wb.gpus_per_unit[j].tobytes(),
                   wb.egress[j].tobytes(), wb.first[j].tobytes())
            a = kind_index.get(key)
            if a is None:
                a = kind_index[key] = len(merged)
                merged.append(_kind(wb, s, j))
                members.append([])
            else:
                merged[a].level[0] += wb.level[s]
            members[a].append((w, s))
    out = copy.copy(blocks)
    out.workloads = merged
    # the steps' work is reckoned by supply cells (ModelBuilder.cell_count): a source
    # and a demand cell it may serve; those of the merged blocks
    per_workload = blocks.builder.cells_per_workload
    out.cells = sum(per_workload[wb.name] if members[a][0][1] is None else _cells(wb)
                    for a, wb in enumerate(merged))
    return Kinds(out, blocks, members, merged_of)


def _kind(wb: WorkloadBlocks, s: int, j: np.ndarray) -> WorkloadBlocks:
    """The block of site s of `wb`'s kind: its arcs `j` alone, one site, its level (to
    which the kind's other members' levels are added)."""
    sources = [wb.sources[x] for x in j.tolist()]
    kind = WorkloadBlocks(
        name=f"{wb.name}@{wb.sites[s]}", pool=wb.pool, single_region=False,
        spot_share=wb.spot_share, penalty=wb.penalty, sources=sources,
        first=wb.first[j], gpus_per_unit=wb.gpus_per_unit[j],
        gpus_per_replica=wb.gpus_per_replica[j], price=wb.price[j], spot=wb.spot[j],
        payg_row=wb.payg_row[j], committed_row=wb.committed_row[j], egress=wb.egress[j],
        sites=[wb.sites[s]], reach=np.ones((1, len(j)), dtype=bool),
        level=wb.level[s:s + 1].copy())
    kind.arcs = kind.reach.copy()
    kind.index_of = {x: i for i, x in enumerate(sources)}
    return kind


def _cells(kind: WorkloadBlocks) -> int:
    """A kind's supply cells: each source with each demand cell from its first month."""
    months = np.nonzero(kind.level[0] > 0)[0]
    return int((months[None, :] >= kind.first[:, None]).sum())


def _fill(kind: WorkloadBlocks, members: list, arcs: np.ndarray, source: np.ndarray,
          units: np.ndarray, m: int, k: int, parts: dict) -> None:
    """Share the units of `arcs` (one month, segment and stream of a kind) among the
    kind's `members` ((blocks, workload, site) each) in proportion to their levels: the
    members in turn take the arcs in turn. Appends (site, source, m, k, units) rows to
    `parts[w]`."""
    total = float(units[arcs].sum())
    level = float(kind.level[0, m, k])
    arcs = iter(arcs.tolist())
    arc, left = None, 0.0
    for wb, w, s in members:
        want = total * float(wb.level[s, m, k]) / level
        while want > 1e-12 * max(1.0, total):
            if left <= 1e-12 * max(1.0, total):
                arc = next(arcs, None)
                if arc is None:
                    return
                left = float(units[arc])
                continue
            take = min(want, left)
            parts[w].append((s, wb.index_of[kind.sources[source[arc]]], m, k, take))
            want -= take
            left -= take
