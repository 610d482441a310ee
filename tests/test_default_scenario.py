"""The default scenario: solves through the CLI, passes the checker, same plan every run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from rendering import error_values, recalculated, stale_values, too_narrow
from typer.testing import CliRunner

from planner.cli import app, default_scenario
from planner.io.validate import load_scenario


def test_default_scenario_solves_and_tells_its_story(tmp_path, own_pace):
    # at the machine's own pace, as a user's command: at the suite's pace of 1, on a
    # machine twice as slow (pace 2.09), 20 s left no time for the comparison plans
    out = tmp_path / "plan.xlsx"
    res = CliRunner().invoke(app, ["solve", "-o", str(out), "--json", "--time-limit", "20"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    # optimal exactly when the gap is within the scenario's setting (SPEC §4 v2); how close
    # 20 s gets is the benchmark's to measure (benchmarks/), here only that it is sane
    # (the bound plans Lambda's and Nebius's 8-GPU instances GPU by GPU: 2-3 % under)
    setting = load_scenario(default_scenario()).settings.mip_gap
    assert (data["status"] == "optimal") == (data["mip_gap"] <= setting)
    assert data["mip_gap"] <= 0.05
    # the gap is taken on a proven bound (SPEC §4 v2)
    changeable = data["objective_usd"] - data["unservable_penalty_usd"]
    assert data["bound_usd"] <= data["objective_usd"]
    assert data["mip_gap"] == pytest.approx((data["objective_usd"] - data["bound_usd"])
                                            / changeable, abs=1e-6)
    # recalculated as finance opens it, every number fits its column (no ###), no errors
    done = recalculated(out, tmp_path / "recalc")
    assert too_narrow(out, done) == [] and error_values(done) == []
    assert stale_values(out, done) == []  # what a preview shows is what Excel does
    kinds = {w.workload: w.kind for w in load_scenario(default_scenario()).workloads}
    terms_of = {}
    for a in data["assignments"]:
        terms_of.setdefault(kinds[a["workload"]], set()).add(a["term"])
    assert "spot" in terms_of["burst"]  # bursts ride spot
    assert terms_of["training"] & {"reserved", "monthly", "build_to_order", "existing"}
    # cheaper than buying everything pay-as-you-go or on one GPU type, like for like
    baselines = {b["name"]: b for b in data["baselines"]}
    for name in ("pay-as-you-go only", "cheapest single GPU type"):
        assert baselines[name]["unmet_unit_hours"] == 0
        assert baselines[name]["saving_usd"] == pytest.approx(
            baselines[name]["total_cost_usd"] - data["total_cost_usd"])
        assert baselines[name]["saving_usd"] > 0
    # a comparison plan that leaves demand unmet states no saving, and the Summary prices
    # what it leaves unserved at the penalty on a line of its own
    from openpyxl import load_workbook

    penalties = [row[2] for row in load_workbook(out)["Summary"].iter_rows(values_only=True)
                 if row[1] == "  its unmet demand at the penalty"]
    unlike = [b for b in baselines.values()
              if b["unmet_unit_hours"] > data["unmet_unit_hours"]]
    assert unlike and len(penalties) == len(unlike)
    for b, penalty in zip(unlike, penalties):
        assert b["saving_usd"] is None
        assert penalty == pytest.approx(b["unmet_penalty_usd"]) and penalty > 0


def test_a_run_stopped_by_its_budget_is_rebuilt_from_its_rounds(tmp_path):
    """A plan stopped by the time limit, rebuilt in a fresh process from the rounds its
    JSON records, with another thread count: the same plan (SPEC: same input, same
    plan; issue #17: reproducible on any machine)."""
    said = []

    def run(*flags):
        out = subprocess.run(
            [sys.executable, "-m", "planner", "solve", "--json", "--no-baselines",
             "-o", str(tmp_path / "plan.xlsx"), *flags],
            capture_output=True, text=True, timeout=600, check=True)
        data = json.loads(out.stdout)
        data.pop("solve_seconds")
        said.append((out.stderr, data.pop("warnings")))
        return data

    first = run("--time-limit", "8", "--threads", "1")
    again = run("--rounds", first["rounds"], "--threads", "2")
    assert again == first
    # the replay says the clock does not stop it (SPEC's time limit is the clock's), on
    # stderr and in its JSON's warnings
    (stderr, warnings), (replay_stderr, replay_warnings) = said
    assert "the time limit does not stop it" in replay_stderr
    assert "the time limit does not stop it" not in stderr
    # (a run past its limit on a busy machine says so, and one its wall clock stopped
    # before its reckoned work ran out: of the wall clock, not the plan; at --time-limit
    # 8 the first run took 9.0 s on a 2-core machine beside other work)
    def of_the_plan(said: list[str]) -> list[str]:
        return [w for w in said if "past --time-limit" not in w
                and "the wall clock stopped the plan" not in w]

    warnings, replay_warnings = of_the_plan(warnings), of_the_plan(replay_warnings)
    assert replay_warnings == [*warnings, replay_warnings[-1]]
    assert "the time limit does not stop it" in replay_warnings[-1]


def test_a_time_limit_shorter_than_the_writing_is_said_and_still_gets_a_whole_plan(tmp_path):
    """--time-limit 1 on the default scenario: writing its tables and workbook alone
    takes longer. The command says so, and still writes a whole plan the checker
    accepts (its first, at first prices), with its proven gap."""
    out = tmp_path / "plan.xlsx"
    res = subprocess.run(
        [sys.executable, "-m", "planner", "solve", "--json", "--no-baselines",
         "-o", str(out), "--time-limit", "1"],
        capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert "--time-limit 1 s leaves no time to plan" in res.stderr
    data = json.loads(res.stdout)
    assert out.exists() and data["unmet_unit_hours"] == 0
    assert data["status"] == "feasible" and data["bound_usd"] < data["objective_usd"]
    # and a budget that leaves time to plan says nothing of the kind (8 s: at 4 s, a
    # clean clone's CI run beside the other tests' worker once loaded the scenario past
    # the time writing needs, and said it; stop 62)
    ok = subprocess.run(
        [sys.executable, "-m", "planner", "solve", "--no-baselines",
         "-o", str(out), "--time-limit", "8"],
        capture_output=True, text=True, timeout=600)
    assert ok.returncode == 0 and "leaves no time" not in ok.stderr
