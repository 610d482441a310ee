"""Planning in parts (planner.parts): each part plans on the capacity the earlier ones left.

Hand-worked cases with two workloads, one part each (pools of equal weight go by name, so
w1 plans first): each fails if one kind of capacity were not handed on — pay-as-you-go
GPUs in use, a commitment's idle GPUs, an existing contract's GPUs in use, a fixed
commitment signed once. Months of 100 h; one GPU serves a workload's 10 units. Every plan
passes the independent checker.
"""

from __future__ import annotations

import pulp
import pytest

from planner import parts
from planner.candidates import find_candidates
from planner.check import check_plan
from planner.generate import generate
from planner.model import ModelBuilder, Restrictions
from planner import pipeline
from planner.pipeline import plan_scenario
from planner.solve import _run
from planner.validate import load_scenario
from scenarios import scenario, write_csv
from solving import cost, gpus_by

H = {"hours_per_month": 100}
TWO = dict(
    regions=[{"region": "r1", "provider": "p", "site": "s1"},
             {"region": "r2", "provider": "p", "site": "s1"}],
    workloads=[{"workload": "w1", "kind": "inference"},
               {"workload": "w2", "kind": "inference"}],
    throughput=[{"workload": w, "gpu": "A", "units_per_gpu": 10} for w in ("w1", "w2")],
    demand=[{"workload": w, "period": "2027-01", "amount": 10} for w in ("w1", "w2")])


def od(region, price, **kw):
    return {"region": region, "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": price,
            **kw}


@pytest.fixture
def one_pool_a_part(monkeypatch):
    monkeypatch.setattr(parts, "PART_CELLS", 1)


def in_parts(tmp_path, tables, restrictions=None):
    s = load_scenario(write_csv(tmp_path / "s", tables))
    run = plan_scenario(s, time_limit=30, gap=1e-9, restrictions=restrictions,
                        columns="parts")
    assert run.plan is not None
    assert run.result.termination.startswith("planned in 2 parts")
    assert check_plan(s, run.plan) == []
    assert run.result.objective == pytest.approx(cost(run.plan))
    return run


def test_a_later_part_gets_what_an_offer_has_left(tmp_path, one_pool_a_part):
    # r1 on demand at $1 has 1 GPU: w1 takes it (100 × 1 = $100); w2 goes to r2 at $3
    # ($300). $400, the whole model's optimum too.
    run = in_parts(tmp_path, scenario(settings=H, **TWO, offers=[
        od("r1", 1, max_gpus=1), od("r2", 3)]))
    assert cost(run.plan) == pytest.approx(400)
    assert gpus_by(run.plan, "workload", "region") == {("w1", "r1"): 1, ("w2", "r2"): 1}


def test_a_later_part_uses_the_idle_gpus_of_an_earlier_commitment(tmp_path,
                                                                 one_pool_a_part):
    # A monthly commitment at $1/h needs at least 2 GPUs: $200, below on demand's $300
    # for w1 alone, so w1 signs 2 and w2 runs on the idle one for nothing more: $200
    # (signing again, or on demand, would make it $400 or $500).
    run = in_parts(tmp_path, scenario(settings=H, **TWO, offers=[
        od("r1", 3), {"region": "r1", "gpu": "A", "term": "monthly", "usd_per_gpu_hour": 1,
                      "commit_months": 1, "min_gpus": 2}]))
    assert cost(run.plan) == pytest.approx(200)
    assert run.plan.commitments["gpus"].sum() == 2


def test_a_later_part_cannot_use_existing_gpus_an_earlier_one_uses(tmp_path,
                                                                  one_pool_a_part):
    # 1 existing GPU at r1 ($0.5/h, sunk: $50) serves w1; w2 pays on demand: $300. $350.
    run = in_parts(tmp_path, scenario(settings=H, **TWO, offers=[od("r1", 3)], existing=[
        {"region": "r1", "gpu": "A", "gpus": 1, "start_month": "2027-01",
         "end_month": "2027-01", "usd_per_gpu_hour": 0.5}]))
    assert cost(run.plan) == pytest.approx(350)
    assert gpus_by(run.plan, "workload", "term") == {("w1", "existing"): 1,
                                                     ("w2", "on_demand"): 1}


