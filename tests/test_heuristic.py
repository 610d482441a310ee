"""The LP-guided start (planner/heuristic.py) on models small enough to check by hand."""

from __future__ import annotations

import pytest

from planner.candidates import find_candidates
from planner.generate import generate
from planner.check import check_plan
from planner.heuristic import lp_guided_start
from planner.model import build_model
from planner.plan import extract_plan
from planner.solve import SolveResult, _run, solve
from planner.validate import load_scenario
from scenarios import scenario, write_csv

# two regions of two providers, both at the one demand site
R1_R2 = [{"region": "r1", "provider": "p", "site": "s1"},
         {"region": "r2", "provider": "q", "site": "s1"}]

# training (single region) plus inference, two regions, a reserved offer: every kind of
# decision the start fixes (single-region choice, commitments, replicas).
TABLES = scenario(
    settings={"horizon_months": 3, "hours_per_month": 100},
    regions=R1_R2,
    offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2},
            {"region": "r2", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2.5},
            {"region": "r1", "gpu": "A", "term": "reserved", "usd_per_gpu_hour": 1.2,
             "commit_months": 3}],
    workloads=[{"workload": "w", "kind": "inference"}, {"workload": "t", "kind": "training"}],
    throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 10},
                {"workload": "t", "gpu": "A", "units_per_gpu": 1, "gpus_per_replica": 2}],
    demand=[{"workload": x, "period": f"2027-{m:02d}", "amount": a}
            for m in (1, 2, 3) for x, a in (("w", 25), ("t", 4))],
)


def _model(tmp_path):
    s = load_scenario(write_csv(tmp_path / "scn", TABLES))
    return s, build_model(s, find_candidates(s))


def test_lp_guided_plan_passes_the_checker_and_matches_the_mip(tmp_path):
    s, model = _model(tmp_path)
    guided = solve(model, gap=1e-9, strategy="lp-guided")
    assert check_plan(s, extract_plan(model, guided)) == []
    _, again = _model(tmp_path)
    direct = solve(again, gap=1e-9, strategy="direct")
    assert guided.bound <= direct.objective + 1e-6  # the LP bound is a lower bound
    assert guided.objective >= direct.objective - 1e-6


def test_bounds_are_restored_when_a_later_solve_fails(tmp_path):
    """Regression: a failing second LP left the single-region choice fixed in the model."""
    _, model = _model(tmp_path)
    before = {v.name: (v.lowBound, v.upBound) for v in model.prob.variables()}
    calls = []

    def first_only(problem, seconds, gap):
        calls.append(problem.name)
        if len(calls) > 1:
            return None
        r = _run(problem, "highs", seconds, gap, 1, False)
        return r["objective"] if r["has_solution"] else None

    assert model.choose, "the scenario must have a single-region choice to fix"
    assert lp_guided_start(model, first_only, 1e-4, 60) is None
    assert len(calls) == 2
    after = {v.name: (v.lowBound, v.upBound) for v in model.prob.variables()}
    assert after == before


def _rounded_plan_only(model, quick=False, bound=None):
    """The LP-guided start with every month MIP refused: the rounded plan alone (what a
    large model gets when time runs out), the relaxations warm in one HiGHS LP. `bound`:
    the start without an LP."""
    from planner.highs import IncrementalLP

    def no_month_mips(problem, seconds, gap, start=False):
        if start:
            return None
        r = _run(problem, "highs", seconds, gap, 1, False)
        return r["objective"] if r["has_solution"] else None

    return lp_guided_start(model, no_month_mips, 1e-4, 600, IncrementalLP(600), quick=quick,
                           bound=bound)


def _generated_model(tmp_path, seed):
    """A generated market of 8 workloads, 6 regions, 3 months, and its full model."""
    folder = tmp_path / "g"
    generate(folder, 8, 6, 3, seed=seed)
    s = load_scenario(folder)
    return s, build_model(s, find_candidates(s))


def _plan_of(model, start):
    """The plan `model`'s variables hold after the LP-guided `start`."""
    result = SolveResult(solver="highs", status="feasible", termination="test",
                         has_solution=True, objective=start.objective, bound=start.lp_bound,
                         gap=None, seconds=0.0)
    return extract_plan(model, result)


