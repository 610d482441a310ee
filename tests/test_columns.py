"""Column generation (planner.columns): the restricted LP ends at the full LP's optimum.

The full LP is solved on the model over every candidate cell; column generation must reach
the same value (it is then a valid bound for the plan), its reduced costs must agree with
HiGHS's on the columns it built, and a plan solved through it passes the checker.
"""

from __future__ import annotations

import pulp
import pytest
from hypothesis import HealthCheck, given, settings

from planner.candidates import find_candidates
from planner.check import check_plan
from planner.columns import Pricing, generate_columns
from planner.generate import generate
from planner.model import ModelBuilder
from planner.pipeline import plan_scenario
from planner.solve import _run
from planner.validate import load_scenario
from scenarios import BASE, scenario, write_csv
from test_properties import scenarios


def canonical(model) -> tuple:
    """A model as data: rows, columns and objective, independent of build order."""
    rows = {name: (c.sense, round(-c.constant, 9),
                   sorted((v.name, round(a, 9)) for v, a in c.expr.items() if a != 0))
            for name, c in model.prob.constraints.items()}
    columns = {v.name: (v.cat, v.lowBound, v.upBound) for v in model.prob.variables()}
    objective = sorted((v.name, round(a, 9)) for v, a in model.prob.objective.items() if a)
    return rows, columns, objective, round(model.prob.objective.constant, 9)


def full_lp(builder: ModelBuilder) -> float:
    model = builder.build()
    for v in model.integer_variables():
        v.cat = pulp.LpContinuous
    result = _run(model.prob, "highs", 600, 1e-9, 1, False)
    assert result["status"] == "optimal"
    return result["objective"]


def generated(tmp_path, workloads, regions, months, seed):
    folder = tmp_path / f"g{workloads}x{regions}x{months}s{seed}"
    generate(folder, workloads, regions, months, seed=seed)
    return load_scenario(folder)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_scenarios_reach_the_full_lp(tmp_path, seed):
    """Generated markets have workloads with several sites, pools, spot shares, capacity
    limits, commitments and training runs: every pricing rule is exercised."""
    s = generated(tmp_path, 8, 6, 3, seed)
    builder = ModelBuilder(s, find_candidates(s))
    result = generate_columns(builder, 600)
    assert result is not None and result.converged
    assert result.cells < result.all_cells  # something was left out ...
    assert result.lp_objective == pytest.approx(full_lp(builder), rel=1e-7)  # ... rightly
    # the pricing of built columns is HiGHS's own reduced cost
    prices = Pricing(builder)
    checked = 0
    for key, rc, price in prices.reduced_costs(result.model, built=True):
        assert rc == pytest.approx(result.model.supply[key].dj, abs=1e-6 * max(1, abs(price)))
        checked += 1
    assert checked > 0


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(tables=scenarios())
def test_random_scenarios_reach_the_full_lp(tmp_path_factory, tables):
    s = load_scenario(write_csv(tmp_path_factory.mktemp("cg"), tables))
    builder = ModelBuilder(s, find_candidates(s))
    result = generate_columns(builder, 600)
    assert result is not None and result.converged
    assert result.lp_objective == pytest.approx(full_lp(builder), rel=1e-7, abs=1e-6)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_extending_a_model_builds_what_building_all_its_cells_does(tmp_path, seed):
    """Column generation grows one model in place: cells added in three steps give
    exactly the model built over all at once. Spot cells come after others of their
    demand cell (the spot-share row then takes in supply built before), and each
    workload's and pool's cells are spread over the steps (rows created, then extended)."""
    s = generated(tmp_path, 8, 6, 3, seed)
    builder = ModelBuilder(s, find_candidates(s))
    cells = list(builder.cells())

    def spot(cell):
        return cell[3] in builder.payg_offer and builder.payg_offer[cell[3]].term == "spot"

    steps = [{c for i, c in enumerate(cells) if not spot(c) and i % 2 == 0},
             {c for i, c in enumerate(cells) if spot(c) or i % 6 == 1}]
    steps.append(set(cells) - steps[0] - steps[1])
    model = builder.build(steps[0])
    for step in steps[1:]:
        growth = builder.extend(model, step)
        assert len(growth.variables) >= len(step)
    assert canonical(model) == canonical(builder.build())
    assert builder.extend(model, cells).variables == []  # nothing twice


