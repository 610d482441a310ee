"""Whole replicas lift the bound of single-region workloads (planner.solve.decompose.
replicas), by hand: hours_per_month = 100, so one GPU for a month at $1/h is $100."""

from __future__ import annotations

import numpy as np
import pytest
from scenarios import scenario, write_csv

from planner.check import check_plan
from planner.io.validate import load_scenario
from planner.model import covers as covers_module
from planner.model.builder import ModelBuilder
from planner.model.candidates import find_candidates
from planner.solve.budget import Budget
from planner.solve.decompose import method as method_module
from planner.solve.decompose import pricing as pricing_module
from planner.solve.decompose.blocks import Blocks
from planner.solve.decompose.dual import first_prices
from planner.solve.decompose.method import decompose
from planner.solve.decompose.pricing import Rows, single_region_column
from planner.solve.decompose.replicas import _cell_floor
from planner.solve.pipeline import plan_scenario

H = {"hours_per_month": 100}
SITES = [{"site": "a", "country": "US", "jurisdiction": "US"}]


def _training(tmp_path, pool=None, other=False):
    # A training run needs 50 units for a month. GPU type A: a replica of 4 GPUs at 10
    # units each carries 40 units, at $1/GPU-hour; type B: one GPU of 10 units at $1.7.
    # Whole replicas on one type: A 2 × 4 × 100 × 1 = $800, B 5 × 100 × 1.7 = $850: the
    # optimum is $800. The LP relaxation takes A's GPUs one by one: 5 × 100 × 1 = $500.
    workloads = [{"workload": "w", "kind": "training", "pool": pool}]
    throughput = [{"workload": "w", "gpu": "A", "units_per_gpu": 10, "gpus_per_replica": 4},
                  {"workload": "w", "gpu": "B", "units_per_gpu": 10}]
    demand = [{"workload": "w", "period": "2027-01", "amount": 50}]
    if other:  # an inference workload in w's pool, on A only, 10 units
        workloads.append({"workload": "v", "kind": "inference", "pool": pool})
        throughput.append({"workload": "v", "gpu": "A", "units_per_gpu": 10,
                           "gpus_per_replica": 4})
        demand.append({"workload": "v", "period": "2027-01", "amount": 10, "site": "a"})
    folder = write_csv(tmp_path / "s", scenario(
        settings=H, sites=SITES, regions=[{"region": "r", "provider": "p", "site": "a"}],
        gpus=[{"gpu": "A"}, {"gpu": "B"}],
        offers=[{"region": "r", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 1},
                {"region": "r", "gpu": "B", "term": "on_demand", "usd_per_gpu_hour": 1.7}],
        workloads=workloads, throughput=throughput, demand=demand))
    s = load_scenario(folder)
    return s, ModelBuilder(s, find_candidates(s))


@pytest.mark.parametrize("pool, cost", [(None, 800.0), ("p", 500.0)])
def test_a_training_runs_master_column_is_in_whole_replicas(tmp_path, pool, cost):
    """At first prices its cheapest pair is A (the LP: 5 GPUs, $500); the column the
    master weighs rounds its 1.25 replicas up to 2 (8 GPUs, $800). Sharing its pool (v
    on A as well), its replicas may carry v's load: the column stays the LP's."""
    s, builder = _training(tmp_path, pool=pool, other=pool is not None)
    blocks = Blocks(builder)
    w = next(i for i, wb in enumerate(blocks.workloads) if wb.name == "w")
    plan = single_region_column(blocks.workloads[w], blocks, Rows(blocks),
                                *first_prices(blocks))
    assert float(plan.cost[0]) == pytest.approx(cost)
    assert float(plan.cell_units.sum()) == pytest.approx(50.0)  # the same units served


def test_whole_replicas_lift_a_training_runs_bound_to_its_optimum(tmp_path):
    s, builder = _training(tmp_path)
    out = decompose(builder, Budget(20))
    assert out.objective == pytest.approx(800)
    assert out.bound == pytest.approx(800)  # the LP relaxation's $500, lifted