@pytest.mark.parametrize("quick", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_rounded_plan_alone_is_valid_and_close_to_the_lp(tmp_path, seed, quick):
    """Rounding the LP's replicas up overfills capacity (offers, commitments); cutting back
    must not leave demand unmet that more replicas elsewhere, or a little more committed,
    could serve (the unmet penalty would dwarf the plan: 200x the LP before the repair).
    `quick` (parts of a plan in parts): no LP between rounding commitments and replicas."""
    s, model = _generated_model(tmp_path, seed)
    start = _rounded_plan_only(model, quick)
    assert start is not None
    assert check_plan(s, _plan_of(model, start)) == []
    assert start.lp_bound <= start.objective <= 1.15 * start.lp_bound


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_the_start_without_an_lp_serves_what_the_lp_guided_one_does(tmp_path, seed):
    """Without an LP (a part of a plan in parts whose LP ran out of time) the repair serves
    all demand from nothing, by price and room — spot within its share (seed 3 left a
    burst's demand unmet when spot replicas counted in full), sites with the fewest
    regions in reach first (seed 5 left inference unmet that flexible workloads had
    crowded out) — at a cost close to the LP-guided plan's (1-6 % dearer here)."""
    s, model = _generated_model(tmp_path, seed)
    guided = _rounded_plan_only(model, quick=True)
    guided_unmet = _plan_of(model, guided).totals["unmet_unit_hours"]
    _, model = _generated_model(tmp_path, seed)
    model.full_bound = 0.0  # as the pipeline gives it: the single-region move is on
    start = _rounded_plan_only(model, quick=True, bound=0.0)
    assert start.lp_bound == 0.0
    plan = _plan_of(model, start)
    assert check_plan(s, plan) == []
    assert plan.totals["unmet_unit_hours"] <= guided_unmet + 1e-6
    assert guided.lp_bound <= start.objective <= 1.1 * guided.objective


def test_a_repair_out_of_time_leaves_its_own_plan_standing(tmp_path, monkeypatch):
    """When the LP after a repair does not finish, the repair's plan stands: its added
    replicas serve what they were added for (the values moved with them), so the plan is
    valid, its cost is what the start says, and it serves more than the plan before the
    repair (which, without an LP, served nothing: a part planned with a second to spare
    left all its demand unmet)."""
    from planner import heuristic

    s, model = _generated_model(tmp_path, 1)
    unmet_before = []
    add = heuristic._add_replicas_for_unmet

    def add_then_run_out_of_time(model, *args):
        unmet_before.append(sum(v.varValue or 0.0 for v in model.unmet.values()))
        return add(model, *args)

    monkeypatch.setattr(heuristic, "_add_replicas_for_unmet", add_then_run_out_of_time)

    def out_of_time_after_a_repair(problem, seconds, gap, start=False):
        if start or unmet_before:
            return None
        r = _run(problem, "highs", seconds, gap, 1, False)
        return r["objective"] if r["has_solution"] else None

    start = lp_guided_start(model, out_of_time_after_a_repair, 1e-4, 600)
    assert unmet_before and unmet_before[0] > 1.0  # the rounded plan needed a repair
    assert start is not None
    plan = _plan_of(model, start)
    assert check_plan(s, plan) == []
    assert plan.totals["objective_usd"] == pytest.approx(start.objective, rel=1e-6)
    assert sum(v.varValue for v in model.unmet.values()) < 0.01 * unmet_before[0]


def test_the_start_without_an_lp_is_a_plan_without_any_lp(tmp_path):
    """Every LP out of time: the start without an LP is the repair's plan alone, valid,
    serving all demand on generated seed 1 (it needed the LP after the repair to move the
    served units into the values, and without it served nothing)."""
    s, model = _generated_model(tmp_path, 1)
    model.full_bound = 0.0

    def no_time(problem, seconds, gap, start=False):
        return None

    start = lp_guided_start(model, no_time, 1e-4, 600, quick=True, bound=0.0)
    assert start is not None
    plan = _plan_of(model, start)
    assert check_plan(s, plan) == []
    assert plan.totals["objective_usd"] == pytest.approx(start.objective, rel=1e-6)
    assert plan.totals["unmet_unit_hours"] == pytest.approx(0.0, abs=1e-6)


# A training run (single region) whose cheap region an inference workload also needs:
# r1 sells GPU A at $1/h, at most 2 GPUs; r2 sells GPU B at $3/h, no limit. The run needs
# 1.2 GPUs (either type), the inference 0.8 GPU of A, which only r1 sells. The LP puts both
# in r1 (1.2 + 0.8 = 2 GPUs, $200); rounded up they need 2 + 1 replicas of one GPU, one
# more than r1 has, and cutting back the run's leaves 0.2 of it unmet. The optimum moves
# the run to r2: 2 GPUs of B × $3 × 100 h + 1 GPU of A × $1 × 100 h = $700 (keeping it in
# r1 leaves 0.2 unit × 100 h × $1,000 = $20,000 of penalty, or the inference's $80,000).
MOVE = scenario(
    settings={"horizon_months": 1, "hours_per_month": 100},
    gpus=[{"gpu": "A", "memory_gb": 80}, {"gpu": "B", "memory_gb": 80}],
    regions=R1_R2,
    offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 1,
             "max_gpus": 2},
            {"region": "r2", "gpu": "B", "term": "on_demand", "usd_per_gpu_hour": 3}],
    workloads=[{"workload": "t", "kind": "training"}, {"workload": "i", "kind": "inference"}],
    throughput=[{"workload": "t", "gpu": "A", "units_per_gpu": 1},
                {"workload": "t", "gpu": "B", "units_per_gpu": 1},
                {"workload": "i", "gpu": "A", "units_per_gpu": 10}],
    demand=[{"workload": "t", "period": "2027-01", "amount": 1.2},
            {"workload": "i", "period": "2027-01", "amount": 8}],
)


