"""`planner generate`: valid, deterministic synthetic scenarios that solve and check."""

from __future__ import annotations

from typer.testing import CliRunner

from planner.check import check_plan
from planner.cli import app
from planner.io.validate import load_scenario
from planner.solve.pipeline import plan_scenario


def test_same_seed_same_files_and_a_valid_plan(tmp_path):
    for name in ("a", "b"):
        res = CliRunner().invoke(app, ["generate", str(tmp_path / name), "--workloads", "8",
                                       "--regions", "8", "--months", "3", "--seed", "7"])
        assert res.exit_code == 0, res.output
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "b").iterdir())
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
    s = load_scenario(tmp_path / "a")
    assert s.warnings == ()
    assert {w.kind for w in s.workloads} <= {"inference", "training", "burst"}
    assert {o.term for o in s.offers} >= {"on_demand", "spot", "reserved"}
    run = plan_scenario(s, time_limit=10, gap=0.05)
    assert run.plan is not None
    assert check_plan(s, run.plan) == []


def test_another_seed_another_market(tmp_path):
    for seed in ("1", "2"):
        CliRunner().invoke(app, ["generate", str(tmp_path / seed), "--workloads", "5",
                                 "--regions", "6", "--months", "2", "--seed", seed])
    assert (tmp_path / "1" / "offers.csv").read_text() != (tmp_path / "2" / "offers.csv").read_text()


def test_generated_scenarios_validate_without_warnings(tmp_path):
    # seed 5 at 20 × 10 once named Canada in a residency on a map without a Canadian site
    from planner.io.generate import generate

    for workloads, regions, months, seed in ((20, 10, 12, 5), (30, 6, 3, 11), (12, 20, 2, 3)):
        folder = tmp_path / f"{workloads}x{regions}x{months}-{seed}"
        generate(folder, workloads, regions, months, seed=seed)
        assert load_scenario(folder).warnings == (), folder.name
