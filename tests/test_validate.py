"""Bad input (SPEC §3): every problem reported, with table, row, column and what is wrong."""

from __future__ import annotations

import copy

import pytest
from scenarios import BASE, scenario, write_csv, write_xlsx
from typer.testing import CliRunner

from planner.cli import app
from planner.io.load import load_raw
from planner.io.validate import validate


def _issues(tmp_path, tables, fmt="csv"):
    path = (write_csv(tmp_path / "scn", tables) if fmt == "csv"
            else write_xlsx(tmp_path / "scn.xlsx", tables))
    result, issues = validate(load_raw(path))
    return result, issues


def _with(table: str, row: dict | None = None, index: int = 0, **changes):
    """BASE with one row of `table` changed (or `row` appended when given)."""
    data = copy.deepcopy(BASE)
    if row is not None:
        data[table].append(row)
    else:
        data[table][index].update(changes)
    return data


def _without(table: str):
    data = copy.deepcopy(BASE)
    del data[table]
    return data


def _drop_column(table: str, column: str):
    data = copy.deepcopy(BASE)
    for r in data[table]:
        r.pop(column, None)
    return data


def _settings(**kv):
    return scenario(settings=kv)


UNREACHABLE = scenario(
    sites=[{"site": "s1", "country": "US", "jurisdiction": "US"},
           {"site": "island", "country": "FJ", "jurisdiction": "FJ"}],
    workloads=[{"workload": "w", "kind": "inference", "latency_slo_ms": 50}],
    demand=[{"workload": "w", "period": "2027-01", "amount": 1, "site": "island"}],
)
POOL_MISMATCH = scenario(
    workloads=[{"workload": "w", "kind": "inference", "pool": "p"},
               {"workload": "v", "kind": "inference", "pool": "p"}],
    throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 1, "gpus_per_replica": 1},
                {"workload": "v", "gpu": "A", "units_per_gpu": 1, "gpus_per_replica": 2}],
)
OVERLAP = scenario(settings={"horizon_months": 3}, demand=[{"workload": "w", "period": "2027Q1", "amount": 1},
                           {"workload": "w", "period": "2027-02", "amount": 1}])

