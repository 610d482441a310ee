"""Calls run in a process of their own beside the command (planner.beside), and the
comparison plans solved that way: the same entries as solved after the plan."""

from __future__ import annotations

import json
import math
import operator
import time

import pytest
from scenarios import scenario, write_csv
from typer.testing import CliRunner

from planner.beside import Beside, BesideFailed
from planner.cli import app


def test_a_call_beside_returns_its_value():
    with Beside(operator.add, 2, 3) as call:
        assert call.result() == 5


def test_what_the_call_prints_stays_out_of_its_value():
    with Beside(print, "noise on stdout") as call:
        assert call.result() is None


def test_a_call_that_raises_is_reported_with_its_error():
    with Beside(math.sqrt, -1) as call:
        with pytest.raises(BesideFailed, match="math domain error"):
            call.result()


def test_leaving_ends_a_call_still_running():
    started = time.monotonic()
    with Beside(time.sleep, 60) as call:
        process = call._proc
    call._thread.join(10)
    assert process.poll() is not None and time.monotonic() - started < 10


# 1 GPU of demand (10 units at 10 a GPU) in each of 12 months of 100 hours, one region of
# provider p. The plan reserves it: 12 × 100 × $1.5 = $1800. Pay-as-you-go only and
# on-demand from p: 12 × 100 × $2 = $2400 (saving $600); the one GPU type is A: $1800.
YEAR = scenario(
    settings={"hours_per_month": 100, "horizon_months": 12},
    offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2},
            {"region": "r1", "gpu": "A", "term": "reserved", "usd_per_gpu_hour": 1.5,
             "commit_months": 12}],
    demand=[{"workload": "w", "period": f"2027-{m:02d}", "amount": 10}
            for m in range(1, 13)])
EXPECTED = {"pay-as-you-go only": (2400, 600), "cheapest single GPU type": (1800, 0),
            "on-demand from p only": (2400, 600)}


@pytest.mark.parametrize("beside", [True, False], ids=["beside", "after"])
def test_comparison_plans_beside_the_plan_or_after_it(tmp_path, monkeypatch, beside):
    import planner.baselines

    monkeypatch.setattr(planner.baselines, "can_solve_beside", lambda threads: beside)
    folder = write_csv(tmp_path / "year", YEAR)
    res = CliRunner().invoke(app, ["solve", str(folder), "-o", str(tmp_path / "plan.xlsx"),
                                   "--json", "--time-limit", "60"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["total_cost_usd"] == pytest.approx(1800)
    got = {b["name"]: (b["total_cost_usd"], b["saving_usd"]) for b in data["baselines"]}
    assert got.keys() == EXPECTED.keys()
    for name, (total, saving) in EXPECTED.items():
        assert got[name] == (pytest.approx(total), pytest.approx(saving, abs=1e-6)), name
    assert {b["status"] for b in data["baselines"]} == {"optimal"}


def test_a_comparison_plan_cheaper_like_for_like_is_said(capsys):
    # a negative saving (the comparison plan costs less and leaves no more demand unmet)
    # means the plan is not the best found: the command says so; no saving stated, or a
    # positive one, says nothing
    from planner.cli.solve import _warn_beaten

    _warn_beaten([{"name": "pay-as-you-go only", "saving_usd": -523159.0},
                  {"name": "one provider", "saving_usd": None},
                  {"name": "single GPU type", "saving_usd": 1200.0}])
    said = " ".join(capsys.readouterr().err.split())
    assert "'pay-as-you-go only' costs $523,159 less than the plan" in said
    assert "one provider" not in said and "single GPU type" not in said