def test_a_fixed_commitment_is_signed_once_across_parts(tmp_path, one_pool_a_part):
    # The stress test fixes 2 monthly GPUs at $1.5/h ($300): the first part signs them,
    # w1 and w2 each run on one. Signed in each part, they would cost $600.
    run = in_parts(tmp_path, scenario(settings=H, **TWO, offers=[
        od("r1", 3), {"region": "r1", "gpu": "A", "term": "monthly",
                      "usd_per_gpu_hour": 1.5, "commit_months": 1}]),
        Restrictions(fixed_commitments={("r1/A/monthly/1", 0): 2}))
    assert cost(run.plan) == pytest.approx(300)
    assert run.plan.commitments["gpus"].sum() == 2


def full_lp(s) -> float:
    model = ModelBuilder(s, find_candidates(s)).build()
    for v in model.integer_variables():
        v.cat = pulp.LpContinuous
    result = _run(model.prob, "highs", 600, 1e-9, 1, False)
    assert result["status"] == "optimal"
    return result["objective"]


@pytest.mark.parametrize("seed", [1, 2])
def test_a_generated_market_planned_in_parts_is_valid_and_bounded(tmp_path, monkeypatch,
                                                                  seed):
    """Split into parts of at most 60 supply cells, a generated market's plan passes the
    checker, costs what its objective says, and its bound stays below the full LP."""
    monkeypatch.setattr(parts, "PART_CELLS", 60)
    folder = tmp_path / f"g{seed}"
    generate(folder, 8, 6, 3, seed=seed)
    s = load_scenario(folder)
    run = plan_scenario(s, time_limit=30, gap=0.01, columns="parts")
    assert run.plan is not None and "parts" in run.seconds
    assert int(run.result.termination.split()[2]) > 2  # planned in N parts
    assert check_plan(s, run.plan) == []
    assert run.result.objective == pytest.approx(cost(run.plan), rel=1e-9)
    lp = full_lp(s)
    assert run.result.bound <= lp + 1e-6 * lp <= run.result.objective + 2e-6 * lp
    assert run.result.gap == pytest.approx(
        (run.result.objective - run.result.bound) / run.result.objective, abs=1e-9)


def test_a_later_parts_start_set_looks_past_capacity_used_up(tmp_path):
    """Column generation's start set for a part counts what earlier parts use: r1's one
    on-demand GPU (all that w needs) is in use, so the start takes r2 as well."""
    from planner.columns import Pricing
    from planner.model import Taken

    s = load_scenario(write_csv(tmp_path / "s", scenario(
        settings=H, regions=TWO["regions"], offers=[od("r1", 1, max_gpus=1), od("r2", 3)])))
    c = find_candidates(s)
    regions = {}
    for taken in (Taken(), Taken(offer={("r1/A/on_demand", 0, 0): 1.0})):
        cells, _ = Pricing(ModelBuilder(s, c, taken=taken)).start(1, 1.0)
        regions[bool(taken.offer)] = {r for (_, r, _, _, _, _) in cells}
    assert regions == {False: {"r1"}, True: {"r1", "r2"}}


def test_a_later_parts_start_set_looks_at_what_is_left_in_the_first_month(tmp_path):
    """Earlier parts fill pay-as-you-go offers in the first month, before their
    commitments are ready; on average over the months the offer looks free. Here r1's one
    GPU is in use in month 0 only (over 2 months and w's segments: under half a GPU on
    average, and w needs half a GPU), so the start must take r2 for month 0 as well. Its
    average alone left the first LP of 200x40x24's second part 68 k units a segment short
    in month 0 (gap 68 %; with the first month's use, 35 %)."""
    from planner.columns import Pricing
    from planner.model import Taken

    s = load_scenario(write_csv(tmp_path / "s", scenario(
        settings={**H, "horizon_months": 2}, regions=TWO["regions"],
        offers=[od("r1", 1, max_gpus=1), od("r2", 3)],
        demand=[{"workload": "w", "period": p, "amount": 5} for p in ("2027-01", "2027-02")])))
    c = find_candidates(s)
    segments = range(len(ModelBuilder(s, c).hours))
    busy = Taken(offer={("r1/A/on_demand", 0, k): 1.0 for k in segments})
    pricing = Pricing(ModelBuilder(s, c, taken=busy))
    assert pricing.capacity_gpus("r1", "A", "r1/A/on_demand") >= 0.5  # the average
    assert pricing.capacity_gpus("r1", "A", "r1/A/on_demand", month=0) == 0
    cells, _ = pricing.start(1, 1.0)
    assert {r for (_, r, _, _, m, _) in cells if m == 0} == {"r1", "r2"}