# (case id, tables, table label, row, column, words in the message)
CASES = [
    ("missing table", _without("offers"), "offers.csv", None, None, "missing"),
    ("missing column", _drop_column("offers", "usd_per_gpu_hour"), "offers.csv", 1,
     "usd_per_gpu_hour", "missing"),
    ("not a number", _with("offers", usd_per_gpu_hour="abc"), "offers.csv", 2,
     "usd_per_gpu_hour", "not a number"),
    ("negative price", _with("offers", usd_per_gpu_hour=-1), "offers.csv", 2,
     "usd_per_gpu_hour", "negative"),
    ("unknown gpu", _with("offers", gpu="Z9"), "offers.csv", 2, "gpu", "unknown gpu 'Z9'"),
    ("unknown region", _with("offers", region="nowhere"), "offers.csv", 2, "region",
     "unknown region"),
    ("region at unknown site", _with("regions", site="atlantis"), "regions.csv", 2, "site",
     "unknown site"),
    ("duplicate gpu", _with("gpus", row={"gpu": "A"}), "gpus.csv", 3, "gpu", "duplicate"),
    ("duplicate region", _with("regions", row={"region": "r1", "provider": "q", "site": "s1"}),
     "regions.csv", 3, "region", "duplicate"),
    ("duplicate workload", _with("workloads", row={"workload": "w", "kind": "burst"}),
     "workloads.csv", 3, "workload", "duplicate"),
    ("duplicate offer", _with("offers", row={"region": "r1", "gpu": "A", "term": "on_demand",
                                             "usd_per_gpu_hour": 3}),
     "offers.csv", 3, "region", "duplicate"),
    ("commitment without months", _with("offers", term="reserved"), "offers.csv", 2,
     "commit_months", "commit_months"),
    ("pay-as-you-go with months", _with("offers", commit_months=12), "offers.csv", 2,
     "commit_months", "pay-as-you-go"),
    ("peak over 1", _with("workloads", peak_hours_share=0.5, peak_to_average=3),
     "workloads.csv", 2, "peak_hours_share", "exceeds 1"),
    ("unreachable SLO site", UNREACHABLE, "demand.csv", 2, "site", "not connected"),
    ("bad period", _with("demand", period="2027-13"), "demand.csv", 2, "period",
     "not a month"),
    ("period as words", _with("demand", period="January"), "demand.csv", 2, "period",
     "quarter"),
    # a date's text names its month only if it is a date (2027-01-99 read as January)
    ("period a day that is not", _with("demand", period="2027-02-30"), "demand.csv", 2,
     "period", "not a date"),
    ("start month a day that is not", _settings(start_month="2027-01-45"), "settings.csv",
     2, "value", "not a date"),
    ("year 0", _settings(start_month="0000-01"), "settings.csv", 2, "value", "not a month"),
    ("bad term", _with("offers", term="weekly"), "offers.csv", 2, "term", "not one of"),
    ("bad kind", _with("workloads", kind="serving"), "workloads.csv", 2, "kind",
     "not one of"),
    ("throughput of unknown workload", _with("throughput", workload="ghost"),
     "throughput.csv", 2, "workload", "unknown workload"),
    ("zero throughput", _with("throughput", units_per_gpu=0), "throughput.csv", 2,
     "units_per_gpu", "greater than 0"),
    ("fractional replica", _with("throughput", gpus_per_replica=1.5), "throughput.csv", 2,
     "gpus_per_replica", "whole number"),
    ("demand of unknown workload", _with("demand", workload="ghost"), "demand.csv", 2,
     "workload", "unknown workload"),
    ("demand at unknown site", _with("demand", site="mars"), "demand.csv", 2, "site",
     "unknown site"),
    ("SLO without site", _with("workloads", latency_slo_ms=20), "demand.csv", 2, "site",
     "latency SLO"),
    ("link to unknown site", _with("links", row={"site_a": "s1", "site_b": "x", "rtt_ms": 3}),
     "links.csv", 2, "site_b", "unknown site"),
    ("link to itself", _with("links", row={"site_a": "s1", "site_b": "s1", "rtt_ms": 3}),
     "links.csv", 2, "site_b", "itself"),
    ("negative latency", _with("links", row={"site_a": "s1", "site_b": "s1", "rtt_ms": -3}),
     "links.csv", 2, "rtt_ms", "negative"),
    ("country not ISO", _with("sites", country="USA"), "sites.csv", 2, "country",
     "ISO 3166"),
    ("country no country's", _with("sites", country="XX"), "sites.csv", 2, "country",
     "no country's ISO 3166"),
    ("missing start month", scenario(settings=[{"key": "horizon_months", "value": "3"}]),
     "settings.csv", None, "key", "start_month"),
    ("bad start month", _settings(start_month="2027/01"), "settings.csv", 2, "value",
     "not a month"),
    ("zero horizon", _settings(horizon_months=0), "settings.csv", 3, "value", "at least 1"),
    ("bad tail policy", _settings(tail_policy="half"), "settings.csv", 4, "value",
     "not one of"),
    ("bad solver", _settings(solver="gurobi"), "settings.csv", 4, "value", "not one of"),
    ("duplicate setting", scenario(settings=[{"key": "start_month", "value": "2027-01"},
                                             {"key": "horizon_months", "value": "1"},
                                             {"key": "HORIZON_MONTHS", "value": "2"}]),
     "settings.csv", 4, "key", "twice"),
    ("bad bool", _with("workloads", allow_spot="maybe"), "workloads.csv", 2, "allow_spot",
     "true or false"),
    ("interruption over 1", _with("offers", term="spot", interruption_rate=1.5),
     "offers.csv", 2, "interruption_rate", "above"),
    ("zero GPUs per instance", _with("offers", gpus_per_instance=0), "offers.csv", 2,
     "gpus_per_instance", "greater than 0"),
    ("half a GPU per instance", _with("offers", gpus_per_instance=1.5), "offers.csv", 2,
     "gpus_per_instance", "whole number"),
    ("price date not a date", _with("offers", price_date="2026-13-01"), "offers.csv", 2,
     "price_date", "not a date"),
    ("spot share over 1", _with("workloads", max_spot_share=2), "workloads.csv", 2,
     "max_spot_share", "above"),
    ("peak below nothing", _with("workloads", peak_to_average=-0.5), "workloads.csv", 2,
     "peak_to_average", "at least 0"),
    ("peak below average all month", _with("workloads", peak_hours_share=1,
                                           peak_to_average=0.5), "workloads.csv", 2,
     "peak_to_average", "no hours are left off-peak"),
    ("min above max", _with("offers", term="reserved", commit_months=12, min_gpus=8,
                            max_gpus=4), "offers.csv", 2, "min_gpus", "exceeds"),
    ("existing ends before it starts",
     scenario(existing=[{"region": "r1", "gpu": "A", "gpus": 2, "start_month": "2027-05",
                         "end_month": "2027-01", "usd_per_gpu_hour": 1}]),
     "existing.csv", 2, "end_month", "before"),
    ("existing in unknown region",
     scenario(existing=[{"region": "zz", "gpu": "A", "gpus": 2, "start_month": "2027-01",
                         "end_month": "2027-03", "usd_per_gpu_hour": 1}]),
     "existing.csv", 2, "region", "unknown region"),
    ("pool with different replica sizes", POOL_MISMATCH, "throughput.csv", 3,
     "gpus_per_replica", "pool 'p'"),
    ("quarter overlaps month", OVERLAP, "demand.csv", 3, "period", "twice"),
    ("latitude out of range", _with("sites", lat=100), "sites.csv", 2, "lat", "above 90"),
    ("required cell blank", _with("offers", gpu=""), "offers.csv", 2, "gpu", "blank"),
    ("negative demand", _with("demand", amount=-5), "demand.csv", 2, "amount", "negative"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_bad_input_is_located(tmp_path, case):
    _, tables, label, row, column, words = case
    result, issues = _issues(tmp_path, tables)
    assert result is None
    errors = [i for i in issues if i.severity == "error"]
    match = [i for i in errors if i.table == label and i.row == row and i.column == column
             and words.lower() in i.message.lower()]
    assert match, f"expected {label} row {row} column {column} '{words}', got:\n" + \
        "\n".join(map(str, errors))


def test_workbook_errors_name_the_sheet(tmp_path):
    result, issues = _issues(tmp_path, _with("offers", usd_per_gpu_hour="abc"), fmt="xlsx")
    assert result is None
    assert any(i.table == "sheet offers" and i.row == 2 and i.column == "usd_per_gpu_hour"
               for i in issues)


def test_every_problem_is_reported_at_once(tmp_path):
    data = _with("offers", usd_per_gpu_hour="abc")
    data["workloads"][0]["kind"] = "serving"
    data["demand"][0]["period"] = "someday"
    data["sites"][0]["country"] = "USA"
    result, issues = _issues(tmp_path, data)
    where = {(i.table, i.column) for i in issues if i.severity == "error"}
    assert {("offers.csv", "usd_per_gpu_hour"), ("workloads.csv", "kind"),
            ("demand.csv", "period"), ("sites.csv", "country")} <= where


def test_unknown_tables_columns_and_settings_are_warnings(tmp_path):
    data = scenario(settings={"colour": "blue"})
    data["offers"][0]["vendor_note"] = "x"
    path = write_csv(tmp_path / "scn", data)
    (path / "notes.csv").write_text("a,b\n1,2\n")
    result, issues = validate(load_raw(path))
    assert result is not None
    warnings = [str(i) for i in issues if i.severity == "warning"]
    assert any("notes.csv" in w and "unknown table" in w for w in warnings)
    assert any("offers.csv" in w and "vendor_note" in w for w in warnings)
    assert any("colour" in w for w in warnings)
    assert len(warnings) == 3
    assert result.warnings and len(result.warnings) == 3


@pytest.mark.parametrize("key,value", [("time_limit_s", "abc"), ("hours_per_month", "-1"),
                                       ("tail_policy", "partial")])
def test_a_bad_setting_hides_no_other_tables_problems(tmp_path, key, value):
    # an outside audit: a bad optional setting had left the demand rules unchecked, so
    # a demand row given twice and one outside the horizon were said only once it was
    # mended (SPEC §3: every problem at once)
    data = scenario(settings={key: value})
    data["demand"] = [*data["demand"], dict(data["demand"][0]),
                      {"workload": "w", "period": "2031-01", "amount": 5}]
    result, issues = _issues(tmp_path, data)
    said = [str(i) for i in issues]
    assert result is None
    assert any("settings" in s and key in s for s in said), said
    assert any("given twice" in s for s in said), said
    assert any("outside the horizon" in s for s in said), said


@pytest.mark.parametrize("start", [None, "2027-13"])
def test_a_start_month_that_cannot_be_read_hides_no_demand_given_twice(tmp_path, start):
    # no horizon to place the rows in, a quarter and a month of it given for one site
    # are twice all the same (an outside audit: said only once start_month was mended)
    data = scenario()
    data["settings"] = [r for r in data["settings"] if r["key"] != "start_month"]
    if start:
        data["settings"].append({"key": "start_month", "value": start})
    data["demand"] = [{"workload": "w", "period": "2027Q1", "amount": 10},
                      {"workload": "w", "period": "2027-02", "amount": 10}]
    result, issues = _issues(tmp_path, data)
    said = [str(i) for i in issues]
    assert result is None
    assert any("start_month" in s for s in said), said
    assert any("row 3" in s and "in 2027-02 is given twice (also row 2)" in s
               for s in said), said


def test_demand_no_gpu_type_can_serve_is_warned_about(tmp_path):
    # a workload with demand and no throughput row: all of it unmet at its penalty;
    # validate had said nothing (an outside audit), solve reported it unmet
    data = scenario()
    data["workloads"] = [*data["workloads"], {"workload": "v", "kind": "training"}]
    data["demand"] = [*data["demand"], {"workload": "v", "period": "2027-01", "amount": 4}]
    result, issues = _issues(tmp_path, data)
    assert result is not None
    said = [str(i) for i in issues if i.severity == "warning"]
    assert len(said) == 1 and "'v' has no throughput row" in said[0], said
    assert "row 3" in said[0]


def test_demand_outside_the_horizon_is_one_warning(tmp_path):
    # SPEC §2: rows outside the horizon are counted (rows, not months: a quarter outside
    # counted three). The horizon is January 2027 alone: 2027Q1 keeps January and is
    # partly outside; 2026Q4, 2030-01 and 2026-12 are three rows outside.
    data = scenario(demand=[{"workload": "w", "period": "2027Q1", "amount": 1},
                            {"workload": "w", "period": "2026Q4", "amount": 1},
                            {"workload": "w", "period": "2030-01", "amount": 1},
                            {"workload": "w", "period": "2026-12", "amount": 1}])
    result, issues = _issues(tmp_path, data)
    outside = [i for i in issues if "outside the horizon" in i.message]
    assert result is not None and len(outside) == 1
    assert "3 row(s) of demand lie outside the horizon" in outside[0].message
    assert "1 quarter row(s) lie partly outside" in outside[0].message
    assert [(d.month, d.amount) for d in result.demand] == [(0, 1)]


def test_a_peak_below_the_average_is_valid_and_warned_about(tmp_path):
    # SPEC §2 asks only peak_hours_share × peak_to_average ≤ 1: a workload quieter in the
    # shared peak hours (a batch run mostly off-peak) is a scenario, its ratio under 1
    # perhaps a share typed in the wrong column, so it is said (row 2: w; row 3: v, with
    # no peak hours, has no peak to be below anything)
    data = scenario(workloads=[
        {"workload": "w", "kind": "inference", "peak_hours_share": 0.25,
         "peak_to_average": 0.4},
        {"workload": "v", "kind": "inference", "peak_to_average": 0.4}])
    result, issues = _issues(tmp_path, data)
    assert result is not None
    said = [(i.severity, i.table, i.row, i.column) for i in issues]
    assert said == [("warning", "workloads.csv", 2, "peak_to_average")]
    assert "first 25 %" in issues[0].message
    w = next(x for x in result.workloads if x.workload == "w")
    # 10 units a month: 4 in the peak hours, (1 − 0.1) / 0.75 × 10 = 12 in the others
    assert (w.level(10, at_peak=True), w.level(10, at_peak=False)) == \
        pytest.approx((4, 12))


def test_stale_prices_are_named_in_a_warning(tmp_path):
    # start_month 2027-01 is 2027-01-01; 2026-07-04 is 181 days before it: stale after the
    # default 180 days; 2026-07-05 (180 days) is not.
    data = scenario(offers=[
        {"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2,
         "price_date": "2026-07-04"},
        {"region": "r1", "gpu": "A", "term": "spot", "usd_per_gpu_hour": 1,
         "price_date": "2026-07-05"}])
    result, issues = _issues(tmp_path, data)
    stale = [i for i in issues if i.column == "price_date"]
    assert result is not None and len(stale) == 1
    assert stale[0].row == 2 and stale[0].severity == "warning"
    assert "181 days" in stale[0].message
    data["settings"].append({"key": "stale_price_days", "value": "365"})
    result, issues = _issues(tmp_path, data)
    assert not [i for i in issues if i.column == "price_date"]


def test_an_offer_whose_cap_holds_no_whole_instance_is_warned_about(tmp_path):
    # 8-GPU instances, at most 4 GPUs: no plan can rent or commit one; 8 holds one
    for cap, warned in ((4, True), (8, False)):
        data = _with("offers", gpus_per_instance=8, max_gpus=cap)
        result, issues = _issues(tmp_path, data)
        found = [i for i in issues if i.column == "max_gpus"]
        assert result is not None
        assert [(i.severity, i.row) for i in found] == ([("warning", 2)] if warned else [])
        assert all("no whole instance of 8 GPUs" in i.message for i in found)


def test_no_such_scenario(tmp_path):
    result, issues = validate(load_raw(tmp_path / "nope"))
    assert result is None and "no such" in issues[0].message


def test_duplicate_column_header(tmp_path):
    path = write_csv(tmp_path / "scn", BASE)
    (path / "gpus.csv").write_text("gpu,GPU\nA,A\n")
    result, issues = validate(load_raw(path))
    assert result is None
    assert any(i.table == "gpus.csv" and i.row == 1 and "more than once" in i.message
               for i in issues)


def test_cli_validate_exit_status_and_listing(tmp_path):
    runner = CliRunner()
    good = write_csv(tmp_path / "good", BASE)
    res = runner.invoke(app, ["validate", str(good)])
    assert res.exit_code == 0, res.output
    bad = write_csv(tmp_path / "bad", _with("offers", gpu="Z9"))
    res = runner.invoke(app, ["validate", str(bad)])
    assert res.exit_code == 2
    assert "Traceback" not in res.output and res.exception is None or \
        isinstance(res.exception, SystemExit)
    assert "unknown gpu 'Z9'" in res.output and "1 error(s)" in res.output
    # not a terminal: one line a problem, whole at any width (a table wrapped it)
    res = runner.invoke(app, ["validate", str(bad)], env={"COLUMNS": "40"})
    assert "error: offers.csv, row 2, column gpu: unknown gpu 'Z9'" in res.output.splitlines()


def test_cli_solve_bad_input_writes_nothing(tmp_path):
    bad = write_csv(tmp_path / "bad", _with("offers", usd_per_gpu_hour="abc"))
    out = tmp_path / "plan.xlsx"
    res = CliRunner().invoke(app, ["solve", str(bad), "-o", str(out), "--json"])
    assert res.exit_code == 2
    assert not out.exists()
    assert "Traceback" not in res.output
    assert "not a number" in res.output
    # nor the folders it would have written into
    res = CliRunner().invoke(app, ["solve", str(bad),
                                   "-o", str(tmp_path / "o" / "sub" / "p.xlsx"),
                                   "--focus", str(tmp_path / "f" / "focus.csv")])
    assert res.exit_code == 2
    assert not (tmp_path / "o").exists() and not (tmp_path / "f").exists()


def test_a_row_left_out_for_one_problem_still_has_its_others_reported(tmp_path):
    # SPEC §3: every problem at once. A duplicate region naming an unknown site, a region
    # with a negative egress price naming another, an existing contract that is not
    # whole GPUs and ends before it starts, a scenario row with a bad month and an
    # unknown workload: each problem once, and the probabilities' sum counts that row
    data = scenario(
        regions=[{"region": "r1", "provider": "p", "site": "s1"},
                 {"region": "r1", "provider": "p", "site": "nowhere"},
                 {"region": "r2", "provider": "p", "site": "nowhere2",
                  "egress_usd_per_gb": -1}],
        existing=[{"region": "r1", "gpu": "A", "gpus": 2.5, "start_month": "2027-03",
                   "end_month": "2027-01", "usd_per_gpu_hour": 3}],
        demand_scenarios=[{"scenario": "low", "probability": 0.5, "multiplier": 0.5},
                          {"scenario": "mid", "probability": 0.5, "workload": "ghost",
                           "period": "2027-13", "multiplier": 1}])
    result, issues = _issues(tmp_path, data)
    errors = {(i.table, i.row, i.column): i.message for i in issues if i.severity == "error"}
    assert result is None
    assert errors == {
        ("regions.csv", 3, "region"): "duplicate region 'r1' (first at row 2)",
        ("regions.csv", 3, "site"): "unknown site 'nowhere'",
        ("regions.csv", 4, "egress_usd_per_gb"): errors[("regions.csv", 4,
                                                           "egress_usd_per_gb")],
        ("regions.csv", 4, "site"): "unknown site 'nowhere2'",
        ("existing.csv", 2, "gpus"): errors[("existing.csv", 2, "gpus")],
        ("existing.csv", 2, "end_month"): "end_month is before start_month",
        ("demand_scenarios.csv", 3, "period"): errors[("demand_scenarios.csv", 3, "period")],
        ("demand_scenarios.csv", 3, "workload"): "unknown workload 'ghost'",
    }, errors


def test_rows_that_name_an_invalid_row_are_not_said_to_name_nothing(tmp_path):
    # the workload's own problem once, not "unknown workload 'w'" in its throughput and
    # demand rows; a regions table missing a column: not "unknown region" in every offer
    data = scenario(workloads=[{"workload": "w", "kind": "inference", "peak_to_average": 2,
                                "peak_hours_share": 0.75}])
    del data["regions"][0]["provider"]
    result, issues = _issues(tmp_path, data)
    errors = [(i.table, i.row, i.column) for i in issues if i.severity == "error"]
    assert sorted(errors) == [("regions.csv", 1, "provider"),
                              ("workloads.csv", 2, "peak_hours_share")], errors


def test_rows_naming_a_workload_left_out_are_checked_all_the_same(tmp_path):
    # SPEC §3, every problem at once: w is left out for its peak, v for a cell that does
    # not parse; their demand at a site no region reaches, their demand given twice, a
    # pool's replica sizes that differ and v's residency typo are all still reported
    data = scenario(
        sites=[{"site": "s1", "country": "US", "jurisdiction": "US"},
               {"site": "island", "country": "FJ", "jurisdiction": "FJ"}],
        workloads=[{"workload": "w", "kind": "inference", "latency_slo_ms": 50,
                    "peak_to_average": 3, "peak_hours_share": 0.5, "pool": "p"},
                   {"workload": "v", "kind": "inference", "max_spot_share": 2,
                    "residency": "USS", "pool": "p"}],
        throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 1, "gpus_per_replica": 1},
                    {"workload": "v", "gpu": "A", "units_per_gpu": 1,
                     "gpus_per_replica": 2}],
        demand=[{"workload": "w", "period": "2027-01", "amount": 1, "site": "island"},
                {"workload": "v", "period": "2027-01", "amount": 1},
                {"workload": "v", "period": "2027-01", "amount": 2}])
    result, issues = _issues(tmp_path, data)
    found = {(i.severity, i.table, i.row, i.column) for i in issues}
    assert result is None
    assert found == {
        ("error", "workloads.csv", 2, "peak_hours_share"),
        ("error", "workloads.csv", 3, "max_spot_share"),
        ("warning", "workloads.csv", 3, "residency"),
        ("error", "throughput.csv", 3, "gpus_per_replica"),
        ("error", "demand.csv", 2, "site"),
        ("error", "demand.csv", 4, "period"),
    }, issues


