"""Loading: CSV folders and workbooks give the same scenario; names and blanks as SPEC §2."""

from __future__ import annotations

import datetime as dt

import pytest
from openpyxl import load_workbook
from scenarios import scenario, write_csv, write_xlsx
from typer.testing import CliRunner

from planner.cli import app
from planner.io.issues import ScenarioError
from planner.io.validate import load_scenario
from planner.model.graph import Transit, region_latencies

RICH = scenario(
    settings={"horizon_months": 6, "tail_policy": "prorate", "discount_rate_annual": 0.08},
    gpus=[{"gpu": "A", "memory_gb": 80, "source": "datasheet"}, {"gpu": "B"}],
    sites=[{"site": "s1", "country": "us", "jurisdiction": "us", "lat": 40.1, "lon": -74},
           {"site": "s2", "country": "DE", "jurisdiction": "EU"}],
    links=[{"site_a": "s1", "site_b": "s2", "rtt_ms": 90}],
    regions=[{"region": "r1", "provider": "p", "site": "s1", "egress_usd_per_gb": 0.09},
             {"region": "r2", "provider": "q", "site": "s2"}],
    offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2},
            {"region": "r2", "gpu": "B", "term": "Reserved", "usd_per_gpu_hour": 1,
             "commit_months": 12, "upfront_usd_per_gpu": 100, "lead_time_days": 45,
             "max_gpus": 16, "min_gpus": 4}],
    workloads=[{"workload": "w", "kind": "inference", "latency_slo_ms": 100,
                "residency": "EU; us", "peak_to_average": 2, "peak_hours_share": 0.25},
               {"workload": "t", "kind": "training"}],
    throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 10},
                {"workload": "t", "gpu": "B", "units_per_gpu": 1, "gpus_per_replica": 8}],
    demand=[{"workload": "w", "period": "2027Q1", "amount": 10, "site": "s2"},
            {"workload": "t", "period": "2027-02", "amount": 16}],
    existing=[{"region": "r2", "gpu": "B", "gpus": 8, "start_month": "2026-10",
               "end_month": "2027-03", "usd_per_gpu_hour": 1.5}],
)


def test_csv_and_workbook_give_the_same_scenario(tmp_path):
    a = load_scenario(write_csv(tmp_path / "rich", RICH))
    b = load_scenario(write_xlsx(tmp_path / "rich.xlsx", RICH))
    assert a == b
    assert a.content_hash() == b.content_hash()


def test_defaults_units_and_normalisation(tmp_path):
    s = load_scenario(write_csv(tmp_path / "rich", RICH))
    assert s.settings.tail_policy == "prorate" and s.settings.hours_per_month == 730
    assert s.settings.unmet_penalty_usd_per_unit_hour == 1000
    reserved = s.offer_by_key["r2/B/reserved/12"]
    assert reserved.first_month == 2  # ceil(45 / 30)
    assert s.offer_by_key["r1/A/on_demand"].max_gpus is None  # blank: unlimited
    w, t = s.workload_by_name["w"], s.workload_by_name["t"]
    assert w.residency == ("EU", "US") and not w.allow_spot and not w.single_region
    assert t.single_region and not t.allow_spot
    assert s.site_by_name["s1"].country == "US"
    # a quarter's amount applies to each of its months
    assert sorted(d.month for d in s.demand if d.workload == "w") == [0, 1, 2]
    e = s.existing[0]
    assert (e.start, e.end) == (-3, 2)


def test_column_names_are_case_insensitive_and_order_free(tmp_path):
    path = write_csv(tmp_path / "scn", scenario())
    (path / "offers.csv").write_text("USD_per_GPU_hour,Term,GPU,Region\n2,ON_DEMAND,A,r1\n")
    s = load_scenario(path)
    assert s.offers[0].term == "on_demand" and s.offers[0].usd_per_gpu_hour == 2