@pytest.mark.parametrize("seed", [1, 2])
def test_a_stopped_generation_bounds_the_full_lp_from_below(tmp_path, seed):
    """Stopped after each of its first rounds, the bound never exceeds the full LP (a
    wrong dual in the pricing would make it cross), never falls, and reaches the LP."""
    s = generated(tmp_path, 8, 6, 3, seed)
    builder = ModelBuilder(s, find_candidates(s))
    lp = full_lp(builder)
    bounds = []
    for rounds in (1, 2, 3, None):
        result = generate_columns(builder, 600, max_rounds=rounds)
        assert result.bound <= lp + 1e-6 * abs(lp)
        assert result.lp_objective >= lp - 1e-6 * abs(lp)  # a restriction of the full LP
        bounds.append(result.bound)
    assert not generate_columns(builder, 600, max_rounds=1).converged
    assert bounds == sorted(bounds)
    assert bounds[0] < lp - 1e-6 * abs(lp)
    assert bounds[-1] == pytest.approx(lp, rel=1e-7)


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(tables=scenarios())
def test_the_first_rounds_bounds_are_below_the_full_lp_on_random_scenarios(
        tmp_path_factory, tables):
    """Both bounds of a stopped generation — Lagrangian, and prices alone — stay below
    the full LP (existing contracts, commitments with upfront, spot, egress, discounting
    and penalties all vary here)."""
    s = load_scenario(write_csv(tmp_path_factory.mktemp("lb"), tables))
    builder = ModelBuilder(s, find_candidates(s))
    result = generate_columns(builder, 600, max_rounds=1)
    assert result is not None
    lp = full_lp(builder)
    tolerance = 1e-6 * max(1.0, abs(lp))
    assert result.bound <= lp + tolerance
    constant = result.model.prob.objective.constant
    assert Pricing(builder).price_bound(constant) <= lp + tolerance


@pytest.mark.parametrize("months, tail, expected", [
    # 3 months: the reserved GPU's counted cost 3 × 100 × 1.2 + 120 = 480 over its 300
    # GPU-hours is $1.6/h (per unit $0.16/h), below on demand's $2/h: 3 × 10 × 100 × 0.16
    (3, "full", 480.0),
    # 1 month, the whole term counted: $480 over the 100 GPU-hours inside is $4.8/h, so
    # on demand is the cheapest: 10 units × 100 h × $0.20
    (1, "full", 200.0),
    # 1 month, prorated: 100 × 1.2 + 120 / 3 = $160 over 100 GPU-hours, $1.6/h
    (1, "prorate", 160.0)])
def test_the_price_bound_by_hand(tmp_path, months, tail, expected):
    """One workload, 10 units a month at one site (months of 100 h), from on-demand GPUs
    of 10 units each at $2/h or a reserved offer at $1.2/h with $120 upfront over 3
    months. A committed GPU-hour is priced at its commitment's counted cost spread over
    the GPU-hours it is active inside the horizon; with one GPU exactly needed, the LP
    pays the same."""
    periods = ["2027-01", "2027-02", "2027-03"][:months]
    tables = scenario(
        settings={"horizon_months": months, "hours_per_month": 100, "tail_policy": tail},
        offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2},
                {"region": "r1", "gpu": "A", "term": "reserved", "usd_per_gpu_hour": 1.2,
                 "commit_months": 3, "upfront_usd_per_gpu": 120}],
        throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 10}],
        demand=[{"workload": "w", "period": p, "amount": 10} for p in periods])
    s = load_scenario(write_csv(tmp_path / "s", tables))
    builder = ModelBuilder(s, find_candidates(s))
    assert Pricing(builder).price_bound(0.0) == pytest.approx(expected)
    assert full_lp(builder) == pytest.approx(expected)