def test_a_row_with_a_cell_that_does_not_parse_has_its_rules_checked_too(tmp_path):
    # a reserved offer with a price that is not a number and no commit_months; a site
    # whose latitude is not a number and whose country is no ISO code: both problems of
    # each row at once
    data = _with("offers", row={"region": "r1", "gpu": "A", "term": "reserved",
                                "usd_per_gpu_hour": "abc"})
    data["sites"].append({"site": "s9", "country": "USA", "jurisdiction": "US",
                          "lat": "north"})
    result, issues = _issues(tmp_path, data)
    errors = {(i.table, i.row, i.column) for i in issues if i.severity == "error"}
    offer_row = len(data["offers"]) + 1
    site_row = len(data["sites"]) + 1
    assert result is None
    assert errors == {("offers.csv", offer_row, "usd_per_gpu_hour"),
                      ("offers.csv", offer_row, "commit_months"),
                      ("sites.csv", site_row, "lat"), ("sites.csv", site_row, "country")}


def test_a_duplicate_of_a_row_left_out_for_a_bad_cell_is_said(tmp_path):
    # found by a black-box audit: two rows of workload w, the first with a negative SLO,
    # said only the SLO, and the duplicate once the SLO was mended; two offers of one
    # key, the first with a negative price, likewise. A row whose own key did not parse
    # (commit_months 12.5) is no duplicate of anything
    data = scenario(
        workloads=[{"workload": "w", "kind": "inference", "latency_slo_ms": -3},
                   {"workload": "w", "kind": "training"}],
        offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": -2},
                {"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 3},
                {"region": "r1", "gpu": "A", "term": "reserved", "usd_per_gpu_hour": 1,
                 "commit_months": 12},
                {"region": "r1", "gpu": "A", "term": "reserved", "usd_per_gpu_hour": 1,
                 "commit_months": 12.5}])
    result, issues = _issues(tmp_path, data)
    errors = sorted((i.table, i.row, i.column) for i in issues if i.severity == "error")
    assert result is None
    assert errors == [("offers.csv", 2, "usd_per_gpu_hour"), ("offers.csv", 3, "region"),
                      ("offers.csv", 5, "commit_months"),
                      ("workloads.csv", 2, "latency_slo_ms"),
                      ("workloads.csv", 3, "workload")], errors
    said = {(i.table, i.row): i.message for i in issues}
    assert "duplicate workload 'w' (first at row 2)" in said[("workloads.csv", 3)]