def _cover_cuts(monkeypatch, cuts: str) -> None:
    """Cover cuts (planner.model.covers) in the bound: "none", "site" only, or "all"."""
    if cuts == "none":
        monkeypatch.setattr(method_module, "COVER_CELLS", 0)
        monkeypatch.setattr(method_module, "COVER_CELLS_AFTER", 0)
    elif cuts == "site":
        monkeypatch.setattr(covers_module, "pair_cuts", lambda *a: iter(()))


@pytest.mark.parametrize("cuts, bound", [("none", 500.0), ("site", 570.0),
                                         ("all", 800.0)])
def test_without_the_lift_the_bound_is_the_lp_relaxation(tmp_path, monkeypatch, cuts,
                                                         bound):
    """With cover cuts but no lift. The site's: 50 units need 1.25 of A's replicas of 40
    (f = 0.25; B's of 10 count min(0.25, 0.25) / 0.25 = 1), so replicas of A and B ≥ 2
    beside 40 a + 10 b ≥ 50: a = b = 1, $400 + $170 = $570. The pairs': on A chosen
    (share t) 2 t replicas of A, on B 5 (1 − t) whole ones ($850 a run): 800 t + 850
    (1 − t) ≥ $800, the optimum."""
    monkeypatch.setattr(method_module, "whole_replica_gain", lambda *a: 0.0)
    monkeypatch.setattr(pricing_module, "in_whole_replicas", lambda wb, b, rows, plan: plan)
    _cover_cuts(monkeypatch, cuts)
    s, builder = _training(tmp_path)
    out = decompose(builder, Budget(20))
    assert out.objective == pytest.approx(800) and out.bound == pytest.approx(bound)


@pytest.mark.parametrize("cuts, bound", [("none", 600.0), ("site", 1940 / 3),
                                         ("all", 800.0)])
def test_a_workload_sharing_its_pool_keeps_its_lp_value(tmp_path, monkeypatch, cuts,
                                                        bound):
    """w and v share A's replicas: 60 units fit 2 replicas (80 units, $800) and the LP
    relaxation prices 6 GPUs ($600). The lift leaves w alone: w's second replica can
    carry v's load, so rounding w up alone would overstate the bound. The cover cuts
    count the pool's replicas: w's (A + B ≥ 2) and v's (A ≥ 1); with t of w's units
    on B the LP pays 400 (60 − t) / 40 + 170 t / 10 = 600 + 7 t, and the first cut
    needs (60 − t) / 40 + t / 10 ≥ 2, t ≥ 20 / 3: $646.67 (an idle half replica of B
    would cost $685). With w's pair cuts as well (A chosen at share t: the pool's A
    replicas ≥ 2 t), the LP pays 400 · max(2 t, (50 t + 10) / 40, 1) + 850 (1 − t):
    $800 at t = 1, the optimum."""
    _cover_cuts(monkeypatch, cuts)
    s, builder = _training(tmp_path, pool="p", other=True)
    out = decompose(builder, Budget(20))
    assert out.objective == pytest.approx(800)
    assert out.bound == pytest.approx(bound)


@pytest.mark.parametrize("penalty, floor", [
    (1000, 800),  # both replicas: 2 × $400
    (12, 520),  # one replica ($400) and 10 units unmet (10 × 12): the LP's 50 × 10 = 500
    (9, 450),  # all unmet (50 × 9), under a replica's $10 a unit: the LP's value
])
def test_a_cells_floor_by_hand(penalty, floor):
    # 50 units; replicas of 40 units at $400 ($10 a unit), no egress
    one = np.ones((1, 1))
    got = _cell_floor(50 * one, penalty * one, np.full((1, 1, 1), 400.0),
                      np.full((1, 1, 1), 10.0), np.array([40.0]), np.zeros((1, 1, 1)))
    assert got[0, 0] == pytest.approx(floor)


