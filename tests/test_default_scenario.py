"""The default scenario: solves through the CLI, passes the checker, same plan every run."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from planner.cli import app, default_scenario
from planner.validate import load_scenario


def test_default_scenario_solves_and_tells_its_story(tmp_path):
    out = tmp_path / "plan.xlsx"
    res = CliRunner().invoke(app, ["solve", "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["status"] == "optimal" and data["mip_gap"] <= 0.03
    assert out.exists()
    kinds = {w.workload: w.kind for w in load_scenario(default_scenario()).workloads}
    terms_of = {}
    for a in data["assignments"]:
        terms_of.setdefault(kinds[a["workload"]], set()).add(a["term"])
    assert "spot" in terms_of["burst"]  # bursts ride spot
    assert terms_of["training"] & {"reserved", "monthly", "build_to_order", "existing"}
    # cheaper than buying everything pay-as-you-go or on one GPU type
    assert data["total_cost_usd"] < data["baselines"]["pay-as-you-go only"]
    assert data["total_cost_usd"] < data["baselines"]["cheapest single GPU type"]


def test_same_plan_whatever_the_thread_count(tmp_path):
    """Two fresh processes, 1 and 2 solver threads: the same JSON plan."""
    plans = []
    for threads in (1, 2):
        out = subprocess.run(
            [sys.executable, "-m", "planner", "solve", "--json", "--no-baselines",
             "--threads", str(threads), "-o", str(tmp_path / f"plan{threads}.xlsx")],
            capture_output=True, text=True, timeout=600, check=True)
        data = json.loads(out.stdout)
        for key in ("solve_seconds",):
            data.pop(key)
        plans.append(data)
    assert plans[0] == plans[1]
