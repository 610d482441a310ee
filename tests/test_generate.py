"""`planner generate`: valid, deterministic synthetic scenarios that solve and check;
`planner template`: an input workbook whose drop-downs hold only what validate accepts."""

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


def test_more_months_than_a_horizon_holds_is_refused_before_writing(tmp_path):
    # README: horizon_months ≤ 240; --months 241 wrote a scenario validate refused
    import pytest

    from planner.io.generate import generate
    from planner.io.schema import HORIZON_MOST

    for months in (str(HORIZON_MOST + 1), "300"):
        out = tmp_path / f"m{months}"
        res = CliRunner().invoke(app, ["generate", str(out), "--workloads", "1",
                                       "--regions", "3", "--months", months])
        assert res.exit_code == 2, res.output
        assert "--months" in res.output and "Traceback" not in res.output
        assert not out.exists()
    with pytest.raises(ValueError, match="months"):
        generate(tmp_path / "lib", 1, 3, HORIZON_MOST + 1)
    assert not (tmp_path / "lib").exists()
    res = CliRunner().invoke(app, ["generate", str(tmp_path / "most"), "--workloads", "1",
                                   "--regions", "3", "--months", str(HORIZON_MOST)])
    assert res.exit_code == 0, res.output
    assert load_scenario(tmp_path / "most").settings.horizon_months == HORIZON_MOST


def test_generate_writes_no_scenario_over_another(tmp_path):
    # an outside audit: generated into a scenario's folder, the old demand_scenarios.csv
    # stayed and joined the new market unsaid; nor is a negative seed one (solve's is ≥ 0)
    old = tmp_path / "old"
    old.mkdir()
    (old / "demand_scenarios.csv").write_text("scenario,probability,multiplier\nlow,1,0.8\n")
    res = CliRunner().invoke(app, ["generate", str(old), "--workloads", "1", "--regions", "3",
                                   "--months", "1", "--seed", "-1"])
    assert res.exit_code == 2
    assert "is not empty" in res.output and "--seed" in res.output, res.output
    assert [f.name for f in old.iterdir()] == ["demand_scenarios.csv"]
    empty = tmp_path / "empty"
    empty.mkdir()
    res = CliRunner().invoke(app, ["generate", str(empty), "--workloads", "1", "--regions", "3",
                                   "--months", "1"])
    assert res.exit_code == 0 and (empty / "demand.csv").exists(), res.output


def _lists(ws) -> dict[str, tuple[str, bool]]:
    """Cell range → (the drop-down's choices, whether Excel refuses other values)."""
    return {str(dv.sqref): (dv.formula1, dv.showErrorMessage)
            for dv in ws.data_validations.dataValidation}


def test_template_settings_have_drop_downs_that_refuse_other_values(tmp_path):
    from openpyxl import load_workbook

    file = tmp_path / "t.xlsx"
    assert CliRunner().invoke(app, ["template", str(file)]).exit_code == 0
    wb = load_workbook(file)
    settings = wb["settings"]
    row = {settings.cell(i, 1).value: i for i in range(2, settings.max_row + 1)}
    lists = _lists(settings)
    assert lists[f"B{row['tail_policy']}"] == ('"full,prorate"', True)
    assert lists[f"B{row['solver']}"] == ('"highs,cbc"', True)
    assert _lists(wb["offers"])["C2:C100000"][0].startswith('"spot,on_demand')
    every = [dv for ws in wb.worksheets for dv in ws.data_validations.dataValidation]
    assert len(every) >= 6 and all(dv.showErrorMessage for dv in every)
    # numeric defaults are numbers, not text ('730.0' had been written as text)
    assert settings.cell(row["hours_per_month"], 2).value == 730
    assert isinstance(settings.cell(row["mip_gap"], 2).value, float)
    assert settings.cell(row["tail_policy"], 2).value == "full"


def test_template_name_must_end_in_xlsx(tmp_path):
    for name in ("t.csv", "t_noext", "t.xlsm"):
        res = CliRunner().invoke(app, ["template", str(tmp_path / "new" / name)])
        assert res.exit_code == 2, res.output
        assert ".xlsx" in res.output and "Traceback" not in res.output
        assert not (tmp_path / "new").exists()
    assert CliRunner().invoke(app, ["template", str(tmp_path / "T.XLSX")]).exit_code == 0