def test_workbook_dates_and_decimal_whole_numbers(tmp_path):
    data = scenario(settings={"horizon_months": 3})
    file = write_xlsx(tmp_path / "s.xlsx", data)
    wb = load_workbook(file)
    wb["settings"]["B2"] = dt.datetime(2027, 1, 1)
    wb["settings"]["B3"] = 3.0
    wb["demand"]["B2"] = dt.datetime(2027, 2, 1)
    wb.save(file)
    s = load_scenario(file)
    assert s.settings.start_month == (2027, 1) and s.settings.horizon_months == 3
    assert s.demand[0].month == 1
    # SPEC §2: a date cell's year and month count, whatever its day
    wb["settings"]["B2"] = dt.datetime(2027, 1, 15)
    wb["demand"]["B2"] = dt.date(2027, 3, 31)
    wb.save(file)
    s = load_scenario(file)
    assert s.settings.start_month == (2027, 1) and s.demand[0].month == 2


def test_template_filled_by_hand_loads(tmp_path):
    file = tmp_path / "t.xlsx"
    assert CliRunner().invoke(app, ["template", str(file)]).exit_code == 0
    wb = load_workbook(file)
    assert {"README", "settings", "gpus", "sites", "links", "regions", "offers", "workloads",
            "throughput", "demand", "existing"} <= set(wb.sheetnames)
    offers = wb["offers"]
    assert offers["A1"].comment is not None and "region" in offers["A1"].comment.text
    # a required column whose cells may be blank says so (a scenario's probability may
    # stand on one of its rows)
    notes = {c.value: c.comment.text for c in wb["demand_scenarios"][1]}
    assert notes["probability"].endswith("required column, cells may be blank")
    assert notes["multiplier"].endswith("required")
    lists = [dv.formula1 for dv in offers.data_validations.dataValidation]
    assert any("reserved" in f for f in lists)
    # it prints as the reports do: one page wide, the header row on every page
    for ws in wb.worksheets:
        assert ws.print_title_rows == "$1:$1", ws.title
        assert ws.sheet_properties.pageSetUpPr.fitToPage and ws.page_setup.fitToWidth == 1
    # a user fills it in
    settings = wb["settings"]
    for row in settings.iter_rows(min_row=2):
        if row[0].value == "start_month":
            row[1].value = "2027-01"
        if row[0].value == "horizon_months":
            row[1].value = 2
    wb["gpus"].append(["A"])
    wb["sites"].append(["s1", "US", "US"])
    wb["regions"].append(["r1", "p", "s1"])
    wb["offers"].append(["r1", "A", "on_demand", 2])
    wb["workloads"].append(["w", "inference"])
    wb["throughput"].append(["w", "A", 10])
    wb["demand"].append(["w", "2027-01", 10])
    wb.save(file)
    s = load_scenario(file)
    assert s.settings.horizon_months == 2 and s.settings.solver == "highs"
    assert s.warnings == ()


def test_transit_latency_is_the_shortest_path(tmp_path):
    data = scenario(
        sites=[{"site": x, "country": "US", "jurisdiction": "US"} for x in "abcd"],
        links=[{"site_a": "a", "site_b": "b", "rtt_ms": 10},
               {"site_a": "b", "site_b": "c", "rtt_ms": 10},
               {"site_a": "a", "site_b": "c", "rtt_ms": 50},
               {"site_a": "c", "site_b": "d", "rtt_ms": 5}],
        regions=[{"region": "rd", "provider": "p", "site": "d"},
                 {"region": "ra", "provider": "p", "site": "a"}],
        offers=[{"region": "rd", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 1}],
    )
    s = load_scenario(write_csv(tmp_path / "g", data))
    t = Transit(s, ["a"])
    assert t.latency("a", "d") == 25  # a-b-c-d, not a-c-d (55)
    assert t.latency("a", "a") == 0
    rows = region_latencies(s, "a")
    assert [(r["region"], r["latency_ms"]) for r in rows] == [("ra", 0), ("rd", 25)]
    assert rows[1]["path"] == ["a", "b", "c", "d"]
    res = CliRunner().invoke(app, ["latency", str(tmp_path / "g"), "a"])
    assert res.exit_code == 0 and "rd" in res.output and "25" in res.output
    res = CliRunner().invoke(app, ["latency", str(tmp_path / "g"), "zz"])
    assert res.exit_code == 2 and "unknown site" in res.output
    # any case; JSON and CSV for scripts, paths in full
    res = CliRunner().invoke(app, ["latency", str(tmp_path / "g"), "A", "--format", "json"])
    assert res.exit_code == 0, res.output
    import json

    rows = json.loads(res.stdout)
    assert [(r["region"], r["latency_ms"], r["path"]) for r in rows] == [
        ("ra", 0, "a"), ("rd", 25, "a → b → c → d")]
    assert all(isinstance(r["latency_ms"], float) for r in rows)  # 0.0 too, not 0
    res = CliRunner().invoke(app, ["latency", str(tmp_path / "g"), "a", "--format", "csv"])
    assert res.stdout.splitlines()[0] == "region,provider,site,jurisdiction,country," \
        "latency_ms,path"