def test_the_repair_moves_a_single_region_workload_out_of_a_full_region(tmp_path):
    """On a model from column generation (where the month MIPs rarely get their time)."""
    from planner.columns import generate_columns
    from planner.model import ModelBuilder

    s = load_scenario(write_csv(tmp_path / "scn", MOVE))
    model = generate_columns(ModelBuilder(s, find_candidates(s)), 60).model
    assert model.full_bound == pytest.approx(200)
    start = _rounded_plan_only(model)
    assert start.lp_bound == pytest.approx(200)
    plan = _plan_of(model, start)
    assert check_plan(s, plan) == []
    assert plan.totals["unmet_unit_hours"] == pytest.approx(0, abs=1e-6)
    assert start.objective == pytest.approx(700)
    assert set(plan.assignments[plan.assignments.workload == "t"].region) == {"r2"}


# Two training runs of 2 GPUs each (t1 busier: 2.0 units against 1.8); r1 sells A at $1/h
# but only 2 GPUs, r2 at $2/h without limit. Each run alone fits r1.
TWO_RUNS = scenario(
    settings={"horizon_months": 1, "hours_per_month": 100},
    regions=R1_R2,
    offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 1,
             "max_gpus": 2},
            {"region": "r2", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2}],
    workloads=[{"workload": "t1", "kind": "training"}, {"workload": "t2", "kind": "training"}],
    throughput=[{"workload": t, "gpu": "A", "units_per_gpu": 1} for t in ("t1", "t2")],
    demand=[{"workload": "t1", "period": "2027-01", "amount": 2},
            {"workload": "t2", "period": "2027-01", "amount": 1.8}],
)


def test_single_region_runs_choose_beside_each_other_and_earlier_parts(tmp_path):
    """Without LP use to go by (every variable at zero, as in the start without an LP) both
    runs would take r1, the cheaper, and one would find no room: the busier run chooses
    first and takes r1, the other r2. When an earlier part of a plan in parts holds r1's
    GPUs, even the busier run goes to r2."""
    from planner.heuristic import _single_region_choice
    from planner.model import ModelBuilder, Taken

    s = load_scenario(write_csv(tmp_path / "scn", TWO_RUNS))
    c = find_candidates(s)
    for taken, t1 in ((None, "r1"), (Taken(offer={("r1/A/on_demand", 0, 0): 2.0}), "r2")):
        model = ModelBuilder(s, c, taken=taken).build()
        for v in model.supply.values():
            v.varValue = 0.0
        assert _single_region_choice(model) == {"t1": (t1, "A"), "t2": ("r2", "A")}


def test_single_region_runs_see_commitments_earlier_parts_signed(tmp_path):
    """r1 sells A on demand at $1/h (1 GPU at most) and as a monthly commitment (2 GPUs at
    most); r2 on demand at $2/h. The busier run needs 2 GPUs: r1 holds 3 — unless an
    earlier part signed both committed GPUs and uses them (it used to count only existing
    GPUs in use as held: a run of 1000x100x36 chose a build-to-order offer signed to its
    limit and was left unmet). Signed but idle, they are still there for it."""
    from planner.heuristic import _single_region_choice
    from planner.model import ModelBuilder, Taken

    tables = dict(TWO_RUNS, offers=[
        {"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 1,
         "max_gpus": 1},
        {"region": "r1", "gpu": "A", "term": "monthly", "usd_per_gpu_hour": 1,
         "commit_months": 1, "max_gpus": 2},
        {"region": "r2", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2}])
    s = load_scenario(write_csv(tmp_path / "scn", tables))
    c = find_candidates(s)
    segments = range(len(ModelBuilder(s, c).hours))
    key = next(o.key for o in s.offers if o.term == "monthly")
    for signed, idle, t1 in ((0.0, 0.0, "r1"), (2.0, 0.0, "r2"), (2.0, 2.0, "r1")):
        taken = Taken(signed={(key, 0): signed},
                      committed={("r1", "A", 0, k): idle for k in segments})
        model = ModelBuilder(s, c, taken=taken).build()
        for v in model.supply.values():
            v.varValue = 0.0
        assert _single_region_choice(model)["t1"] == (t1, "A"), (signed, idle)
