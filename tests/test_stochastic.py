"""Two-stage stochastic plans (SPEC §4 v2, `solve --stochastic`), hand-worked.

hours_per_month 100, one month. One workload, 1 unit per GPU, 10 units forecast. Two
equally likely scenarios: demand × 0.5 (5 GPUs) and × 1.5 (15 GPUs). A 1-month monthly
commitment costs $2 per GPU-hour, on demand $3. With q committed GPUs:

    low:  200 q (+ nothing on demand while q ≥ 5)
    high: 200 q + 300 (15 − q)
    expected (5 ≤ q ≤ 15): 100 q + 150 (15 − q) + 100 q = 2,250 + 50 q  → q = 5: $2,500

(a newsvendor: a committed GPU pays when demand exceeds it with probability above 2/3).
The mean forecast (10 GPUs) commits 10: low 2,000, high 2,000 + 1,500 = 3,500, expected
$2,750: VSS = 2,750 − 2,500 = $250. Knowing the future: low 1,000, high 3,000, expected
$2,000: EVPI = 2,500 − 2,000 = $500. CVaR at α = 0.5 is the high scenario's cost.
With λ = 1: expected + CVaR = (2,250 + 50 q) + (4,500 − 100 q) = 6,750 − 50 q → q = 15,
$6,000 (each scenario $3,000).

The bound by Lagrangian cuts (planner.solve.decompose.cuts), V(q) ≥ A + (200 − y) q for a
price y on a committed GPU-month: at q = 0 the best prices are y = 300 (on demand's
rate), cuts low ≥ 1,500 − 100 q and high ≥ 4,500 − 100 q; the master, held above the
scenarios' own optima (1,000 and 3,000), goes to q = 15 (bound 2,000, wait and see's).
At q = 15, y = 0 for low (its 5 GPUs leave 10 idle): low ≥ 200 q; high's cut is flat at
3,000. Now 0.5 · max(1,500 − 100 q, 200 q, 1,000) + 0.5 · max(4,500 − 100 q, 3,000) is
least at q = 5: 500 + 2,000 = $2,500, the optimum, proven.
"""

from __future__ import annotations

import json
import math
import time

import pytest
from scenarios import scenario, write_csv
from typer.testing import CliRunner

from planner.cli import app
from planner.cluster import Runner
from planner.io.generate import generate
from planner.io.validate import load_scenario
from planner.model.builder import ModelBuilder
from planner.model.candidates import find_candidates
from planner.solve.budget import Budget
from planner.solve.decompose.cuts import commitment_space
from planner.stochastic import cvar, out_of_sample, sample_scenarios, solve_stochastic
from planner.stochastic.method import (
    LEAST_SAMPLES,
    MIN_CUT_S,
    MIN_NEED_S,
    MIN_SOLVE_S,
    MISSED_GROWTH,
    NEED_MARGIN,
    WAIT_SHARE,
    _cut_seconds,
    _limits,
    _need,
    _Stochastic,
)
from planner.stochastic.schedules import Candidate, stepped_schedule

NEWSVENDOR = scenario(
    settings={"hours_per_month": 100},
    offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 3},
            {"region": "r1", "gpu": "A", "term": "monthly", "usd_per_gpu_hour": 2,
             "commit_months": 1}],
    throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 1}],
    demand_scenarios=[{"scenario": "low", "probability": 0.5, "multiplier": 0.5},
                      {"scenario": "high", "probability": 0.5, "multiplier": 1.5}])


def _solve(tmp_path, *args):
    folder = write_csv(tmp_path / "s", NEWSVENDOR)
    res = CliRunner().invoke(app, ["solve", str(folder), "--stochastic", "--json",
                                   "-o", str(tmp_path / "plan.xlsx"), *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


# Ten equally likely scenarios of 5, 6, ... 14 GPUs a month (1 unit a GPU) over 2 months
# of 100 hours; a monthly commitment at $1 an hour, on demand at $3. Each month, c GPUs
# committed cost 100 × (c + 3 × E[(D − c)+]): c = 10: 100 × (10 + 3 × 10/10) = $1,300;
# c = 11: 100 × (11 + 3 × 6/10) = $1,280; c = 12: $1,290; c = 13: $1,330. The optimum
# commits 11 a month: $2,560 (an outside audit).
TEN_SCENARIOS = scenario(
    settings={"hours_per_month": 100, "horizon_months": 2},
    offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 3},
            {"region": "r1", "gpu": "A", "term": "monthly", "usd_per_gpu_hour": 1,
             "commit_months": 1}],
    throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 1}],
    demand=[{"workload": "w", "period": p, "amount": 10} for p in ("2027-01", "2027-02")],
    demand_scenarios=[{"scenario": f"S{i}", "probability": 0.1, "multiplier": 0.5 + i / 10}
                      for i in range(10)])


def test_ten_scenarios_get_the_optimum_within_the_time(tmp_path):
    """The steps from the best schedule go first where the cuts say it is cheaper: the
    step down to 11 GPUs, which the cuts proved optimal, had been left untried when the
    time ran out ($2,570, the command at 5.5 s of its 20); and a small model's solves are
    reckoned at what they take (a cut of it had been reckoned 0.2 s for its 6 ms)."""
    folder = write_csv(tmp_path / "s", TEN_SCENARIOS)
    res = CliRunner().invoke(app, ["solve", str(folder), "--stochastic", "--json",
                                   "--time-limit", "20", "-o", str(tmp_path / "p.xlsx")])
    assert res.exit_code == 0, res.output
    st = json.loads(res.stdout)["stochastic"]
    assert st["expected_cost_usd"] == pytest.approx(2560)
    assert st["bound_usd"] == pytest.approx(2560) and st["status"] == "optimal"


def test_the_stochastic_gap_leaves_out_demand_no_offer_can_serve(tmp_path):
    """SPEC §4 v2's gap, on what the schedule can change: two equally likely scenarios
    whose objectives are $1,000,100 and $1,000,300, $1 M of each the penalty of demand no
    offer can serve; the bound $1,000,180. Expected $1,000,200: gap 20 / (1,000,200 −
    1,000,000) = 10 %, not the 0.002 % of the whole objective (an outside audit: a
    status of optimal at 0.0002 % where 0.55 % was due)."""
    from planner.stochastic.method import _Stochastic
    from planner.stochastic.schedules import Candidate

    s = load_scenario(write_csv(tmp_path / "s", NEWSVENDOR))
    run = _Stochastic(s, s.demand_scenarios, Budget(10.0), None, None, 0.01, 0.0, 0.9,
                      lambda text: None)
    chosen = Candidate("mean forecast", {}, results=[
        {"objective_usd": 1_000_100.0, "unservable_usd": 1_000_000.0},
        {"objective_usd": 1_000_300.0, "unservable_usd": 1_000_000.0}])
    wait = [{"objective_usd": 1_000_100.0, "bound_usd": 1_000_180.0},
            {"objective_usd": 1_000_300.0, "bound_usd": 1_000_180.0}]
    result = run.choose([chosen], wait, -math.inf, 0)
    assert result.bound_usd == pytest.approx(1_000_180)
    assert result.gap == pytest.approx(0.1) and result.status == "feasible"