def test_a_table_missing_a_column_has_its_rows_checked_all_the_same(tmp_path):
    # offers without usd_per_gpu_hour: that one error, and its rows' own problems too
    # (an unknown GPU, an unknown region, a negative max_gpus) — they were hidden
    data = scenario(offers=[
        {"region": "r1", "gpu": "A", "term": "on_demand"},
        {"region": "r1", "gpu": "B300", "term": "on_demand"},
        {"region": "par-9", "gpu": "A", "term": "spot", "max_gpus": -16}])
    result, issues = _issues(tmp_path, data)
    errors = sorted((i.table, i.row, i.column) for i in issues if i.severity == "error")
    assert result is None
    assert errors == [("offers.csv", 1, "usd_per_gpu_hour"), ("offers.csv", 3, "gpu"),
                      ("offers.csv", 4, "max_gpus"), ("offers.csv", 4, "region")], errors


def test_an_unreadable_or_missing_table_hides_no_other_problem_and_adds_none(tmp_path):
    # sites.csv not UTF-8, beside a duplicate GPU and an on-demand offer with
    # commit_months: all three reported (only the unreadable file was); no "unknown
    # site" for the rows naming sites, no residency warning against no sites
    data = scenario(gpus=[{"gpu": "A", "memory_gb": 80}, {"gpu": "A", "memory_gb": 40}],
                    offers=[{"region": "r1", "gpu": "A", "term": "on_demand",
                             "usd_per_gpu_hour": 2, "commit_months": 12}],
                    workloads=[{"workload": "w", "kind": "inference", "residency": "US"}])
    folder = write_csv(tmp_path / "scn", data)
    sites = folder / "sites.csv"
    sites.write_bytes(sites.read_bytes().replace(b"s1", "s\xfc".encode("latin-1")))
    result, issues = validate(load_raw(folder))
    errors = sorted((i.table, i.row, i.column) for i in issues if i.severity == "error")
    assert result is None
    assert errors == [("gpus.csv", 3, "gpu"), ("offers.csv", 2, "commit_months"),
                      ("sites.csv", 2, "site")], errors
    assert not [i for i in issues if i.severity == "warning"], issues
    # workloads.csv missing: that one error, not "unknown workload" in every throughput
    # and demand row, nor "no demand inside the horizon"
    result, issues = _issues(tmp_path / "b", _without("workloads"))
    assert [(i.severity, i.table, i.message) for i in issues] == [
        ("error", "workloads.csv", "required table is missing")], issues