def test_a_source_not_yet_usable_gives_no_floor():
    # the only source starts later (its replica cost inf in this month): everything
    # unmet, 50 × 12
    one = np.ones((1, 1))
    got = _cell_floor(50 * one, 12 * one, np.full((1, 1, 1), np.inf),
                      np.full((1, 1, 1), np.inf), np.array([40.0]), np.zeros((1, 1, 1)))
    assert got[0, 0] == pytest.approx(600)


def test_the_lifted_plan_passes_the_checker(tmp_path):
    s, _ = _training(tmp_path)
    run = plan_scenario(s, time_limit=20, method="decompose")
    assert check_plan(s, run.plan) == []
    assert run.result.bound == pytest.approx(800) and run.result.status == "optimal"


def _small_loads(tmp_path, loads):
    # Inference workloads at site a, each `units` a month in its `pool`, on GPU type A
    # alone: a replica of 4 GPUs at 10 units each carries 40 units and costs
    # 4 × 100 h × $1 = $400 a month, $10 a unit in the LP relaxation.
    workloads, throughput, demand = [], [], []
    for name, pool, units in loads:
        workloads.append({"workload": name, "kind": "inference", "pool": pool})
        throughput.append({"workload": name, "gpu": "A", "units_per_gpu": 10,
                           "gpus_per_replica": 4})
        demand.append({"workload": name, "period": "2027-01", "amount": units, "site": "a"})
    folder = write_csv(tmp_path / "s", scenario(
        settings=H, sites=SITES, regions=[{"region": "r", "provider": "p", "site": "a"}],
        gpus=[{"gpu": "A"}],
        offers=[{"region": "r", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 1}],
        workloads=workloads, throughput=throughput, demand=demand))
    s = load_scenario(folder)
    return s, ModelBuilder(s, find_candidates(s))


def test_a_load_under_one_replica_is_bounded_at_a_whole_one(tmp_path):
    # 10 units fill a quarter of a replica: the LP relaxation pays 10 × $10 = $100, the
    # plan a whole replica, $400. With replicas ≥ load ÷ 0.25 the bound is $400: proven.
    s, builder = _small_loads(tmp_path, [("u", None, 10)])
    out = decompose(builder, Budget(20))
    assert out.objective == pytest.approx(400) and out.bound == pytest.approx(400)
    run = plan_scenario(s, time_limit=20, method="decompose")
    assert check_plan(s, run.plan) == []
    assert run.result.status == "optimal"


def test_a_pools_loads_fill_their_replica_together(tmp_path):
    # u and v share pool p's replicas: 10 + 10 units fill half of one, $400 in all. The
    # share is the pool's (0.5), not each workload's (0.25: a bound of 20 × $40 = $800,
    # above the plan).
    s, builder = _small_loads(tmp_path, [("u", "p", 10), ("v", "p", 10)])
    out = decompose(builder, Budget(20))
    assert out.objective == pytest.approx(400) and out.bound == pytest.approx(400)


@pytest.mark.parametrize("cover_cells, bound", [(0, 40 * 10 / 0.75), (None, 800.0)])
def test_merged_sites_of_two_pools_take_the_larger_share(tmp_path, monkeypatch,
                                                         cover_cells, bound):
    """u (pool p, 10 units: 0.25 of a replica) and v (pool q, 30 units: 0.75) are one
    kind of demand site, merged for the bound. Each pool needs its own replica: $800.
    The merged block's 40 units are bounded at the larger share, 40 × $10 ÷ 0.75 =
    $533.33 (at the smaller, 40 × $40 = $1,600 would be above the plan). Each site's
    cover cut (planner.model.covers) holds its own pool to a whole replica: $800."""
    if cover_cells is not None:
        monkeypatch.setattr(method_module, "COVER_CELLS", cover_cells)
        monkeypatch.setattr(method_module, "COVER_CELLS_AFTER", cover_cells)
    s, builder = _small_loads(tmp_path, [("u", "p", 10), ("v", "q", 30)])
    out = decompose(builder, Budget(20))
    assert out.objective == pytest.approx(800)
    assert out.bound == pytest.approx(bound)