def test_a_plan_through_column_generation_is_valid_and_bounded_by_the_full_lp(tmp_path):
    s = generated(tmp_path, 8, 6, 3, 1)
    lp = full_lp(ModelBuilder(s, find_candidates(s)))
    run = plan_scenario(s, time_limit=30, gap=0.01, columns="generate")
    assert run.plan is not None and "columns" in run.seconds
    assert check_plan(s, run.plan) == []
    # the bound is the full model's LP optimum, not the restricted MIP's bound
    assert run.result.bound == pytest.approx(lp, rel=1e-7)
    assert run.result.objective >= run.result.bound - 1e-6
    assert run.result.gap == pytest.approx(
        (run.result.objective - run.result.bound) / run.result.objective, abs=1e-9)


def test_the_price_bound_is_the_lp_where_prices_alone_decide(tmp_path):
    """Where nothing but prices matters, the bound is the LP itself, so a price counted
    wrong shows. On demand only, 8 % a year discounting, two months of 10 units (1 GPU,
    $2/h, 100 h): 200 + 200 × 1.08^(−1/12). An existing contract of 1 GPU at $1/h for
    both months (sunk, in the objective as 100 + 100 × 1.08^(−1/12)) serves everything:
    the bound is that constant and the unit-hours cost nothing more."""
    base = dict(settings={"horizon_months": 2, "hours_per_month": 100,
                          "discount_rate_annual": 0.08},
                demand=[{"workload": "w", "period": p, "amount": 10}
                        for p in ("2027-01", "2027-02")])
    paid = scenario(**base)
    # (with a reserved offer there too, so committed GPUs are not free for want of one)
    sunk = scenario(**base, offers=BASE["offers"] + [
        {"region": "r1", "gpu": "A", "term": "reserved", "usd_per_gpu_hour": 1.5,
         "commit_months": 12}], existing=[{"region": "r1", "gpu": "A", "gpus": 1,
                                       "start_month": "2027-01", "end_month": "2027-02",
                                       "usd_per_gpu_hour": 1}])
    for name, tables, expected in (("paid", paid, 200 + 200 * 1.08 ** (-1 / 12)),
                                   ("sunk", sunk, 100 + 100 * 1.08 ** (-1 / 12))):
        s = load_scenario(write_csv(tmp_path / name, tables))
        builder = ModelBuilder(s, find_candidates(s))
        lp = full_lp(builder)
        constant = builder.build().prob.objective.constant
        assert lp == pytest.approx(expected)
        assert Pricing(builder).price_bound(constant) == pytest.approx(lp)


def test_the_price_bound_rations_existing_gpus(tmp_path):
    """An existing contract of 1 GPU ($1/h, sunk: 100 × 1 = $100) and 20 units of demand
    (2 GPUs' worth) for a month of 100 h, on demand at $2/h besides. Priced at nothing,
    the existing GPU would serve all 20 units and the bound be the sunk $100. Rationed, it
    is worth λ = $200 (what a GPU's 10 units cost on demand: 10 × 100 × $0.20): the
    bound is 100 + 20 × 100 × 0.20 − 200 × 1 = $300, the LP (1 GPU on demand more)."""
    tables = scenario(
        settings={"hours_per_month": 100},
        demand=[{"workload": "w", "period": "2027-01", "amount": 20}],
        existing=[{"region": "r1", "gpu": "A", "gpus": 1, "start_month": "2027-01",
                   "end_month": "2027-01", "usd_per_gpu_hour": 1}])
    s = load_scenario(write_csv(tmp_path / "s", tables))
    builder = ModelBuilder(s, find_candidates(s))
    constant = builder.build().prob.objective.constant
    assert constant == pytest.approx(100)
    assert Pricing(builder).price_bound(constant) == pytest.approx(300)
    assert full_lp(builder) == pytest.approx(300)