LINKED = scenario(
    sites=[{"site": "s1", "country": "US", "jurisdiction": "US"},
           {"site": "s2", "country": "US", "jurisdiction": "US"}],
    links=[{"site_a": "s1", "site_b": "s2", "rtt_ms": 10}],
    workloads=[{"workload": "w", "kind": "inference", "latency_slo_ms": 50}],
    demand=[{"workload": "w", "period": "2027-01", "amount": 1, "site": "s2"}],
)


@pytest.mark.parametrize("fmt, broken, said", [
    ("csv", "missing", ("links.csv", None, None)),
    ("xlsx", "missing", ("sheet links", None, None)),
    ("csv", "rtt_ms", ("links.csv", 2, "rtt_ms")),
])
def test_a_broken_network_map_is_said_once_not_in_every_demand_row(tmp_path, fmt, broken,
                                                                  said):
    # the demand at s2 reaches r1 (at s1) only through the link: with the links table
    # missing, or its one row unreadable, the error is the map's own, not also "s2 is
    # not connected to any region" in the demand row; a missing table is named as the
    # user knows it, the folder's file or the workbook's sheet
    result, issues = _issues(tmp_path, LINKED, fmt)
    assert result is not None, issues  # the map whole: valid
    data = copy.deepcopy(LINKED)
    if broken == "missing":
        del data["links"]
    else:
        data["links"][0]["rtt_ms"] = "abc"
    (tmp_path / "b").mkdir()
    result, issues = _issues(tmp_path / "b", data, fmt)
    assert result is None
    assert [(i.table, i.row, i.column) for i in issues if i.severity == "error"] == [said]