def test_the_newsvendor_commits_for_the_low_scenario(tmp_path):
    out = _solve(tmp_path)
    st = out["stochastic"]
    assert st["expected_cost_usd"] == pytest.approx(2500)
    assert st["vss_usd"] == pytest.approx(250)
    assert st["evpi_usd"] == pytest.approx(500)
    assert st["cvar_alpha"] == 0.9
    rows = {s["name"]: s for s in st["scenarios"]}
    assert rows["low"]["total_cost_usd"] == pytest.approx(1000)
    assert rows["high"]["total_cost_usd"] == pytest.approx(4000)
    assert rows["low"]["stranded_usd"] == pytest.approx(0)
    assert {r["probability"] for r in rows.values()} == {0.5}
    assert sum(r["probability"] * r["total_cost_usd"] for r in rows.values()) == \
        pytest.approx(st["expected_cost_usd"])
    # wait and see alone proves $2,000; the Lagrangian cuts prove the optimum
    assert st["bound_usd"] == pytest.approx(2500) and st["mip_gap"] == pytest.approx(0)
    assert st["cut_rounds"] >= 2
    assert st["bound_from"] == f"Lagrangian cuts, {st['cut_rounds']} round(s)"
    assert st["candidates_untried"] == 0 and len(st["candidates"]) >= 2
    assert not any("not evaluated for want of time" in w for w in out["warnings"])
    from openpyxl import load_workbook

    risk = load_workbook(tmp_path / "plan.xlsx")["Risk"]
    labels = [c.value for c in risk["A"] if isinstance(c.value, str)]
    assert any(label.startswith("Lower bound (Lagrangian cuts, ") for label in labels)
    assert [c["gpus"] for c in out["commitments"]] == [5]
    assert set(st) >= {"expected_cost_usd", "cvar_usd", "cvar_alpha", "vss_usd", "evpi_usd",
                       "scenarios"}


