"""Reproduce the Mélange study (Griggs et al., arXiv:2404.14527) with the planner.

Llama-2-7B on the Chatbot Arena request-size distribution at 8 req/s, A10G ($1.01/h) and
A100 ($3.67/h): the published optimum is 1 × A10G + 2 × A100 at $8.35/h, against $11.01
(A100 only) and $9.09 (A10G only). Each (input, output) size bucket is a workload of one
pool (they share the model's replicas, loads adding up); units are requests/s, and
hours_per_month = 1 makes a month's cost the hourly cost. Data: ../shared/external/melange.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from solving import solve_tables

from planner.model.builder import Restrictions

MELANGE = Path(__file__).resolve().parents[2] / "shared" / "external" / "melange"
pytestmark = pytest.mark.skipif(not MELANGE.exists(), reason="shared Mélange data absent")


def arena_tables(rate: float, gpus: dict[str, str]) -> dict:
    """gpus: our GPU name → name in the profile file."""
    profiles = json.loads((MELANGE / "llama2_7b_gpu_profiles.json").read_text())["gpus"]
    counts = json.loads((MELANGE / "arena_request_size_distribution.json").read_text())[
        "counts_first_20319_rows"]["values"]
    total = sum(map(sum, counts))
    workloads, throughput, demand = [], [], []
    for i in range(6):
        for j in range(6):
            if counts[i][j] == 0:
                continue
            w = f"in{i}-out{j}"
            workloads.append({"workload": w, "kind": "inference", "pool": "llama2-7b"})
            demand.append({"workload": w, "period": "2027-01",
                           "amount": rate * counts[i][j] / total})
            for ours, theirs in gpus.items():
                throughput.append({"workload": w, "gpu": ours,
                                   "units_per_gpu": profiles[theirs]["tputs"][i][j]})
    return {
        "settings": [{"key": "start_month", "value": "2027-01"},
                     {"key": "horizon_months", "value": "1"},
                     {"key": "hours_per_month", "value": "1"}],
        "gpus": [{"gpu": g} for g in gpus],
        "sites": [{"site": "us", "country": "US", "jurisdiction": "US"}], "links": [],
        "regions": [{"region": "aws", "provider": "aws", "site": "us"}],
        "offers": [{"region": "aws", "gpu": g, "term": "on_demand",
                    "usd_per_gpu_hour": profiles[theirs]["cost"]} for g, theirs in gpus.items()],
        "workloads": workloads, "throughput": throughput, "demand": demand,
    }


def test_llama2_7b_arena_8_requests_per_second(tmp_path):
    tables = arena_tables(8, {"A10G": "A10G", "A100": "A100"})
    plan = solve_tables(tmp_path, tables)
    assert plan.totals["unmet_unit_hours"] == pytest.approx(0, abs=1e-9)
    assert plan.totals["total_cost_usd"] == pytest.approx(8.35, abs=1e-9)
    gpus = plan.usage.groupby("gpu")["gpus"].sum().to_dict()
    assert gpus == {"A10G": 1, "A100": 2}


@pytest.mark.parametrize("only, count, cost", [("A100", 3, 11.01), ("A10G", 9, 9.09)])
def test_llama2_7b_arena_single_gpu_baselines(tmp_path, only, count, cost):
    tables = arena_tables(8, {"A10G": "A10G", "A100": "A100"})
    gpu_of = {w["workload"]: only for w in tables["workloads"]}
    plan = solve_tables(tmp_path, tables, restrictions=Restrictions(gpu_of=gpu_of))
    assert plan.totals["total_cost_usd"] == pytest.approx(cost, abs=1e-9)
    assert plan.usage["gpus"].sum() == count


def test_four_gpu_types_at_32_requests_per_second(tmp_path):
    # Not published: the regression value computed independently in expected_results.json
    # (7 × A10G + 5 × A100 + 1 × H100 = 7.07 + 18.35 + 6.234 = $31.654/h).
    tables = arena_tables(32, {g: g for g in ("L4", "A10G", "A100", "H100")})
    plan = solve_tables(tmp_path, tables)
    assert plan.totals["total_cost_usd"] == pytest.approx(31.654, abs=1e-9)
    assert plan.usage.groupby("gpu")["gpus"].sum().to_dict() == {"A10G": 7, "A100": 5,
                                                                   "H100": 1}