@pytest.mark.parametrize("broken, said", [
    ("link", ("links.csv", 3, "site_b")),
    ("region", ("regions.csv", 3, "site")),
])
def test_a_site_no_row_could_connect_is_said_beside_the_maps_own_errors(tmp_path, broken,
                                                                        said):
    # LINKED plus demand at 'island', which no link names: it is unreachable whatever
    # the map's other rows say, so its error stands beside theirs (found by an outside
    # audit: a link or region at an unknown site had hidden it)
    data = copy.deepcopy(LINKED)
    data["sites"].append({"site": "island", "country": "FJ", "jurisdiction": "FJ"})
    data["demand"].append({"workload": "w", "period": "2027-02", "amount": 1,
                           "site": "island"})
    if broken == "link":
        data["links"].append({"site_a": "s1", "site_b": "atlantis", "rtt_ms": 5})
    else:
        data["regions"].append({"region": "r9", "provider": "p", "site": "mars"})
    result, issues = _issues(tmp_path, data)
    assert result is None
    assert sorted((i.table, i.row, i.column) for i in issues if i.severity == "error") == \
        sorted([said, ("demand.csv", 3, "site")]), issues


def test_a_reserved_country_code_is_warned_of_and_kosovo_is_a_country(tmp_path):
    # UK is reserved in ISO 3166 (the United Kingdom's code is GB): used in practice, so
    # accepted, with a warning that a residency of GB will not match it; XK (Kosovo) is
    # in common use; XX is no country's (an outside audit: any two letters passed)
    result, issues = _issues(tmp_path / "uk", _with("sites", country="uk"))
    assert result is not None and result.sites[0].country == "UK"
    warned = [i for i in issues if i.severity == "warning"]
    assert [(i.table, i.row, i.column) for i in warned] == [("sites.csv", 2, "country")]
    assert "GB" in warned[0].message
    result, issues = _issues(tmp_path / "xk", _with("sites", country="XK"))
    assert result is not None and issues == []


