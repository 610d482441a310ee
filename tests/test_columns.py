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
from planner.columns import _Pricing, generate_columns
from planner.generate import generate
from planner.model import ModelBuilder
from planner.pipeline import plan_scenario
from planner.solve import _run
from planner.validate import load_scenario
from scenarios import write_csv
from test_properties import scenarios


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
    prices = _Pricing(builder)
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
