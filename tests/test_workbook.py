"""The finance workbook (SPEC §5): formulas that recalculate to the solver's figures,
reconciling totals, finance formatting, text that never becomes a formula, atomic writes."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from decimal import Decimal

import numpy as np
import pytest
from openpyxl import load_workbook
from rendering import error_values, recalculated, stale_values, too_narrow
from scenarios import scenario, write_csv
from solving import solve_tables
from typer.testing import CliRunner

from planner.cli import app
from planner.report import workbook as report
from planner.report.economics import line_name, schedule_lines
from planner.report.workbook import write_workbook

# Every cost line at once: prorated tail, discounting, upfronts, existing contracts, spot,
# egress, peaks and two providers, named as SUMIFS would misread them ('=4+4' as a
# comparison with 4+4, 'm*' as a wildcard) and as a formula would be written.
FINANCE = scenario(
    settings={"horizon_months": 4, "hours_per_month": 100, "tail_policy": "prorate",
              "discount_rate_annual": 0.1},
    regions=[{"region": "r1", "provider": "=4+4", "site": "s1", "egress_usd_per_gb": 0.1},
             {"region": "r2", "provider": "m*", "site": "s1"}],
    offers=[
        {"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 3},
        {"region": "r1", "gpu": "A", "term": "spot", "usd_per_gpu_hour": 1,
         "interruption_rate": 0.2, "max_gpus": 2},
        {"region": "r1", "gpu": "A", "term": "reserved", "usd_per_gpu_hour": 1.5,
         "commit_months": 6, "upfront_usd_per_gpu": 60},
        {"region": "r2", "gpu": "A", "term": "monthly", "usd_per_gpu_hour": 2.2,
         "commit_months": 1, "max_gpus": 1},
    ],
    workloads=[
        {"workload": "=1+1", "kind": "inference", "peak_to_average": 1.5,
         "peak_hours_share": 0.4, "egress_gb_per_unit_hour": 0.2},
        {"workload": "@SUM(A1)", "kind": "burst", "peak_to_average": 4,
         "peak_hours_share": 0.25},
    ],
    throughput=[{"workload": "=1+1", "gpu": "A", "units_per_gpu": 10},
                {"workload": "@SUM(A1)", "gpu": "A", "units_per_gpu": 10}],
    demand=[{"workload": "=1+1", "period": "2027Q1", "amount": 35},
            {"workload": "=1+1", "period": "2027-04", "amount": 50},
            {"workload": "@SUM(A1)", "period": "2027-02", "amount": 6}],
    existing=[{"region": "r1", "gpu": "A", "gpus": 1, "start_month": "2026-11",
               "end_month": "2027-02", "usd_per_gpu_hour": 1.2}],
)


@pytest.fixture(scope="module")
def finance(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("finance")
    plan = solve_tables(tmp, FINANCE)
    path = tmp / "plan.xlsx"
    write_workbook(plan, path, baselines=[{
        "name": "pay-as-you-go only", "status": "optimal", "mip_gap": 0.0,
        "total_cost_usd": plan.totals["total_cost_usd"] * 1.25,
        "unmet_unit_hours": 0.0, "saving_usd": plan.totals["total_cost_usd"] * 0.25}])
    return plan, path


def _summary(ws) -> dict:
    return {row[0]: row[1:] for row in ws.iter_rows(min_col=1, max_col=5, values_only=True)
            if isinstance(row[0], str)}


def test_libreoffice_recalculation_reconciles_with_the_solver(finance, tmp_path):
    plan, path = finance
    done = recalculated(path, tmp_path / "recalc")
    assert error_values(done) == []  # on no sheet
    wb = load_workbook(done, data_only=True)
    s = _summary(wb["Summary"])
    t = plan.totals
    assert s["Total cost (nominal)"][0] == pytest.approx(t["total_cost_usd"], rel=1e-9)
    assert s["Total cost (discounted)"][0] == pytest.approx(t["discounted_total_cost_usd"],
                                                           rel=1e-9)
    for term, usd in t["cost_by_term_usd"].items():
        assert s[f"  {term}"][0] == pytest.approx(usd, rel=1e-9, abs=1e-6), term
    assert s["  egress"][0] == pytest.approx(t["egress_usd"], rel=1e-9)
    assert s["Plan costs (sum of Plan)"][0] == pytest.approx(t["plan_cost_usd"], rel=1e-9)
    # SPEC §5: total = Plan costs + idle committed capacity + upfronts + egress, where
    # payments after the horizon are committed capacity no plan uses
    assert s["Idle committed capacity"][0] == pytest.approx(
        t["idle_committed_usd"] + t["after_horizon_usd"], rel=1e-9)
    assert s["  of which idle in the horizon"][0] == pytest.approx(t["idle_committed_usd"],
                                                                    rel=1e-9)
    assert s["  of which payments after the horizon"][0] == pytest.approx(
        t["after_horizon_usd"], rel=1e-9)
    assert s["Plan costs (sum of Plan)"][0] + s["Idle committed capacity"][0] + \
        s["Upfronts (as counted)"][0] + s["Egress"][0] == pytest.approx(t["total_cost_usd"],
                                                                        rel=1e-9)
    assert s["Upfronts (as counted)"][0] == pytest.approx(t["upfront_usd"], rel=1e-9)
    # under prorate the new commitments' obligation is what is counted, the payments
    # beyond the horizon and the upfronts' share for those months (an outside audit
    # found the last nowhere: $810 − $160 ≠ the $630 counted)
    new = plan.contracts[plan.contracts["kind"] == "new"]
    uncounted = "  of which upfronts' share beyond the horizon (prorate: not counted)"
    assert s[uncounted][0] == pytest.approx(float(
        (new["upfront_usd"] - new["counted_upfront_usd"]).sum())) and s[uncounted][0] > 0
    assert s["Commitment obligation (new)"][0] - s["  of which beyond the horizon"][0] \
        - s[uncounted][0] == pytest.approx(float(
            (new["counted_payments_usd"] + new["counted_upfront_usd"]).sum()), rel=1e-9)
    assert s["Difference to total (should be 0)"][0] == pytest.approx(0, abs=1e-6)
    contracts = wb["Contracts"]  # an existing contract obligates from the horizon on
    header = [c.value for c in contracts[1]]
    existing = next(r for r in contracts.iter_rows(min_row=2, values_only=True)
                    if r[header.index("Kind")] == "existing")
    assert existing[header.index("Total obligation")] == pytest.approx(240)
    assert s["Commitment obligation (new)"][0] == pytest.approx(t["obligation_usd"])
    assert s["  of which beyond the horizon"][0] == pytest.approx(t["beyond_horizon_usd"])
    assert s["against"][2] == pytest.approx(0.25 * t["total_cost_usd"])  # saving
    # the cost lines this scenario was built to exercise are all there
    assert t["cost_by_term_usd"]["existing"] > 0 and t["upfront_usd"] > 0
    assert t["egress_usd"] > 0 and t["beyond_horizon_usd"] > 0
    assert t["cost_by_term_usd"]["spot"] > 0
    # Costs: grand totals equal Summary; per-provider total equals per-term total
    costs = wb["Costs"]
    header = [c.value for c in costs[1]]
    total_row = next(r for r in costs.iter_rows(values_only=True) if r[0] == "Total")
    col = {name: i for i, name in enumerate(header)}
    assert total_row[col["Total"]] == pytest.approx(t["total_cost_usd"], rel=1e-9)
    assert total_row[col["Total by provider"]] == pytest.approx(t["total_cost_usd"], rel=1e-9)
    # Plan: each recalculated cost equals the solver's
    plan_ws = wb["Plan"]
    head = [c.value for c in plan_ws[1]]
    for row in plan_ws.iter_rows(min_row=2, values_only=True):
        assert row[head.index("Cost")] == pytest.approx(row[head.index("Solver cost")],
                                                        rel=1e-9, abs=1e-9)
    # Commitments: each line's utilization as the plan computed it for its contracts
    cws = wb["Commitments"]
    head = [c.value for c in cws[1]]
    got = {r[0]: r[head.index("Utilization in horizon")]
           for r in cws.iter_rows(min_row=2, values_only=True)}
    # "Utilization" and "Idle cost" are the JSON's (SPEC §4 v2: over the whole term; an
    # outside audit found the names on the figures inside the horizon): a reservation
    # of 6 months in a 4-month horizon
    from planner.report.economics import commitment_economics

    economics = commitment_economics(plan)
    term = {r[0]: (r[head.index("Utilization")], r[head.index("Idle cost")])
            for r in cws.iter_rows(min_row=2, values_only=True)}
    for line in schedule_lines(plan):
        if len(line) == 1 and line[0].kind == "new":
            e = economics[line[0].contract]
            assert term[line_name(line)] == pytest.approx((e["utilization"], e["idle_usd"]))
    for line in schedule_lines(plan):
        used = sum(c.used_gpu_hours for c in line)
        available = sum(c.available_gpu_hours for c in line)
        assert got[line_name(line)] == pytest.approx(used / available if available else 0,
                                                     rel=1e-9, abs=1e-12)
    # every contract on the Contracts sheet, under its line
    kws = wb["Contracts"]
    head = [c.value for c in kws[1]]
    rows = {r[0]: r for r in kws.iter_rows(min_row=2, values_only=True)}
    assert set(rows) == set(plan.contracts["contract"])
    for c in plan.contracts.itertuples():
        assert rows[c.contract][head.index("Total obligation")] == pytest.approx(
            c.obligation_usd, rel=1e-9)


@pytest.mark.parametrize("tail_policy", ["prorate", "full"])
def test_every_formula_is_saved_with_what_it_comes_to(finance, tail_policy, tmp_path):
    # a reader that does not recalculate (a file preview, Excel's Protected View, pandas,
    # openpyxl's data_only) shows a formula's saved value: there was none, so the totals
    # read blank; every sheet's formulas, under either tail policy, against LibreOffice
    plan, path = finance
    if tail_policy == "full":
        tables = dict(FINANCE, settings=[dict(row, value="full") if row["key"] == "tail_policy"
                                         else row for row in FINANCE["settings"]])
        plan = solve_tables(tmp_path / "full", tables)
        path = tmp_path / "full.xlsx"
        write_workbook(plan, path)
    done = recalculated(path, tmp_path / "recalc")
    assert stale_values(path, done) == []
    saved = load_workbook(path, data_only=True)
    s = _summary(saved["Summary"])
    assert s["Total cost (nominal)"][0] == pytest.approx(plan.totals["total_cost_usd"])
    assert s["Difference to total (should be 0)"][0] == pytest.approx(0, abs=1e-6)
    costs = [c for row in saved["Costs"].iter_rows() for c in row
             if isinstance(c.value, float)]
    plan_costs = [row[13] for row in saved["Plan"].iter_rows(min_row=2, values_only=True)]
    assert costs and plan_costs and None not in plan_costs


def test_a_path_exactly_at_the_slo_has_no_headroom_below_zero(tmp_path):
    # an outside audit: links of 0.1 and 0.2 ms to a region at an SLO of 0.3 ms (within
    # it) showed a worst transit of 0.30000000000000004 and a headroom of -5.6e-17: "-0"
    plan = solve_tables(tmp_path, scenario(
        settings={"hours_per_month": 100},
        sites=[{"site": s, "country": "US", "jurisdiction": "US"} for s in "abc"],
        links=[{"site_a": "a", "site_b": "b", "rtt_ms": 0.1},
               {"site_a": "b", "site_b": "c", "rtt_ms": 0.2}],
        regions=[{"region": "r1", "provider": "p", "site": "c"}],
        workloads=[{"workload": "w", "kind": "inference", "latency_slo_ms": 0.3}],
        demand=[{"workload": "w", "period": "2027-01", "amount": 10, "site": "a"}]))
    write_workbook(plan, tmp_path / "plan.xlsx")
    ws = load_workbook(tmp_path / "plan.xlsx", data_only=True)["Service"]
    head = [c.value for c in ws[1]]
    [row] = ws.iter_rows(min_row=2, values_only=True)
    assert row[head.index("Worst transit ms")] == 0.3
    assert row[head.index("SLO headroom ms")] == 0


def test_sheets_formulas_and_finance_formatting(finance):
    plan, path = finance
    wb = load_workbook(path)
    for name in ("Summary", "Plan", "Commitments", "Costs", "Service", "Diagnostics",
                 "Egress", "Input settings", "Input offers", "Input demand", "Input existing"):
        assert name in wb.sheetnames
    assert wb.calculation.fullCalcOnLoad
    ws = wb["Plan"]
    head = [c.value for c in ws[1]]
    cost = ws.cell(2, head.index("Cost") + 1)
    assert cost.data_type == "f" and cost.value.startswith("=")
    assert "$" in cost.number_format
    assert ws.freeze_panes == "A2" and ws.auto_filter.ref
    for name in ("TotalCost", "DiscountedTotalCost", "HoursPerMonth", "TailPolicy"):
        assert name in wb.defined_names
    assert "Summary" in wb.defined_names["TotalCost"].attr_text
    summary = _summary(wb["Summary"])
    assert str(summary["Total cost (nominal)"][0]).startswith("=Costs!")
    assert wb["Costs"]._charts, "the Costs sheet has its stacked chart"
    assert wb["Service"].conditional_formatting, "unmet demand is highlighted"
    commit = wb["Commitments"]
    head = [c.value for c in commit[1]]
    assert commit.cell(2, head.index("Utilization") + 1).number_format == "0.0%"


DATE_TEXT = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


def test_every_sheet_prints_and_dates_are_dates(finance, tmp_path):
    # SPEC §5 v2: every sheet prints (print titles, fit to width); dates are dates — also
    # the FOCUS sheet's periods and the months of unmet demand in Diagnostics (text
    # before); the input sheets stay as read. Demand left unmet: 4 GPUs on offer, an
    # 8-GPU training replica and 10 units of inference at one unit a GPU.
    unmet = scenario(
        offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2,
                 "max_gpus": 4}],
        workloads=[{"workload": "w", "kind": "training"},
                   {"workload": "v", "kind": "inference"}],
        throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 1, "gpus_per_replica": 8},
                    {"workload": "v", "gpu": "A", "units_per_gpu": 1}],
        demand=[{"workload": "w", "period": "2027-01", "amount": 8},
                {"workload": "v", "period": "2027-01", "amount": 10, "site": "s1"}])
    plan = solve_tables(tmp_path, unmet)
    assert len(plan.unmet) > 0
    write_workbook(plan, tmp_path / "unmet.xlsx")
    for path in (finance[1], tmp_path / "unmet.xlsx"):
        wb = load_workbook(path)
        for ws in wb.worksheets:
            assert ws.print_title_rows == "$1:$1", ws.title
            assert ws.sheet_properties.pageSetUpPr.fitToPage and ws.page_setup.fitToWidth == 1
            as_text = [c.coordinate for row in ws.iter_rows() for c in row
                       if isinstance(c.value, str) and DATE_TEXT.match(c.value)]
            assert as_text == [], (ws.title, as_text[:5])
        focus = wb["FOCUS"]
        head = [c.value for c in focus[1]]
        start = focus.cell(2, head.index("ChargePeriodStart") + 1)
        assert isinstance(start.value, dt.datetime) and start.number_format == "yyyy-mm-dd"
    rows = [tuple(c.value for c in row[:3]) for row in wb["Diagnostics"].iter_rows()]
    start = rows.index(("Unmet demand", None, None)) + 2  # below its header
    months = [r[2] for r in rows[start:start + len(plan.unmet)]]
    assert all(isinstance(m, dt.datetime) for m in months), months


def test_input_sheets_hold_numbers_as_numbers_and_names_as_read(finance):
    # the input sheets as read, but a price a number at four decimals (it was text such
    # as '3'), a whole number whole; names stay text, '=1+1' too
    wb = load_workbook(finance[1])
    offers = wb["Input offers"]
    head = [c.value for c in offers[1]]
    price = offers.cell(2, head.index("usd_per_gpu_hour") + 1)
    assert price.value == 3 and price.number_format == '"$"#,##0.0000'
    assert offers.cell(2, head.index("region") + 1).value == "r1"
    workloads = wb["Input workloads"]
    names = [r[0] for r in workloads.iter_rows(min_row=2, values_only=True)]
    assert names == ["=1+1", "@SUM(A1)"]
    assert all(c.data_type == "s" for c in workloads["A"][1:])
    demand = wb["Input demand"]
    head = [c.value for c in demand[1]]
    period = [r[head.index("period")] for r in demand.iter_rows(min_row=2)]
    # a month as a date shown as one (SPEC §5 v2: dates are dates); a quarter as written
    assert [c.value for c in period] == ["2027Q1", dt.datetime(2027, 4, 1),
                                         dt.datetime(2027, 2, 1)]
    assert all(c.number_format == "yyyy-mm" for c in period[1:])
    settings = {r[0].value: r[1] for r in wb["Input settings"].iter_rows(min_row=2)}
    assert settings["start_month"].value == dt.datetime(2027, 1, 1)
    assert settings["start_month"].number_format == "yyyy-mm"
    assert settings["hours_per_month"].value == 100  # a figure as a figure
    # a blank CSV cell a blank cell, not '' as text (an outside audit: ISBLANK, COUNTA
    # and filters took it for text): the second offer has no max_gpus
    head = [c.value for c in offers[1]]
    cap = [offers.cell(r, head.index("max_gpus") + 1) for r in range(2, offers.max_row + 1)]
    assert None in [c.value for c in cap] and "" not in [c.value for c in cap]


def test_input_text_never_becomes_a_formula(finance):
    plan, path = finance
    wb = load_workbook(path)
    names = [c for ws in (wb["Plan"], wb["Input workloads"], wb["Service"])
             for row in ws.iter_rows() for c in row if c.value in ("=1+1", "@SUM(A1)")]
    assert len(names) >= 4
    assert all(c.data_type == "s" for c in names)
    costs = wb["Costs"]
    header = {c.value: c for c in costs[1]}
    assert header["=4+4"].data_type == "s" and header["m*"].data_type == "s"
    # the provider's SUMIFS criterion matches its name exactly, not as a comparison
    column = header["=4+4"].column_letter
    assert '"==4+4"' in costs[f"{column}2"].value
    assert '"=m~*"' in costs[f"{header['m*'].column_letter}2"].value


def test_scenario_name_never_becomes_a_formula(finance, tmp_path):
    # the scenario's name is its folder's: a folder named '=1+2' wrote the formula =1+2
    # into Summary!B3 (found by an outside audit of SPEC §5)
    plan, _ = finance
    named = dataclasses.replace(plan, scenario=dataclasses.replace(plan.scenario,
                                                                   name="=1+2"))
    path = tmp_path / "named.xlsx"
    write_workbook(named, path)
    summary = load_workbook(path)["Summary"]
    cell = {r[0].value: r[1] for r in summary.iter_rows(max_col=2)}["Scenario"]
    assert cell.value == "=1+2" and cell.data_type == "s"
    # the workbook's own figures beside it stay formulas
    total = {r[0].value: r[1] for r in summary.iter_rows(max_col=2)}["Total cost (nominal)"]
    assert total.data_type == "f" and total.value.startswith("=Costs!")


def test_write_is_atomic(finance, tmp_path, monkeypatch):
    plan, _ = finance
    target = tmp_path / "plan.xlsx"
    target.write_bytes(b"an earlier workbook")

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(report, "_build", broken)
    with pytest.raises(RuntimeError):
        write_workbook(plan, target)
    assert target.read_bytes() == b"an earlier workbook"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.xlsx"]


def test_cli_solve_writes_json_and_workbook(tmp_path):
    folder = write_csv(tmp_path / "scn", FINANCE)
    out = tmp_path / "out" / "plan.xlsx"
    model = tmp_path / "model.mps"
    res = CliRunner().invoke(app, ["solve", str(folder), "-o", str(out), "--json",
                                   "--export-model", str(model)])
    assert res.exit_code == 0, res.output
    import json

    data = json.loads(res.stdout)
    for key in ("status", "objective_usd", "total_cost_usd", "cost_by_term_usd", "egress_usd",
                "unmet_unit_hours", "mip_gap", "solve_seconds", "commitments", "assignments"):
        assert key in data
    assert data["status"] == "optimal"
    # provenance: the HiGHS a run's rounds replay on
    import highspy

    h = highspy.Highs()
    assert data["solver_version"] == \
        f"HiGHS {h.versionMajor()}.{h.versionMinor()}.{h.versionPatch()}"
    assert set(data["cost_by_term_usd"]) == {"spot", "on_demand", "monthly", "reserved",
                                             "build_to_order", "existing"}
    for c in data["commitments"]:
        assert {"region", "gpu", "term", "commit_months", "start_month", "gpus",
                "obligation_usd"} <= set(c)
    for a in data["assignments"]:
        assert {"month", "workload", "region", "gpu", "term", "gpus"} <= set(a)
    assert out.exists() and model.read_text().startswith("*") or "NAME" in model.read_text()
    # the model file solves to the plan's objective, its constant (the existing contract)
    # included: PuLP's MPS left it out
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(model))
    h.run()
    assert h.getLp().offset_ > 0
    assert h.getInfo().objective_function_value == pytest.approx(data["objective_usd"],
                                                                  rel=1e-4)
    # same input, same plan
    again = CliRunner().invoke(app, ["solve", str(folder), "-o", str(out), "--json"])
    second = json.loads(again.stdout)
    for key in ("objective_usd", "commitments", "assignments"):
        assert second[key] == data[key]


def test_the_commands_own_warnings_reach_the_diagnostics_sheet_and_the_json(tmp_path):
    # SPEC §5: Diagnostics holds every warning, the command's (an option that does not
    # apply) beside the scenario's (an unknown column)
    import json

    data = scenario(workloads=[{"workload": "w", "kind": "inference", "colour": "red"}])
    folder = write_csv(tmp_path / "scn", data)
    out = tmp_path / "plan.xlsx"
    res = CliRunner().invoke(app, ["solve", str(folder), "-o", str(out), "--json",
                                   "--samples", "3", "--no-baselines"])
    assert res.exit_code == 0, res.output
    said = json.loads(res.stdout)["warnings"]
    assert any("colour" in w for w in said)
    assert any("--samples applies to --stochastic only" in w for w in said)
    ws = load_workbook(out)["Diagnostics"]
    shown = [ws.cell(r, 1).value for r in range(2, 2 + len(said))]
    assert shown == said
    # a command without warnings of its own lists the scenario's alone
    res = CliRunner().invoke(app, ["solve", str(folder), "-o", str(out), "--json",
                                   "--no-baselines"])
    assert [w for w in json.loads(res.stdout)["warnings"]] == said[:1]


def test_cli_exits_3_only_when_the_solver_itself_fails(tmp_path, monkeypatch):
    # SPEC §4 v2: a valid scenario always has a plan. Branch and bound stopped by its
    # limit with no plan, or failing (HiGHS does on numbers of 10^11 and more), is not the
    # end: the decomposition's plan stands. Only a solve that ends with no plan at all is
    # exit 3, nothing written.
    from planner.solve import pipeline
    from planner.solve import whole as solve_module

    folder = write_csv(tmp_path / "scn", FINANCE)
    out = tmp_path / "plan.xlsx"
    for status, termination in (("error", "solve error"), ("no_solution", "time limit")):
        def nothing(prob, *args, status=status, termination=termination, **kwargs):
            return dict(solver="highs", status=status, termination=termination,
                        has_solution=False, objective=None, bound=None, gap=None)

        monkeypatch.setattr(solve_module, "_run", nothing)
        res = CliRunner().invoke(app, ["solve", str(folder), "-o", str(out), "--json",
                                       "--no-baselines"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["termination"] == \
            f"branch and bound: {termination}; the decomposition's plan"
    out.unlink()
    failed = pipeline.Run(None, None, solve_module.SolveResult(
        solver="highs", status="error", termination="solve error", has_solution=False,
        objective=None, bound=None, gap=None, seconds=0.0))
    monkeypatch.setattr(pipeline, "plan_scenario", lambda *args, **kwargs: failed)
    res = CliRunner().invoke(app, ["solve", str(folder), "-o", str(out)])
    assert res.exit_code == 3 and "no plan" in res.output and not out.exists(), res.output


# Two workloads, three offers of a GPU type neither has a throughput row for: six pruned
# pairs, all for the same reason.
PRUNED = scenario(
    gpus=[{"gpu": "A", "memory_gb": 80}, {"gpu": "B", "memory_gb": 80}],
    regions=[{"region": "r1", "provider": "cloud", "site": "s1"}],
    offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 3},
            *[{"region": "r1", "gpu": "B", "term": term, "usd_per_gpu_hour": 2,
               **({"commit_months": 12} if term == "reserved" else {})}
              for term in ("on_demand", "spot", "reserved")]],
    workloads=[{"workload": "w1", "kind": "training"}, {"workload": "w2", "kind": "training"}],
    throughput=[{"workload": w, "gpu": "A", "units_per_gpu": 10} for w in ("w1", "w2")],
    demand=[{"workload": w, "period": "2027-01", "amount": 10} for w in ("w1", "w2")],
)


def _diagnostics_table(ws, title: str) -> list[tuple]:
    """The rows under the Diagnostics heading starting with `title` (below its header)."""
    rows = [tuple(c.value for c in row[:3]) for row in ws.iter_rows()]
    start = next(i for i, r in enumerate(rows) if str(r[0]).startswith(title))
    return [r for r in rows[start + 2:] if r[0] is not None]


def test_diagnostics_lists_pruned_pairs_or_counts_them_per_reason(tmp_path, monkeypatch):
    plan = solve_tables(tmp_path, PRUNED)
    reason = "no throughput row for this GPU type"
    pairs = {(w, f"r1/B/{t}"): reason for w in ("w1", "w2")
             for t in ("on_demand", "spot", "reserved/12")}
    assert plan.candidates.pruned == pairs
    write_workbook(plan, tmp_path / "listed.xlsx")
    listed = _diagnostics_table(load_workbook(tmp_path / "listed.xlsx")["Diagnostics"],
                                "Pruned")
    assert sorted(listed) == sorted((w, o, r) for (w, o), r in pairs.items())
    # above the limit: one row per workload and reason, with the number of offers
    monkeypatch.setattr(report, "PRUNED_LISTED", 5)
    write_workbook(plan, tmp_path / "counted.xlsx")
    ws = load_workbook(tmp_path / "counted.xlsx")["Diagnostics"]
    counted = _diagnostics_table(ws, "Pruned")
    assert counted == [("w1", 3, reason), ("w2", 3, reason)]
    assert any("Pruned (workload, offer) pairs: 6, more than 5" in str(c.value)
               for row in ws.iter_rows() for c in row)


def test_no_number_renders_as_hashes(finance, tmp_path):
    # Recalculated in LibreOffice, every number fits its column as its format shows it
    # (a cell too narrow for its number shows ### at 100 % zoom).
    _, path = finance
    assert too_narrow(path, recalculated(path, tmp_path / "recalc")) == []
    # also demand left unmet by the billion at its penalty (Diagnostics' columns were
    # fixed at 14 characters): 20 M units a month, 4 GPUs of one unit each; the penalty
    # $1 M a unit-hour (the Input settings sheet showed $1,000,000.0000 as ###)
    plan = solve_tables(tmp_path, scenario(
        settings={"unmet_penalty_usd_per_unit_hour": 1_000_000},
        offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2,
                 "max_gpus": 4}],
        throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 1}],
        demand=[{"workload": "w", "period": "2027-01", "amount": 2e7}]))
    assert plan.totals["unmet_penalty_usd"] > 1e15
    write_workbook(plan, tmp_path / "unmet.xlsx")
    assert too_narrow(tmp_path / "unmet.xlsx",
                      recalculated(tmp_path / "unmet.xlsx", tmp_path / "recalc2")) == []
    # and demand served by the billion: formulas carry no value to size their column by
    # (Plan's GPU-hours at 12 characters showed 21,900,000,000.000 as ###; Costs' totals
    # of $102 B did not fit 18). 10-40 M units a month on 1-unit GPUs, 730 hours:
    # a 3-month reservation of 10 M GPUs and monthly contracts for the peak
    plan = solve_tables(tmp_path, scenario(
        settings={"horizon_months": 3},
        offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2},
                {"region": "r1", "gpu": "A", "term": "reserved", "usd_per_gpu_hour": 1,
                 "commit_months": 3, "upfront_usd_per_gpu": 100},
                {"region": "r1", "gpu": "A", "term": "monthly", "usd_per_gpu_hour": 1.5,
                 "commit_months": 1}],
        throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 1}],
        demand=[{"workload": "w", "period": "2027-01", "amount": 2e7},
                {"workload": "w", "period": "2027-02", "amount": 4e7},
                {"workload": "w", "period": "2027-03", "amount": 1e7}]))
    assert plan.totals["total_cost_usd"] > 5e10 and len(plan.contracts) >= 2
    write_workbook(plan, tmp_path / "served.xlsx")
    assert too_narrow(tmp_path / "served.xlsx",
                      recalculated(tmp_path / "served.xlsx", tmp_path / "recalc3")) == []


# Every kind of value a table holds, as the rows written straight into the sheet's XML
# must show it: text a reader could take for a formula, spaces kept, XML's own
# characters, a carriage return, numpy and Decimal figures, a float's last digits, NaN,
# dates, a datetime, booleans, blanks, and formulas with XML's characters.
ODD_ROWS = [
    ["=1+1", 1, 2.5, dt.date(2027, 1, 1), True, report.F('=IF(B{r}<3,"a&b","<>")')],
    ["  padded ", np.int64(7), np.float64(0.1 + 0.2), dt.datetime(2027, 2, 3, 4, 5), False,
     report.F("=B{r}*C{r}")],
    ["a & b < c > d\r\nline", Decimal("1.25"), float("nan"), None, None, None],
    ["@SUM(A1)", -3, 1e-300, dt.date(1999, 12, 31), None, report.F("=SUM(B2:B{r})")],
]


def test_rows_written_straight_read_back_as_openpyxl_cells_do(tmp_path):
    from openpyxl import Workbook

    columns = [("Text", None), ("Count", "0"), ("Figure", report.NUM),
               ("Month", report.MONTH), ("Flag", None), ("Formula", report.USD)]
    books = {}
    for edited in (False, True):
        wb = Workbook()
        sh = report.Sheet(wb, "Table", columns, notes={"Count": "a note"}, edited=edited)
        for row in ODD_ROWS:
            sh.add(list(row))
        sh.finish()
        sh.ws.cell(sh.row + 1, 1, "Total")  # a total row after the table's rows
        path = tmp_path / f"{edited}.xlsx"
        report.save_atomically(wb, path)
        books[edited] = load_workbook(path)["Table"]
    straight, cells = books[False], books[True]
    assert straight.max_row == cells.max_row == len(ODD_ROWS) + 2
    assert straight.dimensions == cells.dimensions
    for row_s, row_c in zip(straight.iter_rows(), cells.iter_rows()):
        for a, b in zip(row_s, row_c):
            assert (a.value, a.data_type, a.number_format) == \
                   (b.value, b.data_type, b.number_format), a.coordinate
    assert straight["A2"].value == "=1+1" and straight["A2"].data_type == "s"
    assert straight["A3"].value == "  padded "
    assert straight["C3"].value == pytest.approx(0.1 + 0.2)  # openpyxl writes 16 digits
    assert straight["F2"].value == '=IF(B2<3,"a&b","<>")'
    assert straight["B1"].comment.text == "a note"
    assert straight.auto_filter.ref == "A1:F5" and straight.freeze_panes == "A2"


def test_a_cell_written_into_rows_written_straight_is_refused(tmp_path):
    from openpyxl import Workbook

    wb = Workbook()
    sh = report.Sheet(wb, "Table", [("Text", None)])
    sh.add(["a"])
    sh.add(["b"])
    sh.ws.cell(2, 1, "overwritten")
    with pytest.raises(ValueError, match="row 2 has cells"):
        report.save_atomically(wb, tmp_path / "t.xlsx")
    assert not (tmp_path / "t.xlsx").exists()


def test_a_table_longer_than_a_worksheet_holds_is_refused(monkeypatch):
    # as openpyxl refuses a cell past Excel's last row: never a workbook Excel repairs
    from openpyxl import Workbook

    from planner.report import sheet_rows

    monkeypatch.setattr(sheet_rows, "EXCEL_ROWS", 3)
    sh = report.Sheet(Workbook(), "Plan", [("Text", None)])
    sh.add(["a"])
    sh.add(["b"])
    with pytest.raises(ValueError, match="the Plan sheet would have more than 3 rows"):
        sh.add(["c"])


def test_names_with_braces_stay_names_in_the_formulas(tmp_path):
    # a formula template's {r} is its row: a provider named 'p{x}}' in the Costs sheet's
    # SUMIFS criteria ended the command with an unexpected error (KeyError 'x'). Its
    # column sums to the plan's total, recalculated: 2 GPUs x 100 h x $2 on demand
    plan = solve_tables(tmp_path, scenario(
        settings={"hours_per_month": 100},
        regions=[{"region": "r1", "provider": "p{x}}", "site": "s1"}],
        workloads=[{"workload": "w{r}", "kind": "inference"}],
        throughput=[{"workload": "w{r}", "gpu": "A", "units_per_gpu": 10}],
        demand=[{"workload": "w{r}", "period": "2027-01", "amount": 20}]))
    assert plan.totals["total_cost_usd"] == pytest.approx(400)
    path = tmp_path / "braces.xlsx"
    write_workbook(plan, path)
    done = recalculated(path, tmp_path / "recalc")
    assert error_values(done) == []
    costs = load_workbook(done, data_only=True)["Costs"]
    column = [c.value for c in costs[1]].index("p{x}}") + 1
    assert costs.cell(2, column).value == pytest.approx(400)


def test_the_unmet_penalty_is_shown_nominal_and_discounted(tmp_path):
    # an outside audit could not rebuild the objective from the Summary: its "Unmet
    # penalty" was nominal, the objective discounted. One unit of w, which no GPU type
    # serves, in each of 2 months of 100 h at $1,000: $200,000 nominal; at 12 % a year,
    # 100,000 × (1 + 1.12^(-1/12)) discounted, which is the objective (no other cost)
    tables = scenario(settings={"horizon_months": 2, "hours_per_month": 100,
                                "discount_rate_annual": 0.12},
                      throughput=[],
                      demand=[{"workload": "w", "period": f"2027-0{m}", "amount": 1}
                              for m in (1, 2)])
    folder = write_csv(tmp_path / "s", tables)
    out = tmp_path / "plan.xlsx"
    res = CliRunner().invoke(app, ["solve", str(folder), "-o", str(out), "--json",
                                   "--no-baselines"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    discounted = 100_000 * (1 + 1.12 ** (-1 / 12))
    assert data["unmet_penalty_usd"] == pytest.approx(200_000)
    assert data["discounted_unmet_penalty_usd"] == pytest.approx(discounted, abs=0.01)
    assert data["objective_usd"] == pytest.approx(discounted, abs=0.01)
    s = _summary(load_workbook(out)["Summary"])
    assert s["Unmet penalty (nominal)"][0] == pytest.approx(200_000)
    assert s["Unmet penalty (discounted)"][0] == pytest.approx(discounted, abs=0.01)
    assert s["Objective (discounted, with penalty)"][0] == pytest.approx(discounted, abs=0.01)


def test_an_existing_contract_obligates_from_the_horizon_on(finance):
    # FINANCE's existing GPU from 2026-11 to 2027-02: its obligation had been all four
    # months ($480) beside $240 counted and nothing beyond (an outside audit: $240 in no
    # column). Now what is left from 2027-01: 2 months × 100 h × $1.20 (recalculated in
    # the Contracts sheet: test_libreoffice_recalculation_reconciles_with_the_solver)
    plan, _ = finance
    row = plan.contracts[plan.contracts["kind"] == "existing"].iloc[0]
    assert row["obligation_usd"] == pytest.approx(240)
    assert row["counted_payments_usd"] == pytest.approx(240)