def test_room_cells_look_at_what_is_left_in_the_busiest_month(tmp_path):
    """A part's model may hold only sources that earlier parts filled in some month; the
    cells added for room (`columns.room_cells`: the part without an LP, or whose LP left
    demand unmet) look at what is left in the busiest month. r1's and r2's one GPU each
    are in use in month 1 of 2: on average (and in the first month) they look free and
    the start set stops at them; in the busiest month they are full, so r3 joins."""
    from planner.columns import Pricing, room_cells, start_cells
    from planner.model import Taken

    s = load_scenario(write_csv(tmp_path / "s", scenario(
        settings={**H, "horizon_months": 2},
        regions=[{"region": r, "provider": "p", "site": "s1"} for r in ("r1", "r2", "r3")],
        offers=[od("r1", 1, max_gpus=1), od("r2", 2, max_gpus=1), od("r3", 3)],
        demand=[{"workload": "w", "period": p, "amount": 5} for p in ("2027-01", "2027-02")])))
    c = find_candidates(s)
    segments = range(len(ModelBuilder(s, c).hours))
    busy = Taken(offer={(f"{r}/A/on_demand", 1, k): 1.0 for k in segments for r in ("r1", "r2")})
    pricing = Pricing(ModelBuilder(s, c, taken=busy))
    assert {r for (_, r, _, _, _, _) in start_cells(pricing)} == {"r1", "r2"}
    assert {r for (_, r, _, _, m, _) in room_cells(pricing) if m == 1} == {"r1", "r2", "r3"}


def test_the_workbook_says_the_plan_was_planned_in_parts(tmp_path, one_pool_a_part):
    """Finance reads why a plan is not proven optimal: here the parts, not a time limit."""
    from openpyxl import load_workbook

    from planner.report import write_workbook

    run = in_parts(tmp_path, scenario(settings=H, **TWO, offers=[
        od("r1", 1, max_gpus=1), od("r2", 3)]))
    write_workbook(run.plan, tmp_path / "plan.xlsx")
    summary = load_workbook(tmp_path / "plan.xlsx")["Summary"]
    status = next(row[1] for row in summary.iter_rows(values_only=True) if row[0] == "Status")
    assert status.startswith("feasible (planned in 2 parts")


def test_parts_are_sized_to_the_time_limit():
    # 6,700 cells a second of the limit, between 400 k and 4 M cells
    assert parts.part_cells(1) == 400_000
    assert parts.part_cells(100) == 670_000
    assert parts.part_cells(3600) == 4_000_000
    # in parts above 1 M cells (column generation's threshold) and one part's worth
    assert not pipeline.in_parts(900_000, 1)
    assert pipeline.in_parts(1_670_000, 60) and not pipeline.in_parts(1_670_000, 600)
    assert pipeline.in_parts(30_000_000, 600)


def test_a_part_whose_lp_does_not_finish_is_planned_without_one(tmp_path, monkeypatch,
                                                                one_pool_a_part):
    """A part whose first LP runs out of its share still gets a plan (its demand was left
    unmet before: a plan in nine parts of 1000x100x36 stated 99.98 %): without an LP, each
    unit goes to the cheapest source with room, committing only where pay-as-you-go has
    none. r1 sells 1 GPU on demand at $3/h, and a monthly commitment at $1/h. w1 takes the
    on-demand GPU ($300); w2 finds none left and commits 1 GPU ($100): $400 (the optimum
    commits for both: $200)."""
    monkeypatch.setattr(pipeline, "GENERATE_PART_ABOVE", -1)  # every part generates …
    monkeypatch.setattr(pipeline, "generate_columns", lambda *a, **k: None)  # … in vain
    run = in_parts(tmp_path, scenario(settings=H, **TWO, offers=[
        od("r1", 3, max_gpus=1), {"region": "r1", "gpu": "A", "term": "monthly",
                                  "usd_per_gpu_hour": 1, "commit_months": 1}]))
    assert run.result.termination.startswith(
        "planned in 2 parts (2 with a plan, 2 without an LP)")
    assert cost(run.plan) == pytest.approx(400)
    assert gpus_by(run.plan, "workload", "term") == {("w1", "on_demand"): 1,
                                                     ("w2", "monthly"): 1}
    assert run.plan.totals["unmet_unit_hours"] == pytest.approx(0, abs=1e-9)