def test_no_figure_of_the_risk_sheet_renders_as_hashes(tmp_path):
    # the newsvendor at 10^8 times its demand: an expected $250 B. The figures under the
    # table share column B with the probabilities, sized for 0.5000: any expected cost
    # from $10 M on showed ###, and the Weighted column (formulas) was sized for $999 M
    from openpyxl import load_workbook
    from rendering import recalculated, stale_values, too_narrow

    tables = dict(NEWSVENDOR, demand=[dict(d, amount=float(d["amount"]) * 1e8)
                                      for d in NEWSVENDOR["demand"]],
                  demand_scenarios=[dict(NEWSVENDOR["demand_scenarios"][0],
                                         scenario="low: a scenario's name longer than "
                                                  "any candidate schedule's, which had been "
                                                  "cut at fifty"),
                                    NEWSVENDOR["demand_scenarios"][1]])
    folder = write_csv(tmp_path / "s", tables)
    path = tmp_path / "plan.xlsx"
    res = CliRunner().invoke(app, ["solve", str(folder), "--stochastic", "--json",
                                   "--no-baselines", "-o", str(path)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["stochastic"]["expected_cost_usd"] == pytest.approx(2.5e11)
    done = recalculated(path, tmp_path / "recalc")
    assert too_narrow(path, done) == [] and stale_values(path, done) == []
    # its labels and candidates' names whole: two candidates a step apart differ only at
    # their ends (an outside audit read "… +1 GPUs" and "… −1 GPUs" as one)
    ws = load_workbook(path)["Risk"]
    names = [c.value for c in ws["A"] if isinstance(c.value, str)]
    assert any("step" in n for n in names), names
    assert ws.column_dimensions["A"].width >= max(map(len, names))


def test_a_short_budget_still_leaves_small_models_their_cuts(tmp_path):
    # 10 s: the solves take a fraction of a second each, so there is time for the cuts
    # and for every schedule; they were each reckoned at 2 s, which left none for the
    # cuts and one schedule to evaluate: the mean forecast's 10 GPUs, $2,750 expected
    # (low 10 × 100 × 2 = 2,000; high 2,000 + 5 × 100 × 3 = 3,500), not the $2,500 of 5
    st = _solve(tmp_path, "--time-limit", "10")["stochastic"]
    assert st["cut_rounds"] >= 2 and st["mip_gap"] == pytest.approx(0)
    assert st["expected_cost_usd"] == pytest.approx(2500)
    assert st["status"] == "optimal"


def test_risk_aversion_commits_for_the_high_scenario(tmp_path):
    out = _solve(tmp_path, "--risk-aversion", "1", "--cvar-alpha", "0.5")
    st = out["stochastic"]
    assert st["cvar_usd"] == pytest.approx(3000) and st["expected_cost_usd"] == \
        pytest.approx(3000)
    assert [c["gpus"] for c in out["commitments"]] == [15]
    # proven: the master over the cuts bounds expected + CVaR at $6,000 too
    assert st["bound_usd"] == pytest.approx(6000) and st["mip_gap"] == pytest.approx(0)
    # the Risk sheet states the same figures
    from openpyxl import load_workbook

    ws = load_workbook(tmp_path / "plan.xlsx")["Risk"]
    labels = {row[0]: row[1] for row in ws.iter_rows(min_col=1, max_col=2, values_only=True)
              if isinstance(row[0], str)}
    assert labels["Value of the stochastic solution (VSS)"] == pytest.approx(st["vss_usd"])
    assert labels["Risk aversion λ"] == 1
    # what the schedule was chosen on: a formula over expected cost, λ and CVaR, and each
    # candidate's beside its expected cost (an outside audit saw candidates tied on
    # expected cost and nothing to tell why one won)
    from rendering import recalculated, stale_values

    chosen_on = labels["Expected cost + λ·CVaR"]
    assert isinstance(chosen_on, str) and chosen_on.startswith("=")
    done = recalculated(tmp_path / "plan.xlsx", tmp_path / "recalc")
    assert stale_values(tmp_path / "plan.xlsx", done) == []
    rows = list(ws.iter_rows(values_only=True))
    head = next(i for i, row in enumerate(rows)
                if row[0] == "Candidate schedules (expected objective)")
    assert rows[head][2] == "+ λ·CVaR"
    chosen = [row for row in rows[head + 1:] if row[0] == labels["Schedule chosen"]]
    assert chosen and chosen[0][2] == pytest.approx(6000)
    # the Summary says what its plan is of: the scenarios' mean forecast (an outside audit
    # read a Service demand nobody entered, unsaid)
    note = load_workbook(tmp_path / "plan.xlsx")["Summary"]["A2"].value
    assert note.startswith("Stochastic plan: the probability-weighted mean of 2 demand "
                           "scenarios") and "$3,000 (objective)" in note, note


def test_stochastic_options_without_stochastic_are_said_to_change_nothing(tmp_path):
    folder = write_csv(tmp_path / "s", NEWSVENDOR)
    res = CliRunner().invoke(app, ["solve", str(folder), "--samples", "3", "--jobs", "2",
                                   "--no-baselines", "-o", str(tmp_path / "p.xlsx")])
    assert res.exit_code == 0
    assert "--samples, --jobs apply to --stochastic only; ignored" in res.output
    res = CliRunner().invoke(app, ["solve", str(folder), "--no-baselines",
                                   "-o", str(tmp_path / "p.xlsx")])
    assert res.exit_code == 0 and "--stochastic only" not in res.output


def test_probabilities_that_do_not_sum_to_one_are_bad_input(tmp_path):
    bad = dict(NEWSVENDOR, demand_scenarios=[
        {"scenario": "low", "probability": 0.5, "multiplier": 0.5},
        {"scenario": "high", "probability": 0.6, "multiplier": 1.5},
        {"scenario": "high", "probability": 0.4, "workload": "w", "multiplier": 1.5}])
    folder = write_csv(tmp_path / "s", bad)
    res = CliRunner().invoke(app, ["validate", str(folder)])
    assert res.exit_code == 2
    assert "sum to 1.1" in " ".join(res.output.split())
    assert "probability 0.6 on row 3" in " ".join(res.output.split())
    # probabilities that do not parse (above 1, negative) are said on their rows, and
    # the sum they leave unknown is not also said ("sum to 0, not 1"; an outside audit)
    bad = dict(NEWSVENDOR, demand_scenarios=[
        {"scenario": "low", "probability": 1.2, "multiplier": 0.5},
        {"scenario": "high", "probability": -0.2, "multiplier": 1.5}])
    res = CliRunner().invoke(app, ["validate", str(write_csv(tmp_path / "t", bad))])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "row 2" in said and "row 3" in said
    assert "sum to" not in said
    # a probability that clashes with its scenario's is said on a row with another
    # problem too (two outside audits: a bad period or multiplier hid it)
    bad = dict(NEWSVENDOR, demand_scenarios=[
        {"scenario": "low", "probability": 0.5, "multiplier": 0.8},
        {"scenario": "high", "probability": 0.5, "multiplier": 1.2},
        {"scenario": "high", "probability": 0.4, "workload": "w", "period": "2027Q7",
         "multiplier": 1.5}])
    res = CliRunner().invoke(app, ["validate", str(write_csv(tmp_path / "u", bad))])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "2027Q7" in said
    assert "scenario 'high' has probability 0.5 on row 3, 0.4 here" in said


def test_a_scenarios_probability_once_on_one_of_its_rows(tmp_path):
    # high's probability stated on its second row only: its first row's blank takes it;
    # a scenario with no probability on any row is said at its first row, with nothing
    # else (its rows' sum is not also off: 0.5 + 0.5 for low and high)
    table = [{"scenario": "low", "probability": 0.5, "multiplier": 0.5},
             {"scenario": "high", "workload": "w", "multiplier": 1.5},
             {"scenario": "high", "probability": 0.5, "period": "2027-01",
              "multiplier": 2}]
    s = load_scenario(write_csv(tmp_path / "ok", dict(NEWSVENDOR, demand_scenarios=table)))
    assert [(d.name, d.probability) for d in s.demand_scenarios] == \
        [("low", 0.5), ("high", 0.5)]
    unknown = [*table, {"scenario": "none", "multiplier": 1}]
    res = CliRunner().invoke(app, ["validate", str(write_csv(
        tmp_path / "bad", dict(NEWSVENDOR, demand_scenarios=unknown)))])
    said = " ".join(res.output.split())
    assert res.exit_code == 2
    assert "row 5" in said and "scenario 'none' has no probability on any of its rows" in said
    assert "1 error(s)" in said


def test_stochastic_needs_scenarios(tmp_path):
    plain = {k: v for k, v in NEWSVENDOR.items() if k != "demand_scenarios"}
    folder = write_csv(tmp_path / "s", plain)
    res = CliRunner().invoke(app, ["solve", str(folder), "--stochastic",
                                   "-o", str(tmp_path / "p.xlsx")])
    assert res.exit_code == 2 and "--samples" in res.output


def test_cvar_is_the_mean_of_the_worst_tail():
    # four equally likely costs 1, 2, 3, 10: the worst 25 % is 10; the worst 50 % (3+10)/2
    assert cvar([1, 2, 3, 10], [0.25] * 4, 0.75) == pytest.approx(10)
    assert cvar([1, 2, 3, 10], [0.25] * 4, 0.5) == pytest.approx(6.5)
    assert cvar([1, 2, 3, 10], [0.25] * 4, 0.0) == pytest.approx(4)


def test_samples_are_seeded_and_the_cluster_gives_the_sequential_result(tmp_path):
    s = load_scenario(write_csv(tmp_path / "s", NEWSVENDOR))
    draws = sample_scenarios(s, 6, 0.3, seed=4)
    assert draws == sample_scenarios(s, 6, 0.3, seed=4)
    assert draws != sample_scenarios(s, 6, 0.3, seed=5)
    assert sum(d.probability for d in draws) == pytest.approx(1)
    with Runner() as alone:
        one = solve_stochastic(s, draws, Budget(60).reckoned(0.0), alone)
    with Runner(jobs=2, processes=False) as cluster:  # an in-process Dask cluster
        two = solve_stochastic(s, draws, Budget(60).reckoned(0.0), cluster)
    assert one.chosen.commitments == two.chosen.commitments
    assert one.expected_cost_usd == pytest.approx(two.expected_cost_usd, rel=1e-12)
    assert [r["total_cost_usd"] for r in one.scenario_rows()] == \
        [r["total_cost_usd"] for r in two.scenario_rows()]


def test_a_dask_cluster_at_its_address_gives_the_result_of_one_worker(tmp_path):
    # SPEC §4: `--scheduler ADDRESS` (an existing cluster, as `dask scheduler` and `dask
    # worker` start one: here two worker processes listening on TCP) gives the result
    # of a run on one local worker. The newsvendor's two scenarios: its optimum, $2,500
    from distributed import LocalCluster

    alone = _solve(tmp_path / "a", "--jobs", "1")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, protocol="tcp",
                      dashboard_address=":0") as cluster:
        remote = _solve(tmp_path / "b", "--scheduler", cluster.scheduler_address)
    st, own = remote["stochastic"], alone["stochastic"]
    assert st["expected_cost_usd"] == pytest.approx(2500)
    assert remote["commitments"] == alone["commitments"] != []
    assert (st["expected_cost_usd"], st["bound_usd"], st["evpi_usd"]) == \
        (own["expected_cost_usd"], own["bound_usd"], own["evpi_usd"])


def test_sampled_scenarios_are_checked_out_of_sample(tmp_path):
    # 4 samples choose the schedule; 4 fresh ones (the seed + FRESH_SEED) evaluate it. On a
    # sample with multiplier f the schedule of q GPUs costs 200 q + 300 max(0, 10 f − q)
    # (whole GPUs: the excess is served by ceil(10 f − q) on-demand GPUs).
    from planner.cli import FRESH_SEED

    out = _solve(tmp_path, "--samples", "4", "--demand-spread", "0.3", "--seed", "2")
    st = out["stochastic"]
    q = sum(c["gpus"] for c in out["commitments"])
    s = load_scenario(write_csv(tmp_path / "again", NEWSVENDOR))
    fresh = sample_scenarios(s, 4, 0.3, seed=2 + FRESH_SEED)
    expected = sum(d.probability * (200 * q + 300 * max(0, math.ceil(
        10 * d.multiplier("w", 0) - q - 1e-9))) for d in fresh)
    check = st["out_of_sample"]
    assert check["samples"] == 4
    assert check["expected_cost_usd"] == pytest.approx(expected)
    # the scenario's own table of two scenarios is not used: said, not passed over
    assert any("the demand_scenarios table's 2 are not used" in w for w in out["warnings"])
    assert check["difference_usd"] == pytest.approx(expected - st["expected_cost_usd"],
                                                    abs=0.02)


def test_schedules_the_time_cannot_evaluate_are_said(tmp_path):
    # a 16x10x4 market, 4 samples at 5 s: the evaluation holds the mean forecast's
    # schedule alone, whose VSS is then $0 for want of a rival: said, and counted
    generate(tmp_path / "g", 16, 10, 4, 1)
    res = CliRunner().invoke(app, ["solve", str(tmp_path / "g"), "--stochastic", "--json",
                                   "--samples", "4", "--time-limit", "5",
                                   "-o", str(tmp_path / "p.xlsx")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    st = out["stochastic"]
    assert [c["name"] for c in st["candidates"]] == ["mean forecast"]
    assert st["candidates_untried"] >= 1 and st["vss_usd"] == 0
    said = [w for w in out["warnings"] if "not evaluated for want of time" in w]
    assert len(said) == 1 and "the mean forecast's alone" in said[0]


def test_no_fresh_sample_is_evaluated_past_the_time(tmp_path):
    # no time left for one solve at what a solve needs: no out-of-sample check (it ran
    # one anyway, past the limit)
    s = load_scenario(write_csv(tmp_path / "s", NEWSVENDOR))
    with Runner() as alone:
        result = solve_stochastic(s, s.demand_scenarios, Budget(30), alone)
        fresh = sample_scenarios(s, 4, 0.3, seed=5)
        assert out_of_sample(result, s, fresh, Budget(0.0), alone) is None
        assert out_of_sample(result, s, fresh, Budget(30), alone)["samples"] == 4


def test_fresh_samples_are_evaluated_within_the_time_they_have(monkeypatch):
    # 1.8 s of room, a solve needing 0.51 s and taking 0.05 s beyond its limit: counted at
    # the need, three fit, but each evaluation is given at least EVALUATION_S (1 s), so
    # one fits, at 1.75 s (three at 1 s had spent 3.15 s of the 1.8)
    from types import SimpleNamespace

    import planner.stochastic.result as result_module

    monkeypatch.setattr(result_module, "apply", lambda scenario, fresh: fresh)

    class Spent:
        def map(self, fn, tasks):  # each evaluation takes its limit and the overhead
            return [{"objective_usd": 1.0, "task_s": task[3] + 0.05} for task in tasks]

    result = SimpleNamespace(need_s=0.51, overhead_s=0.05, alpha=0.9, expected_cost_usd=1.0,
                             chosen=SimpleNamespace(commitments={}))
    fresh = tuple(SimpleNamespace(probability=0.25) for _ in range(4))
    budget = Budget.of_work(1.8)  # on the work clock: what the evaluations spent
    check = out_of_sample(result, None, fresh, budget, Spent())
    assert check["samples"] == 1
    assert budget.left() >= -1e-9


def test_later_solves_get_the_time_the_first_ones_needed_to_plan():
    # wait-and-see solves given 10 s would have made their plans from the LP with 3 s and
    # 8 s: later solves get more than 8 s; one that made none within its 10 s: more
    # than 10 s; models solved whole (no master): what their solves took, at least the
    # floor (a solve that found no plan tells nothing)
    need, missed = _need([{"least_s": 3.0}, {"least_s": 8.0}], limit=10.0)
    assert need > 8.0 and missed == 0
    need, missed = _need([{"least_s": 3.0}, {"least_s": math.inf}], limit=10.0)
    assert need > 10.0 and missed == 1
    need, missed = _need([{"least_s": None, "seconds": 4.0}, {"least_s": 3.0}], limit=10.0)
    assert 4.0 < need < 10.0 and missed == 0
    assert _need([{"least_s": None, "seconds": 0.05}, {"status": "no_plan"}],
                 limit=10.0) == (MIN_NEED_S, 0)
    # one that missed: twice its limit (MISSED_GROWTH) and the margin. The default
    # scenario's mean forecast missed at 2 s on a machine whose reckoning ran long, and
    # then needed 3.1 s (3.9 s with the margin): taken as 2 s / BOUND_SHARE, 2.9 s, four
    # of the five solves given that missed again (8 samples at --time-limit 60: 45.6 %)
    need, missed = _need([{"least_s": math.inf}], limit=2.0)
    assert need == pytest.approx(2.0 * MISSED_GROWTH * NEED_MARGIN) and missed == 1
    assert need > NEED_MARGIN * 3.11


def test_solves_that_cannot_all_have_what_they_need_are_not_all_cut_short():
    # 10 solves, 100 worker-seconds, 1 s overhead each, 24 s needed: 10 × 25 do not fit;
    # 3 × 25 + 7 × 3 = 96 do: three get the need, seven a plan at first prices
    assert _limits(10, 100.0, 24.0, 9.0, 1.0) == [24.0] * 3 + [MIN_SOLVE_S] * 7
    # all fit: each gets the wait-and-see share's limit, or the need if more
    assert _limits(4, 100.0, 12.0, 9.0, 1.0) == [12.0] * 4
    assert _limits(4, 100.0, 5.0, 9.0, 1.0) == [9.0] * 4
    # never none: the first (the mean forecast's) gets the need whatever
    assert _limits(3, 10.0, 24.0, 3.0, 1.0) == [24.0, MIN_SOLVE_S, MIN_SOLVE_S]
    # a need below MIN_SOLVE_S that does not fit: the pot shared out (the others had got
    # MIN_SOLVE_S, more than the need: 4 × 2 s of an 8-s command's 3 s), at least
    # LEAST_LIMIT_S
    assert _limits(4, 3.0, 1.2, 0.5, 0.25) == [0.5] * 4
    assert _limits(4, 4.0, 1.2, 0.5, 0.25) == [pytest.approx(0.75)] * 4


def test_a_round_of_cuts_runs_only_where_it_fits_its_share():
    # 8 cuts, 0.35 s each beyond its limit: 15 s give each 15 / 8 - 0.35 = 1.525 s
    assert _cut_seconds(15.0, 8, 0.35, took=1.55) == pytest.approx(1.525)
    # 2.93 s left after a round whose cuts took 1.16 s: no round (each would get 0.016 s;
    # a floor of 1 s each had run 8 × 1.35 = 10.8 s of work in those 2.93 s, and the
    # evaluation then held one schedule, the mean forecast's, where it holds two)
    assert _cut_seconds(2.93, 8, 0.35, took=1.16) is None
    # a small model's cuts, 0.03 s each: a round on less than MIN_CUT_S
    assert _cut_seconds(1.0, 2, 0.01, took=0.03) == pytest.approx(0.49)
    assert 0.49 < MIN_CUT_S
    # but not on less than a cut took, nor on nothing
    assert _cut_seconds(0.1, 2, 0.01, took=0.06) is None
    assert _cut_seconds(0.02, 2, 0.01, took=0.0) is None


def _newsvendor(tmp_path, runner) -> tuple[_Stochastic, tuple]:
    """The newsvendor's stochastic run with 100 s on `runner`, and its commitment's key."""
    s = load_scenario(write_csv(tmp_path / "s", NEWSVENDOR))
    key = next(iter(commitment_space(ModelBuilder(s, find_candidates(s)))))
    return _Stochastic(s, s.demand_scenarios, Budget(100), runner, None, None, 0.0, 0.9,
                       lambda text: None), key


def test_the_evaluation_compares_only_the_schedules_it_has_time_to_plan(tmp_path):
    # 100 s, one worker, two scenarios: the evaluation's share (EVALUATE_SHARE, 85 s) at
    # 40 s a solve holds one schedule (2 solves); at the floor, all three
    with Runner() as alone:
        run, key = _newsvendor(tmp_path, alone)
        schedules = [Candidate("none", {}), Candidate("five", {key: 5}),
                     Candidate("ten", {key: 10})]
        run.need = 40.0
        assert [c.name for c in run.evaluate(schedules)] == ["none"]
        assert run.untried == 2  # said, with the result (a VSS of $0 for want of rivals)
        run.need = MIN_SOLVE_S
        evaluated = run.evaluate(schedules)
    assert [c.name for c in evaluated] == ["none", "five", "ten"] and run.untried == 0
    # q committed GPUs: low 200 q + 300 max(0, 5 − q), high 200 q + 300 (15 − q)
    assert [float(c.costs() @ [0.5, 0.5]) for c in evaluated] == pytest.approx(
        [3000, 2500, 2750])


def test_perfect_information_is_worth_what_the_cheapest_plans_found_say(tmp_path):
    # the newsvendor, each scenario's own solve stopped short (costs above the optima,
    # 1,000 and 3,000): the schedule of 5 GPUs re-planned in the low scenario costs
    # 1,000, less than its own plan; known in advance is the cheaper of the two, and
    # EVPI = 2,500 − (1,000 + 3,000) / 2 = 500 as with exact wait-and-see plans
    with Runner() as alone:
        run, key = _newsvendor(tmp_path, alone)
        schedules = run.evaluate([Candidate("five", {key: 5})])
    rough = [{"objective_usd": 1_200.0, "bound_usd": 900.0},
             {"objective_usd": 3_000.0, "bound_usd": 2_900.0}]
    result = run.choose(schedules, rough, cut_bound=0.0, rounds=0)
    assert result.expected_cost_usd == pytest.approx(2_500)
    assert [r["wait_and_see_usd"] for r in result.scenario_rows()] == pytest.approx(
        [1_000, 3_000])
    assert result.evpi_usd == pytest.approx(500)
    # cuts from the wait-and-see solves' prices alone (no round) say so
    result = run.choose(schedules, rough, cut_bound=2_400.0, rounds=0)
    assert result.bound_from == "Lagrangian cuts at the wait-and-see prices"
    assert result.bound_usd == pytest.approx(2_400)
    # a scenario's own solve cut short of its LP: what perfect information is worth is
    # not known (its plan at first prices had made EVPI $0 beside a 27 % gap)
    run.missed = 1
    assert run.choose(schedules, rough, cut_bound=0.0, rounds=0).evpi_usd is None


def test_steps_from_the_best_schedule_reach_the_newsvendors_optimum(tmp_path):
    # q monthly GPUs against 5 or 15 (p ½ each): E = 3,000 − 100 q up to 5, 2,250 + 50 q
    # beyond. From 8 ($2,650): 9 is dearer, 7 cheaper ($2,600); from 7, 6 ($2,550); from
    # 6, 5 ($2,500); from 5, 4 is dearer ($2,600) and 6 tried: the optimum, 3 steps away
    with Runner() as alone:
        run, key = _newsvendor(tmp_path, alone)
        tried = run.steps(run.evaluate([Candidate("eight", {key: 8})]))
    best = min(tried, key=lambda c: run.value(c)[0])
    assert best.commitments == {key: 5}
    assert best.name == f"eight + 3 step(s), the last {key[0]} from 2027-01 -1 GPUs"
    assert len({c.name for c in tried}) == len(tried)  # each schedule its own name
    assert run.value(best)[1] == pytest.approx(2_500)
    assert sorted(c.commitments[key] for c in tried) == [4, 5, 6, 7, 8, 9]
    # no time: no step
    run.total = Budget(0.0)
    assert len(run.steps([tried[0]])) == 1


def test_a_step_keeps_to_the_offers_minimum_instances_and_cap():
    from types import SimpleNamespace


    offers = {"big": SimpleNamespace(key="big", gpus_per_instance=4, min_gpus=8,
                                     max_gpus=12, commit_months=2)}
    # one instance more or less; below the minimum: none; from none: the minimum
    assert stepped_schedule({("big", 0): 8}, ("big", 0), 1, offers, 3) == {("big", 0): 12}
    assert stepped_schedule({("big", 0): 8}, ("big", 0), -1, offers, 3) == {}
    assert stepped_schedule({}, ("big", 0), 1, offers, 3) == {("big", 0): 8}
    assert stepped_schedule({}, ("big", 0), -1, offers, 3) is None
    # terms overlapping in month 1 would hold 12 + 4 GPUs of a 12-GPU offer
    assert stepped_schedule({("big", 0): 12}, ("big", 0), 1, offers, 3) is None
    assert stepped_schedule({("big", 0): 8, ("big", 1): 4}, ("big", 1), 1, offers,
                            3) is None


def test_samples_the_time_cannot_hold_are_left_out(tmp_path):
    # 20 samples, 10 s, solves of 0.5 s that end before their limit: 9 samples' solves
    # fit (each a wait-and-see solve and an evaluation, and the mean forecast again:
    # (10 - 0.5) // 1); at least LEAST_SAMPLES

    s = load_scenario(write_csv(tmp_path / "s", NEWSVENDOR))
    drawn = sample_scenarios(s, 20, 0.2, 0)
    run = _Stochastic(s, drawn, Budget(10.0), Runner(), None, None, 0.0, 0.9,
                      lambda text: None, drawn=True)
    assert run._samples_that_fit(0.5) == 9
    assert run._samples_that_fit(30.0) == LEAST_SAMPLES
    assert run._samples_that_fit(0.001) == 20
    # the command: 400 samples of a one-month market in 3 s took 4-5 times that (each
    # solve ~25 ms); now the schedule is chosen on those that fit, equally likely, and
    # the command says so
    folder = write_csv(tmp_path / "c", NEWSVENDOR)
    res = CliRunner().invoke(app, ["solve", str(folder), "--stochastic", "--json",
                                   "--samples", "400", "--time-limit", "3",
                                   "-o", str(tmp_path / "p.xlsx")])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["stochastic"]["scenarios"]
    assert LEAST_SAMPLES <= len(rows) < 400
    assert sum(r["probability"] for r in rows) == pytest.approx(1.0)
    assert len({r["probability"] for r in rows}) == 1
    assert f"holds the solves of {len(rows)} of 400 samples" in " ".join(res.stderr.split())


def test_a_table_of_more_scenarios_than_the_time_holds_is_said_to_run_late(tmp_path):
    # 80 scenarios of a one-month market at --time-limit 2: some 160 solves of ~25 ms
    # that end before their limits. A table's scenarios are all planned (unlike drawn
    # samples); the command had run 10 s late without a word (150 at --time-limit 3)
    tables = dict(NEWSVENDOR)
    n = 80
    tables["demand_scenarios"] = [{"scenario": f"s{i}", "probability": 1 / n,
                                   "multiplier": 0.5 + i / n} for i in range(n)]
    folder = write_csv(tmp_path / "s", tables)
    res = CliRunner().invoke(app, ["solve", str(folder), "--stochastic", "--json",
                                   "--time-limit", "2", "-o", str(tmp_path / "p.xlsx")])
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.stdout)["stochastic"]["scenarios"]) == n
    assert "the command may end late" in " ".join(res.stderr.split())


def test_options_outside_their_domain_are_bad_input(tmp_path):
    # --seed -5, --demand-spread inf or 1e308, --risk-aversion inf: exit 1 (an
    # unexpected error) or a gap of nan %
    folder = write_csv(tmp_path / "s", NEWSVENDOR)
    for args in (["--samples", "3", "--seed", "-5"], ["--samples", "3", "--demand-spread",
                                                       "inf"],
                 ["--samples", "3", "--demand-spread", "1e308"], ["--risk-aversion", "inf"]):
        res = CliRunner().invoke(app, ["solve", str(folder), "--stochastic",
                                       "-o", str(tmp_path / "p.xlsx"), *args])
        assert res.exit_code == 2, (args, res.output)
        assert "unexpected" not in res.output and not (tmp_path / "p.xlsx").exists()


def test_every_option_out_of_range_is_said_with_the_scenarios_problems(tmp_path):
    # SPEC §3: every problem at once. An outside audit: typer's own ranges stopped at
    # --samples 0, and neither the other options nor the scenario's errors were said
    folder = write_csv(tmp_path / "s", dict(NEWSVENDOR, settings=[]))  # no start_month
    res = CliRunner().invoke(app, ["solve", str(folder), "--stochastic", "--samples", "0",
                                   "--demand-spread", "11", "--cvar-alpha", "1", "--gap",
                                   "nan", "-o", str(tmp_path / "p.xlsx")])
    said = " ".join(res.output.split())
    assert res.exit_code == 2, said
    for problem in ("--samples must be at least 1, not 0",
                    "--demand-spread must be from 0 to 10, not 11",
                    "--cvar-alpha must be from 0 to 0.999, not 1",
                    "--gap must be a number, not nan", "start_month"):
        assert problem in said, problem
    assert not (tmp_path / "p.xlsx").exists()


def test_generates_options_out_of_range_are_said_together(tmp_path):
    res = CliRunner().invoke(app, ["generate", str(tmp_path / "g"), "--workloads", "0",
                                   "--regions", "2", "--months", "241"])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and not (tmp_path / "g").exists()
    assert "--workloads must be at least 1, not 0" in said
    assert "--regions must be at least 3, not 2" in said
    assert "--months must be from 1 to 240, not 241" in said


def test_options_of_a_deterministic_solve_are_said_to_be_ignored(tmp_path):
    # --export-model with --stochastic: no file and no word
    folder = write_csv(tmp_path / "s", NEWSVENDOR)
    res = CliRunner().invoke(app, ["solve", str(folder), "--stochastic", "--time-limit", "20",
                                   "-o", str(tmp_path / "p.xlsx"),
                                   "--export-model", str(tmp_path / "m.mps")])
    assert res.exit_code == 0, res.output
    assert "--export-model applies to a deterministic solve" in " ".join(res.output.split())
    assert not (tmp_path / "m.mps").exists()


def test_demand_scenarios_rows_outside_the_horizon_and_a_missing_multiplier(tmp_path):
    # a row whose period lies outside the horizon was passed over without a word (as
    # demand's: one warning); a table with no multiplier made every scenario × 1
    tables = dict(NEWSVENDOR)
    tables["demand_scenarios"] = NEWSVENDOR["demand_scenarios"] + [
        {"scenario": "low", "probability": 0.5, "period": "2035-01", "multiplier": 2}]
    res = CliRunner().invoke(app, ["validate", str(write_csv(tmp_path / "a", tables))])
    assert res.exit_code == 0, res.output
    assert "1 row(s) lie outside the horizon; ignored" in " ".join(res.output.split())
    tables["demand_scenarios"] = [{"scenario": "low", "probability": 0.5},
                                  {"scenario": "high", "probability": 0.5}]
    res = CliRunner().invoke(app, ["validate", str(write_csv(tmp_path / "b", tables))])
    assert res.exit_code == 2 and "multiplier" in res.output, res.output


def _slow_square(x: int) -> int:
    import time

    time.sleep(0.3)
    return x * x


def test_tasks_carrying_large_scenarios_raise_no_warning():
    # 12 MiB of tasks (a 200x40x24 stochastic run sends 14 MiB of scenarios): Dask's
    # advice about large graphs is not for the user of the command
    import warnings

    with Runner(jobs=2, processes=False) as cluster, warnings.catch_warnings():
        warnings.simplefilter("error")
        sizes = cluster.map(len, [bytes(4 << 20)] * 3)
    assert sizes == [4 << 20] * 3


def test_a_worker_lost_mid_run_has_its_tasks_run_again(tmp_path):
    # Two worker processes; one is killed while tasks run. Every result comes back once,
    # in the tasks' order (Dask reschedules the lost worker's tasks; the nanny restarts it).
    import os
    import signal
    import threading

    with Runner(jobs=2) as runner:
        pids = list(runner.client.run(os.getpid).values())

        def kill_one():
            os.kill(pids[0], signal.SIGKILL)

        threading.Timer(1.0, kill_one).start()
        done = []
        results = runner.map(_slow_square, range(24), lambda i, c, t: done.append(i))
        assert pids[0] not in runner.client.run(os.getpid).values()  # it did die
    assert results == [x * x for x in range(24)]
    assert sorted(done) == list(range(24))  # each reported once


def test_lagrangian_cuts_by_hand(tmp_path):
    """The cuts and the master of the module docstring, round by round."""
    from planner.model.builder import ModelBuilder
    from planner.model.candidates import find_candidates
    from planner.solve.decompose.cuts import CutMaster, commitment_space, cut_at
    from planner.stochastic import apply

    s = load_scenario(write_csv(tmp_path / "s", NEWSVENDOR))
    low, high = (ModelBuilder(x, find_candidates(x))
                 for x in (apply(s, d) for d in s.demand_scenarios))
    space = commitment_space(high)
    [key] = space
    assert space[key] == (15, 200)  # the busiest month's 15 GPUs, $2 × 100 h each
    master = CutMaster([0.5, 0.5], space, [1000, 3000])
    assert master.solve() == (pytest.approx(2000), {})
    for builder, constant, slope in ((low, 1500, -100), (high, 4500, -100)):
        cut = cut_at(builder, {}, 10)
        assert (cut.constant, cut.slope[key]) == (pytest.approx(constant), pytest.approx(slope))
    master.add(0, cut_at(low, {}, 10))
    master.add(1, cut_at(high, {}, 10))
    value, q = master.solve()
    assert value == pytest.approx(2000) and q[key] == pytest.approx(15)
    at_15 = cut_at(low, q, 10)
    assert (at_15.constant, at_15.slope[key], at_15.value) == \
        (pytest.approx(0), pytest.approx(200), pytest.approx(3000))
    master.add(0, at_15)
    master.add(1, cut_at(high, q, 10))
    value, q = master.solve()
    assert value == pytest.approx(2500) and q[key] == pytest.approx(5)


def test_jobs_0_is_one_worker_per_core_as_in_whatif(tmp_path):
    # --jobs 0 was refused here and meant one worker per core in whatif; the figures are
    # the newsvendor's whatever the workers ($2,500: 5 GPUs committed)
    st = _solve(tmp_path, "--jobs", "0", "--time-limit", "30")["stochastic"]
    assert st["expected_cost_usd"] == pytest.approx(2500)


def test_payments_after_the_horizon_are_not_stranded(tmp_path):
    # 2 months of 9 or 11 units (1 a GPU), p 0.5 each; a 4-month reservation at $1 (400 a
    # GPU, counted whole) against on demand at $3 (600 for the 2 months): the 9 GPUs both
    # scenarios use are reserved (the 10th and 11th would save 0.5 × 600 < 400). Used in
    # every month of the horizon: nothing stranded in either (the 2 months after it, $1,800,
    # were counted as stranded). Low 9 × 400 = $3,600; high 3,600 + 2 × 2 × 100 × 3 = $4,800
    folder = write_csv(tmp_path / "s", scenario(
        settings={"hours_per_month": 100, "horizon_months": 2},
        offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 3},
                {"region": "r1", "gpu": "A", "term": "reserved", "usd_per_gpu_hour": 1,
                 "commit_months": 4}],
        throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 1}],
        demand=[{"workload": "w", "period": f"2027-0{m}", "amount": 10} for m in (1, 2)],
        demand_scenarios=[{"scenario": "low", "probability": 0.5, "multiplier": 0.9},
                          {"scenario": "high", "probability": 0.5, "multiplier": 1.1}]))
    res = CliRunner().invoke(app, ["solve", str(folder), "--stochastic", "--json",
                                   "--time-limit", "30", "-o", str(tmp_path / "p.xlsx")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [c["gpus"] for c in out["commitments"]] == [9]
    rows = {s["name"]: s for s in out["stochastic"]["scenarios"]}
    assert (rows["low"]["total_cost_usd"], rows["high"]["total_cost_usd"]) == \
        (pytest.approx(3600), pytest.approx(4800))
    assert rows["low"]["stranded_usd"] == 0 and rows["high"]["stranded_usd"] == 0


def test_a_few_seconds_are_enough_for_a_tiny_market(tmp_path):
    # 5 s: the solves take hundredths of a second; reckoned at half a second each, the
    # cuts got none and the mean forecast's schedule stood ($2,750, 10 GPUs) with most
    # of the budget unused; the newsvendor's optimum is 5 GPUs, $2,500, proven
    st = _solve(tmp_path, "--time-limit", "5")["stochastic"]
    assert st["expected_cost_usd"] == pytest.approx(2500)
    assert st["cut_rounds"] >= 1 and st["mip_gap"] == pytest.approx(0)


class _Recorder:
    """A runner that records each solve's time limit: every solve takes its limit and
    0.2 s more, and would have planned from its LP with `least` seconds."""

    def __init__(self, least: float | None = 1.0, workers: int = 1):
        self.least, self.workers, self.limits = least, workers, []

    def map(self, fn, tasks):
        self.limits += [t[2] for t in tasks]
        return [{"least_s": self.least, "seconds": t[2], "task_s": t[2] + 0.2,
                 "status": "feasible"} for t in tasks]


def test_the_mean_forecast_gets_the_time_to_plan_from_its_lp(tmp_path):
    # 8 s, 4 scenarios, one worker: the even share of the wait-and-see step is under a
    # second, where the default scenario's mean forecast needs ~1.2 s to plan from its LP
    # (its schedule is the first candidate: $45.3 M at first prices against $30.8 M).
    # The first wave gets up to MIN_SOLVE_S of that step; the rest share what is left of
    # it, never more than the need each (they had got MIN_SOLVE_S: the command ran 15 s)
    s = load_scenario(write_csv(tmp_path / "s", scenario()))
    scenarios = sample_scenarios(s, 4, 0.2, 1, 0.5)
    runner = _Recorder()
    run = _Stochastic(s, scenarios, Budget(8.0), runner, None, None, 0.0, 0.9,
                      lambda text: None)
    share = run.each(5, WAIT_SHARE)
    run.wait_and_see()
    first, rest = runner.limits[0], runner.limits[1:]
    assert share < first <= MIN_SOLVE_S
    assert len(rest) == 4 and all(t <= max(share, run.need) for t in rest)


def test_samples_whose_solves_the_clock_stops_are_kept_only_at_their_need(tmp_path):
    # 8 samples, 20 s, each solve stopped at its limit and needing 1.5 s to plan from
    # its LP (1.875 s with NEED_MARGIN): the 9 solves of all 8 samples had shared 0.4 s
    # each, all planned at first prices (a generated 10x6x6 market on a machine whose
    # reckoning runs long stated 33 %; the default scenario at 20 s 50.8 % in 30 s). Now
    # the samples that fit at the need are kept: (20 - 2.2 - 2.075 - 2.075) // (2 ×
    # 2.075) = 3, and each of their solves gets the need. A model solved whole (no
    # least_s) plans at any limit, but each solve is taken to take what the first took
    # (its 2 s limit and 0.2 s more): 3 kept as well (all 8 had been, and an audit's 40
    # samples of a 1-workload market at --time-limit 5 ran to 7-10 s)
    kept = {}
    for least in (1.5, None):
        s = load_scenario(write_csv(tmp_path / f"s{least}", scenario()))
        runner = _Recorder(least)
        run = _Stochastic(s, sample_scenarios(s, 8, 0.2, 1, 0.5), Budget(20.0), runner,
                          None, None, 0.0, 0.9, lambda text: None, drawn=True)
        run.wait_and_see()
        kept[least] = len(run.scenarios), runner.limits[1:]
    count, limits = kept[1.5]
    assert count == 3 and len(limits) == 4
    assert limits == pytest.approx([1.875] * 4)
    assert kept[None][0] == 3


def test_time_limits_do_not_depend_on_the_workers(tmp_path):
    # SPEC §4: the results do not depend on --jobs; the limits had been reckoned in
    # worker-seconds (at --jobs 2 another expected cost), and a fresh worker's imports
    # counted as a solve's overhead
    seen = {}
    for workers in (1, 2):
        runner = _Recorder(workers=workers)
        s = load_scenario(write_csv(tmp_path / f"s{workers}", scenario()))
        run = _Stochastic(s, sample_scenarios(s, 4, 0.2, 1, 0.5), Budget(20.0), runner,
                          None, None, 0.0, 0.9, lambda text: None)
        run.wait_and_see()
        seen[workers] = runner.limits
    assert seen[1] == pytest.approx(seen[2], rel=0.05)


def test_a_short_budget_gives_the_same_result_whatever_the_workers(tmp_path, measured):
    # SPEC §4: the results do not depend on --jobs, also where the solves are stopped by
    # their budgets: each solve's limit, and what it took, are reckoned on the work clock
    # (a generated 4x4x3 market at --time-limit 10: on the wall clock, --jobs 1 and 2 had
    # differed in the bound, EVPI and even the schedule). A 16x10x4 market (solved by
    # decomposition) at 5 s: every wait-and-see solve stops at its budget.
    # At the machine's own pace, as a command runs (planner.solve.pace), with room: the
    # suite's pace of 1 is the fitted machine's, and on one twice as slow (pace 2.09)
    # the wall clock's safety stops, not the work clock, ended the cover-cut LPs, at a
    # different point with one worker than with two (a failure in .ci/run there). Room
    # of 3 times the pace measured as the session began: at 2 times, a clean clone's
    # .ci/run (the other test worker's tests beside it) gave bounds of $3.79 M and
    # $3.45 M (stop 63). The command's own safety stop is a minute off: its work clock
    # ends the command, as it does on a machine at its pace; at 5 s on the wall clock, a
    # fresh machine's .ci/run (two Dask workers' first imports, the other test worker
    # beside them) cut one wait-and-see solve at --jobs 2 short of its LP (bound $3.13 M
    # against $3.79 M, no EVPI: stop 64).
    from planner.solve import work
    from planner.solve.budget import Work

    generate(tmp_path / "g", 16, 10, 4, 1)
    s = load_scenario(tmp_path / "g")
    draws = sample_scenarios(s, 4, 0.3, seed=1)
    results = []
    suite_pace = work.pace()
    work.set_pace(max(suite_pace, 3.0 * measured))
    try:
        for runner in (Runner(), Runner(jobs=2)):
            with runner:
                command = Budget(5.0, work=Work(), wall_end=time.perf_counter() + 60.0)
                results.append(solve_stochastic(s, draws, command, runner))
    finally:
        work.set_pace(suite_pace)
    one, two = results
    assert all(w["status"] == "feasible" for w in one.wait_and_see)  # stopped by budget
    assert one.chosen.commitments == two.chosen.commitments
    assert (one.expected_cost_usd, one.bound_usd, one.evpi_usd, one.vss_usd, one.need_s) == \
        (two.expected_cost_usd, two.bound_usd, two.evpi_usd, two.vss_usd, two.need_s)
    assert [w["bound_usd"] for w in one.wait_and_see] == \
        [w["bound_usd"] for w in two.wait_and_see]
    assert [c.name for c in one.candidates] == [c.name for c in two.candidates]


def test_the_scenarios_solves_stop_by_the_commands_own_end(tmp_path, monkeypatch):
    # Each solve had only its own safety stop, 1.5 times its limit and a second: where
    # branch and bound outran its reckoning (a generated 12x7x5 market, 4 samples), the
    # command ran 18.6 s at --time-limit 10. Here every solve outruns its reckoning to
    # its stop: the steps still end by their budget's own, with a schedule.
    import time

    from planner.solve import pipeline

    real = pipeline._whole

    def late(builder, solver, budget, *args, **kwargs):
        while not budget.out_of_time():  # the wall clock runs, the work clock does not
            time.sleep(0.01)
        return real(builder, solver, budget, *args, **kwargs)

    monkeypatch.setattr(pipeline, "_whole", late)
    s = load_scenario(write_csv(tmp_path / "s", NEWSVENDOR))
    started = time.perf_counter()
    with Runner() as alone:
        result = solve_stochastic(s, s.demand_scenarios, Budget(3.0).reckoned(0.0), alone)
    took = time.perf_counter() - started
    assert took < 3.0 + 1.0, took  # was 8.2 s, each solve to its own stop
    assert result.chosen is not None and result.expected_cost_usd > 0


def test_a_solve_the_wall_clock_stopped_is_said_to_be_so(tmp_path, monkeypatch):
    # an outside audit: two runs at --time-limit 10 on a loaded machine gave expected
    # costs of $31.61 M and $32.58 M with nothing said (solve and whatif say so)
    import time
    from types import SimpleNamespace

    from planner.cli import solve as cli_solve
    from planner.stochastic.tasks import evaluate_task, solve_task

    generate(tmp_path / "g", 4, 4, 2, 1)
    s = load_scenario(tmp_path / "g")
    monkeypatch.setattr("planner.solve.pipeline.WHOLE_CELLS", 0)  # decomposed
    # the command's own stop already passed: a plan at first prices, its work left
    assert solve_task((s, None, 30.0, None, time.time()))["clock_stopped"]
    done = solve_task((s, None, 10.0, None, None))
    assert done["status"] == "optimal" and not done["clock_stopped"]
    assert not evaluate_task((s, done["commitments"], None, 10.0, None, None))[
        "clock_stopped"]
    said = []
    monkeypatch.setattr(cli_solve, "warn", said.append)
    monkeypatch.setattr("planner.cli.common.warn", said.append)
    result = SimpleNamespace(wait_and_see=[{"clock_stopped": True}, {}], dropped=0,
                             candidates=[SimpleNamespace(results=[{"clock_stopped": True}])],
                             overrun_s=0, untried=0, missed=0, scenarios=(), evpi_usd=None)
    cli_solve._warn_stochastic(result, Budget(10), None)
    assert any("the wall clock stopped 2 of its solves" in w for w in said)


def test_bad_input_leaves_no_output_folder_behind(tmp_path):
    # SPEC §4 v2: a missing output folder is created; where the command then stops for
    # bad input, the folders it made go again (they had stayed, empty)
    folder = write_csv(tmp_path / "s", dict(NEWSVENDOR, settings=[]))  # no start_month
    res = CliRunner().invoke(app, ["solve", str(folder), "-o",
                                   str(tmp_path / "new" / "sub" / "p.xlsx")])
    assert res.exit_code == 2 and not (tmp_path / "new").exists()


def test_an_evpi_from_plans_not_proven_within_the_gap_is_said_so():
    # an outside audit: at --time-limit 8 every scenario's own plan was stopped above
    # its gap, and EVPI read $0 (at 20 s, $5,104 or more), nothing said
    from types import SimpleNamespace

    from planner.cli.common import SAID
    from planner.cli.solve import _warn_stochastic

    def result(status):
        return SimpleNamespace(
            wait_and_see=[{"status": "optimal"}, {"status": status}], candidates=[],
            dropped=0, overrun_s=0.0, untried=0, missed=0, evpi_usd=0.0, scenarios=[1, 2],
            need_s=1.0)

    SAID.clear()
    _warn_stochastic(result("optimal"), SimpleNamespace(seconds=8.0), None)
    assert not any("EVPI" in w for w in SAID)
    _warn_stochastic(result("feasible"), SimpleNamespace(seconds=8.0), None)
    assert any(w.startswith("EVPI $0 is taken from the scenarios' own plans, 1 of 2")
               for w in SAID), SAID


def test_schedules_tied_on_expected_cost_go_to_the_lower_cvar(tmp_path):
    # 10 units, scenarios ×0.5 and ×1.5 (5 and 15), 730 h; monthly at $1, on demand $2
    # for 3 GPUs in r2, else $2.5. q committed: the low scenario 730 q (q ≥ 5), the high
    # 730 q + 1,460 per GPU short up to 3: q = 12, 13, 14, 15 all expect $10,950; the
    # high scenario's cost (CVaR at 0.9) is least at 15: $10,950 (13: $12,410, which an
    # outside audit saw chosen)
    tables = scenario(
        settings={"horizon_months": 1, "hours_per_month": 730,
                  "unmet_penalty_usd_per_unit_hour": 100},
        gpus=[{"gpu": "G1"}], sites=[{"site": "s1", "country": "US", "jurisdiction": "US"}],
        links=[], regions=[{"region": "r1", "provider": "p1", "site": "s1"},
                           {"region": "r2", "provider": "p2", "site": "s1"}],
        offers=[{"region": "r1", "gpu": "G1", "term": "on_demand", "usd_per_gpu_hour": 2.5},
                {"region": "r1", "gpu": "G1", "term": "monthly", "usd_per_gpu_hour": 1.0,
                 "commit_months": 1},
                {"region": "r2", "gpu": "G1", "term": "on_demand", "usd_per_gpu_hour": 2.0,
                 "max_gpus": 3}],
        workloads=[{"workload": "w1", "kind": "inference"}],
        throughput=[{"workload": "w1", "gpu": "G1", "units_per_gpu": 1}],
        demand=[{"workload": "w1", "period": "2027-01", "amount": 10}],
        demand_scenarios=[{"scenario": "lo", "probability": 0.5, "multiplier": 0.5},
                          {"scenario": "hi", "probability": 0.5, "multiplier": 1.5}])
    folder = write_csv(tmp_path / "s", tables)
    res = CliRunner().invoke(app, ["solve", str(folder), "--stochastic", "--json",
                                   "--jobs", "1", "-o", str(tmp_path / "p.xlsx")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["stochastic"]["expected_cost_usd"] == pytest.approx(10_950)
    assert out["stochastic"]["cvar_usd"] == pytest.approx(10_950)
    assert [c["gpus"] for c in out["commitments"]] == [15]