def test_shipped_scenario_and_model_profiles_are_found_from_anywhere(tmp_path, monkeypatch):
    import shutil
    from pathlib import Path

    from planner.cli import default_scenario

    data = Path(__file__).resolve().parents[1] / "data"
    shutil.copytree(data, tmp_path / "mine")
    monkeypatch.chdir(tmp_path)  # no data/ or models/ here
    assert default_scenario() == data
    res = CliRunner().invoke(app, ["throughput", "mine"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "mine" / "throughput.csv").read_text() == \
        (data / "throughput.csv").read_text()
    res = CliRunner().invoke(app, ["throughput", "mine", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "workloads.csv" in res.output


def test_a_required_formula_with_no_saved_value_is_reported_once(tmp_path):
    file = write_xlsx(tmp_path / "s.xlsx", scenario())
    wb = load_workbook(file)
    ws = wb["offers"]
    col = next(c.column_letter for c in ws[1] if c.value == "usd_per_gpu_hour")
    ws[f"{col}2"] = "=1+2"  # required: blank as read, but the formula is what is wrong
    wb.save(file)
    with pytest.raises(ScenarioError) as raised:
        load_scenario(file)
    cell = [i for i in raised.value.issues
            if (i.table, i.row, i.column) == ("sheet offers", 2, "usd_per_gpu_hour")]
    assert len(cell) == 1 and "no saved value" in cell[0].message


def _saved_by_excel(file, cells: dict[str, bytes]):
    """`file` as Excel saves it: formula cells with their calculated values (openpyxl
    writes `<f>…</f><v></v>`). `cells`: reference → the cell's XML after the formula."""
    import re
    import zipfile

    with zipfile.ZipFile(file) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    for name in parts:
        for ref, saved in cells.items():
            parts[name] = re.sub(rb'<c r="' + ref.encode() + rb'">(<f>.*?</f>)<v></v>',
                                 lambda m: b'<c r="' + ref.encode() + b'"' + saved[0]
                                 + b">" + m.group(1) + saved[1], parts[name])
    with zipfile.ZipFile(file, "w") as z:
        for name, data in parts.items():
            z.writestr(name, data)


def test_a_formula_with_no_saved_value_is_an_error_not_a_blank(tmp_path):
    """Written by a program that does not calculate (here openpyxl), `=8*2` in max_gpus
    has no value to read: taken as blank it would mean unlimited GPUs."""
    data = scenario(offers=[{"region": "r1", "gpu": "A", "term": "on_demand",
                             "usd_per_gpu_hour": 2, "max_gpus": 1}])
    file = write_xlsx(tmp_path / "s.xlsx", data)
    wb = load_workbook(file)
    ws = wb["offers"]
    col = next(c.column_letter for c in ws[1] if c.value == "max_gpus")
    ws[f"{col}2"] = "=8*2"
    wb.save(file)
    result = CliRunner().invoke(app, ["validate", str(file)])
    assert result.exit_code == 2
    assert "sheet offers" in result.output and "row 2" in result.output
    assert "max_gpus" in result.output and "no saved value" in result.output
    # saved by Excel: the value is there, and read; so is a formula's empty text
    wb = load_workbook(file)
    wb["offers"]["F1"], wb["offers"]["F2"] = "source", '=IF(1,"","x")'
    wb.save(file)
    _saved_by_excel(file, {f"{col}2": (b"", b"<v>16</v>"), "F2": (b' t="str"', b"<v></v>")})
    s = load_scenario(file)
    assert s.offers[0].max_gpus == 16 and not s.offers[0].source