def test_after_a_part_whose_lp_missed_parts_no_better_off_go_without_one(tmp_path,
                                                                       monkeypatch):
    """Once a part's LP misses its share, a later part with no more time per cell goes
    without an LP at once: its LP would miss too, and the share it wasted starved the
    parts after it (1000x100x36 at 250 s: 15 of 19 parts missed, the last ones left demand
    unmet). Three parts of equal cells with shares 10, 20 and 10 s: the second has more
    time per cell and tries its LP; the third does not."""
    from planner.model import ModelBuilder

    tried = []

    def no_lp(builder, *args, **kwargs):
        tried.append(sorted({w for (w, *_) in builder.c.level}))
        return None

    def three_parts(builder, plan_part, limit, gap, solver, progress=None):
        for workloads, share in ((["w1"], 10.0), (["w2"], 20.0), (["w3"], 10.0)):
            part = ModelBuilder(builder.s, parts.candidates_of(builder.c, set(workloads)))
            model, result = plan_part(part, share)
            assert result.has_solution and "start without an LP" in result.termination
        return model, result, []

    monkeypatch.setattr(pipeline, "GENERATE_PART_ABOVE", -1)
    monkeypatch.setattr(pipeline, "generate_columns", no_lp)
    monkeypatch.setattr(pipeline, "plan_in_parts", three_parts)
    s = load_scenario(write_csv(tmp_path / "s", scenario(
        settings=H, regions=TWO["regions"], offers=[od("r1", 1)],
        workloads=[{"workload": w, "kind": "inference"} for w in ("w1", "w2", "w3")],
        throughput=[{"workload": w, "gpu": "A", "units_per_gpu": 10}
                    for w in ("w1", "w2", "w3")],
        demand=[{"workload": w, "period": "2027-01", "amount": 10}
                for w in ("w1", "w2", "w3")])))
    pipeline.plan_builder(ModelBuilder(s, find_candidates(s)), "highs", 30, 1e-9, 1, "parts")
    assert tried == [["w1"], ["w2"]]


def test_comparison_plans_wait_for_a_request_when_the_plan_went_in_parts(tmp_path,
                                                                          monkeypatch,
                                                                          one_pool_a_part):
    """Each comparison plan takes the plan's own time limit: at enterprise scale (planned
    in parts) `planner solve` leaves them out unless asked (a 10-minute plan would take
    40), and the Summary says why; `--baselines` solves them (and when none finds a plan,
    the Summary says that)."""
    from openpyxl import load_workbook
    from typer.testing import CliRunner

    from planner.cli import app

    monkeypatch.setattr(pipeline, "in_parts", lambda cells, limit: True)
    folder = write_csv(tmp_path / "s", scenario(settings=H, **TWO, offers=[
        od("r1", 1, max_gpus=1), od("r2", 3)]))
    rows = {}
    for flags in ([], ["--baselines"]):
        out = tmp_path / f"plan{len(flags)}.xlsx"
        res = CliRunner().invoke(app, ["solve", str(folder), "-o", str(out), *flags])
        assert res.exit_code == 0, res.output
        summary = load_workbook(out)["Summary"]
        rows[bool(flags)] = [r[:2] for r in summary.iter_rows(values_only=True)
                             if r[0] and ("comparison" in str(r[0]) or r[0] == "against")]
    assert rows[False] == [("comparison plans not solved (the plan was planned in parts; "
                            "--baselines solves them, each with the time limit)", None)]
    assert ("against", "pay-as-you-go only") in rows[True]
    # asked for, and none found a plan: the Summary says so, not "--no-baselines"
    from planner import baselines

    monkeypatch.setattr(baselines, "solve_baselines", lambda *a, **k: {})
    out = tmp_path / "none.xlsx"
    assert CliRunner().invoke(app, ["solve", str(folder), "-o", str(out),
                                    "--baselines"]).exit_code == 0
    assert ("comparison plans not solved (none found a plan within the time limit)", None) \
        in [r[:2] for r in load_workbook(out)["Summary"].iter_rows(values_only=True)]