def test_a_duplicate_row_has_its_own_rules_checked_too(tmp_path):
    # found by a black-box audit: a second site s1 with country USA said only that it
    # repeats s1, not that USA is no ISO code; a spot offer with commit_months 12 beside
    # one without was said a duplicate "('r1', 'A', 'spot', 0)" and not that spot takes
    # no commit_months; a second workload w and a link of a site to itself likewise
    data = scenario(
        sites=[{"site": "s1", "country": "US", "jurisdiction": "US"},
               {"site": "s1", "country": "USA", "jurisdiction": "US"}],
        links=[{"site_a": "s1", "site_b": "s1", "rtt_ms": 1},
               {"site_a": "s1", "site_b": "s1", "rtt_ms": 2}],
        offers=[{"region": "r1", "gpu": "A", "term": "spot", "usd_per_gpu_hour": 1},
                {"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2},
                {"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2,
                 "min_gpus": 3, "max_gpus": 1},
                {"region": "r1", "gpu": "A", "term": "spot", "usd_per_gpu_hour": 1,
                 "commit_months": 12}],
        workloads=[{"workload": "w", "kind": "inference"},
                   {"workload": "w", "kind": "inference", "peak_to_average": 3,
                    "peak_hours_share": 0.5}])
    result, issues = _issues(tmp_path, data)
    errors = {(i.table, i.row, i.column): i.message for i in issues if i.severity == "error"}
    assert result is None
    assert set(errors) == {
        ("sites.csv", 3, "site"), ("sites.csv", 3, "country"),
        ("links.csv", 2, "site_b"), ("links.csv", 3, "site_a"), ("links.csv", 3, "site_b"),
        ("offers.csv", 4, "region"), ("offers.csv", 4, "min_gpus"),
        ("offers.csv", 5, "commit_months"),
        ("workloads.csv", 3, "workload"), ("workloads.csv", 3, "peak_hours_share"),
    }, errors
    assert "is not an ISO 3166 alpha-2 code" in errors[("sites.csv", 3, "country")]
    assert "spot is pay-as-you-go and takes no commit_months (got 12)" \
        in errors[("offers.csv", 5, "commit_months")]
    assert errors[("offers.csv", 4, "region")] == (
        "duplicate region, gpu, term, commit_months ('r1', 'A', 'on_demand', 0) "
        "(first at row 3)")


def test_rows_with_a_blank_key_cell_are_not_called_duplicates(tmp_path):
    # an outside audit: two offers rows with a blank term read "duplicate region, gpu,
    # term, commit_months ('aws-use1', 'H100', None, 0)": the blank cells are the problem,
    # said on each row, and a key with a blank in it names no offer to be duplicated
    data = scenario(offers=[
        {"region": "r1", "gpu": "A", "term": "", "usd_per_gpu_hour": 1},
        {"region": "r1", "gpu": "A", "term": "", "usd_per_gpu_hour": 2}])
    result, issues = _issues(tmp_path, data)
    errors = {(i.table, i.row, i.column): i.message for i in issues if i.severity == "error"}
    assert result is None
    assert set(errors) == {("offers.csv", 2, "term"), ("offers.csv", 3, "term")}, errors
    assert not any("None" in i.message for i in issues)


def test_a_site_left_out_still_counts_for_residency(tmp_path):
    # an outside audit: a site row with a latitude of 95 (said) also made the residency
    # "EU", its jurisdiction, "neither the jurisdiction nor the country of any site"
    data = scenario(
        sites=[{"site": "s1", "country": "US", "jurisdiction": "US"},
               {"site": "s2", "country": "DE", "jurisdiction": "EU", "lat": 95, "lon": 8}],
        workloads=[{"workload": "w", "kind": "inference", "residency": "EU"}])
    result, issues = _issues(tmp_path, data)
    said = {(i.table, i.row, i.column): i.message for i in issues}
    assert result is None and ("sites.csv", 3, "lat") in said, said
    assert not [i for i in issues if i.column == "residency"], said


def test_terms_of_commitments_on_a_pay_as_you_go_offer_are_warned_of(tmp_path):
    # found by an outside audit: an on-demand offer with an upfront of $1,000 a GPU was
    # read without a word, and the plan paid none of it (SPEC §2 counts an upfront on
    # commitments); it is said as min_gpus there is, and the scenario stays valid
    data = _with("offers", upfront_usd_per_gpu=1000, min_gpus=4)
    result, issues = _issues(tmp_path, data)
    assert result is not None
    said = {(i.table, i.row, i.column): i.message for i in issues}
    assert set(said) == {("offers.csv", 2, "upfront_usd_per_gpu"),
                         ("offers.csv", 2, "min_gpus")}, said
    assert "applies to commitments only; ignored" in said[("offers.csv", 2,
                                                           "upfront_usd_per_gpu")]


def test_a_mistyped_amount_beside_one_other_is_warned_about(tmp_path):
    # an outside audit: a burst of 2 in 2027-02 and 2,000,000 in 2027-03 (two rows) went
    # unwarned; the rule had needed two other amounts
    _, issues = _issues(tmp_path, scenario(demand=[
        {"workload": "w", "period": "2027-02", "amount": 2},
        {"workload": "w", "period": "2027-03", "amount": 2_000_000}]))
    typo = [i for i in issues if "mistyped" in i.message]
    assert [(i.row, i.column) for i in typo] == [(3, "amount")]
    assert "1,000,000 times the median (2)" in typo[0].message