@pytest.mark.parametrize("cover_cells, bound", [(0, 40.0), (None, 50.0)])
def test_a_source_the_lp_never_needs_keeps_the_bound_under_the_optimum(
        tmp_path, monkeypatch, cover_cells, bound):
    """4 units; GPU type A at $1/h carries 10 units a GPU, B at $0.5/h 5: the same
    $0.10 a unit, so the LP keeps A alone (B is dominated: `blocks._arcs`). In whole
    replicas B's ($50 for 100 h) beats A's ($100): the optimum is $50. A's share (0.4)
    would bound the kind at 4 × $0.10 × 100 ÷ 0.4 = $100, above it; a kind with a
    source left out that its share would make the cheaper one (B's own share 0.8:
    $0.125 a unit against A's $0.25) gets no share: the LP relaxation, $40. (A random
    scenario of stop 47's sweep: the bound had been $100.) The site's cover cut (R =
    0.4 of A's replica, B's counting min(0.5, 0.4) / 0.4 = 1) says A + B ≥ 1: $50."""
    if cover_cells is not None:
        monkeypatch.setattr(method_module, "COVER_CELLS", cover_cells)
        monkeypatch.setattr(method_module, "COVER_CELLS_AFTER", cover_cells)
    run, optimum = _four_units(tmp_path, a=(1.0, 10), b=(0.5, 5))
    assert optimum == pytest.approx(50)
    assert run.result.bound == pytest.approx(bound)
    assert run.plan.totals["objective_usd"] == pytest.approx(50)


def _four_units(tmp_path, a: tuple[float, float], b: tuple[float, float]):
    """4 units of an inference workload on GPU types A and B on demand, each given as
    (dollars a GPU-hour, units a GPU; one GPU a replica), 100 hours: the decomposition's
    run (its plan checked) and the optimum HiGHS proves on the whole model."""
    offers, throughput = [], []
    for gpu, (price, units) in (("A", a), ("B", b)):
        offers.append({"region": "r1", "gpu": gpu, "term": "on_demand",
                       "usd_per_gpu_hour": price})
        throughput.append({"workload": "w", "gpu": gpu, "units_per_gpu": units,
                           "gpus_per_replica": 1})
    s = load_scenario(write_csv(tmp_path / "s", scenario(
        settings=H, gpus=[{"gpu": "A"}, {"gpu": "B"}], offers=offers,
        workloads=[{"workload": "w", "kind": "inference"}], throughput=throughput,
        demand=[{"workload": "w", "period": "2027-01", "amount": 4}])))
    run = plan_scenario(s, time_limit=20, gap=1e-9, method="decompose")
    whole = plan_scenario(s, time_limit=20, gap=1e-9, method="whole")
    assert whole.result.status == "optimal"
    assert check_plan(s, run.plan) == []
    return run, whole.plan.totals["objective_usd"]


def test_a_source_left_out_that_stays_dearer_keeps_the_share(tmp_path):
    # 4 units; GPU type A at $0.5/h carries 5 units a GPU ($0.10 a unit), B at $1.2/h 10
    # ($0.12): the LP never needs B (`blocks._arcs`). With small loads in whole replicas
    # A costs $0.10 ÷ 0.8 = $0.125 a unit, B at its own share $0.12 ÷ 0.4 = $0.30: B is
    # still dearer, so A's share stands and the bound is 4 × $0.125 × 100 = $50, A's
    # replica: the optimum (B's replica is $120), proven. Without the share: the LP
    # relaxation, 4 × $0.10 × 100 = $40.
    run, optimum = _four_units(tmp_path, a=(0.5, 5), b=(1.2, 10))
    assert optimum == pytest.approx(50)
    assert run.result.bound == pytest.approx(50)
    assert run.plan.totals["objective_usd"] == pytest.approx(50)
    assert run.result.status == "optimal"
