"""Demand sites of one kind merged for the LP (planner/solve/decompose/kinds.py).

* the merged blocks are the same LP: the Lagrangian function is the same at any
  capacity prices, and fewer blocks carry it;
* what the master's arcs carry is shared out to the members without loss: per month,
  segment and stream (spot or not) the members' units sum to the kind's, each in
  proportion to its level, so each member keeps the kind's spot share;
* a plan's arcs map onto the kinds' sources;
* what stays whole: single-region workloads, a spot share over several sites.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from planner.io.generate import generate
from planner.io.validate import load_scenario
from planner.model.builder import ModelBuilder
from planner.model.candidates import find_candidates
from planner.solve.decompose.blocks import Blocks
from planner.solve.decompose.dual import first_prices, lagrangian
from planner.solve.decompose.kinds import merge
from planner.solve.decompose.master import CommitmentPart


@pytest.fixture(scope="module")
def market(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kinds") / "g"
    generate(folder, 40, 8, 3, seed=2)
    s = load_scenario(folder)
    return Blocks(ModelBuilder(s, find_candidates(s)))


def _sites(blocks: Blocks) -> int:
    return sum(len(wb.sites) for wb in blocks.workloads)


def test_merged_blocks_are_fewer_and_carry_all_the_demand(market):
    kinds = merge(market)
    merged = kinds.blocks
    assert len(merged.workloads) < _sites(market)  # the point of merging
    assert sum(float(wb.level.sum()) for wb in merged.workloads) == pytest.approx(
        sum(float(wb.level.sum()) for wb in market.workloads))
    # every (workload, site) with demand belongs to exactly one merged block
    seen = [(w, s) for members in kinds.members for w, s in members]
    assert len(seen) == len(set(seen))
    for a, members in enumerate(kinds.members):
        if members[0][1] is None:
            assert merged.workloads[a] is market.workloads[members[0][0]]
            continue
        kind = merged.workloads[a]
        total = sum(market.workloads[w].level[s] for w, s in members)
        assert np.allclose(kind.level[0], total)
        for w, s in members:  # the same arcs at the same costs
            wb = market.workloads[w]
            j = np.flatnonzero(wb.arcs[s])
            assert [wb.sources[x] for x in j] == kind.sources
            assert np.array_equal(wb.gpus_per_unit[j], kind.gpus_per_unit)
            assert np.array_equal(wb.egress[j], kind.egress)


def test_the_lagrangian_function_is_the_same_at_any_prices(market):
    merged = merge(market).blocks
    rng = np.random.default_rng(0)
    y_payg, y_committed = first_prices(market)
    points = [(y_payg, y_committed)]
    for scale in (0.5, 2.0, 10.0):
        points.append((rng.random(y_payg.shape) * scale * 10,
                       rng.random(y_committed.shape) * scale * y_committed.max()))
    for y in points:
        here = lagrangian(market, CommitmentPart(market), *y)
        there = lagrangian(merged, CommitmentPart(merged), *y)
        assert there == pytest.approx(here, rel=1e-9, abs=1e-6)


def _kind_arcs(kind, rng):
    """Arcs of one kind: every source in every month and segment with demand, units
    summing to at most the level (some left unmet)."""
    month, segment = np.nonzero(kind.level[0] > 0)
    J = len(kind.sources)
    site, source, m, k, units = [], [], [], [], []
    for mm, kk in zip(month.tolist(), segment.tolist()):
        share = rng.dirichlet(np.ones(J + 1))[:J]  # the last part unmet
        for j in range(J):
            site.append(0)
            source.append(j)
            m.append(mm)
            k.append(kk)
            units.append(share[j] * kind.level[0, mm, kk])
    return (np.array(site), np.array(source), np.array(m), np.array(k), np.array(units))


def test_arcs_are_shared_out_by_level_and_stream(market):
    kinds = merge(market)
    rng = np.random.default_rng(1)
    shared = [a for a, members in enumerate(kinds.members)
              if members[0][1] is not None and len(members) > 1]
    assert shared
    spot = [a for a in shared if kinds.blocks.workloads[a].limited_spot]
    assert spot  # the market has bursts with a spot share merged
    arcs = {a: _kind_arcs(kinds.blocks.workloads[a], rng) for a in shared}
    empty = next(a for a in shared if a not in spot)  # a kind the master gave no arc
    arcs[empty] = tuple(np.zeros(0, dtype=x.dtype) for x in arcs[empty])
    out = kinds.original_arcs(arcs)
    checked_spot = False
    for a in shared:
        if a == empty:
            continue
        kind = kinds.blocks.workloads[a]
        site, source, month, segment, units = arcs[a]
        for w, s in kinds.members[a]:
            wb = market.workloads[w]
            mine = out[w]
            at = mine[0] == s
            got_source = [wb.sources[j] for j in mine[1][at]]
            assert set(got_source) <= set(kind.sources)
            for mm, kk in zip(*np.nonzero(wb.level[s] > 0)):
                cell = at & (mine[2] == mm) & (mine[3] == kk)
                here = (month == mm) & (segment == kk)
                ratio = wb.level[s, mm, kk] / kind.level[0, mm, kk]
                assert mine[4][cell].sum() == pytest.approx(units[here].sum() * ratio)
                if kind.limited_spot:  # its spot units in the kind's proportion
                    is_spot = np.array([wb.spot[j] for j in mine[1][cell]], dtype=bool)
                    assert mine[4][cell][is_spot].sum() == pytest.approx(
                        units[here][kind.spot[source[here]]].sum() * ratio)
                    checked_spot = True
    assert checked_spot
    assert all(w not in out or not (out[w][0] == s).any() for w, s in kinds.members[empty])


def test_sites_whose_arcs_cost_differently_stay_apart(market):
    kinds = merge(market)
    a = next(a for a, members in enumerate(kinds.members)
             if members[0][1] is not None and len(members) > 1)
    (w, s), (w2, s2) = kinds.members[a][:2]
    other = copy.copy(market)
    other.workloads = list(market.workloads)
    dearer = other.workloads[w2] = copy.copy(market.workloads[w2])
    dearer.egress = dearer.egress * 1.5 + 1e-6  # its egress dearer at every source
    apart = merge(other)
    assert len(apart.blocks.workloads) == len(kinds.blocks.workloads) + 1
    assert not any({w, w2} <= {x for x, _ in members} for members in apart.members)


def test_a_plans_arcs_map_onto_the_kinds_sources(market):
    kinds = merge(market)
    a = next(a for a, members in enumerate(kinds.members)
             if members[0][1] is not None and len(members) > 1)
    kind = kinds.blocks.workloads[a]
    (w, s), (w2, s2) = kinds.members[a][:2]
    wb = market.workloads[w]
    j = np.flatnonzero(wb.arcs[s])[:3]
    seed = {w: (np.full(len(j), s), j, np.zeros(len(j), dtype=np.int64),
                np.zeros(len(j), dtype=np.int64))}
    merged, pairs = kinds.merged_seed((seed, {}))
    assert pairs == {}
    site, source, month, segment = merged[a]
    assert [kind.sources[x] for x in source] == [wb.sources[x] for x in j]
    assert (site == 0).all()


def test_single_region_workloads_and_spot_shares_over_sites_stay_whole(market):
    kinds = merge(market)
    whole = {w for members in kinds.members for w, s in members if s is None}
    for w, wb in enumerate(market.workloads):
        if wb.single_region or (wb.limited_spot and len(wb.sites) > 1):
            assert w in whole
    single = [w for w, wb in enumerate(market.workloads) if wb.single_region]
    assert single
    pairs = {kinds.merged_of[w]: 0 for w in single}
    assert kinds.original_pairs(pairs) == {w: 0 for w in single}
