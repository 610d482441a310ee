"""`solve --focus` (SPEC §4 v2): the plan's charges as FOCUS 1.2 rows."""

from __future__ import annotations

import copy
import csv
import json

import pytest
from openpyxl import load_workbook
from scenarios import scenario, write_csv
from solving import solve_tables
from typer.testing import CliRunner

from planner.cli import app
from planner.report.focus import COLUMNS, focus_rows

SPEC_COLUMNS = (
    "BillingPeriodStart BillingPeriodEnd ChargePeriodStart ChargePeriodEnd ChargeCategory "
    "ChargeClass ChargeFrequency ChargeDescription ProviderName PublisherName "
    "InvoiceIssuerName RegionId RegionName ServiceCategory ServiceName SkuId "
    "PricingCategory PricingUnit PricingQuantity ListUnitPrice ListCost BilledCost "
    "EffectiveCost ConsumedQuantity ConsumedUnit CommitmentDiscountId CommitmentDiscountType "
    "CommitmentDiscountCategory CommitmentDiscountStatus BillingCurrency").split()

# hours_per_month 100, 6 months. One GPU's demand in months 0–3 (reserved: 12 × 100 × 1 +
# 500 upfront = $1,700 beats 4 × 100 × 5 = $2,000 on demand); a burst workload on spot
# ($0.5, 2 GPUs in month 0: 2 × 100 × 0.5 = $100) with 1 GB per unit-hour of egress at
# $0.01 (2 units × 100 h × 1 GB × 0.01 = $2). Total 1,700 + 100 + 2 = $1,802.
TABLES = scenario(
    settings={"hours_per_month": 100, "horizon_months": 6},
    offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 5},
            {"region": "r1", "gpu": "A", "term": "spot", "usd_per_gpu_hour": 0.5},
            {"region": "r1", "gpu": "A", "term": "reserved", "usd_per_gpu_hour": 1,
             "commit_months": 12, "upfront_usd_per_gpu": 500}],
    regions=[{"region": "r1", "provider": "p", "site": "s1", "egress_usd_per_gb": 0.01}],
    workloads=[{"workload": "w", "kind": "inference"},
               {"workload": "b", "kind": "burst", "egress_gb_per_unit_hour": 1}],
    throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 1},
                {"workload": "b", "gpu": "A", "units_per_gpu": 1}],
    demand=[*[{"workload": "w", "period": f"2027-0{m}", "amount": 1} for m in range(1, 5)],
            {"workload": "b", "period": "2027-01", "amount": 2}])


def test_charges_hand_worked(tmp_path):
    plan = solve_tables(tmp_path, TABLES)
    assert plan.totals["total_cost_usd"] == pytest.approx(1802)
    rows = focus_rows(plan)
    assert sum(r["EffectiveCost"] for r in rows) == pytest.approx(1802)
    spot = [r for r in rows if r["PricingCategory"] == "Dynamic"]
    assert len(spot) == 1 and spot[0]["EffectiveCost"] == pytest.approx(100)
    assert spot[0]["PricingQuantity"] == pytest.approx(200)
    assert spot[0]["ChargePeriodStart"] == "2027-01-01"
    assert spot[0]["ChargePeriodEnd"] == "2027-02-01"
    recurring = [r for r in rows if r["ChargeFrequency"] == "Recurring"]
    # the whole term under tail policy full: 12 monthly payments of 100 GPU-hours × $1
    assert len(recurring) == 12 and all(r["BilledCost"] == 100 for r in recurring)
    assert all(r["EffectiveCost"] == 0 for r in recurring)
    [upfront] = [r for r in rows if r["ChargeFrequency"] == "One-Time"]
    assert upfront["BilledCost"] == 500 and upfront["ChargeCategory"] == "Purchase"
    # FOCUS 1.2: a commitment bought at its agreed rate is Standard; Committed is the
    # usage it discounts (an outside audit: the purchases had been Committed)
    assert {r["PricingCategory"] for r in [*recurring, upfront]} == {"Standard"}
    # amortized: 1,700 / 1,200 GPU-hours; used in months 0–3, unused after
    used = [r for r in rows if r["CommitmentDiscountStatus"] == "Used"]
    unused = [r for r in rows if r["CommitmentDiscountStatus"] == "Unused"]
    assert {r["PricingCategory"] for r in used + unused} == {"Committed"}
    assert [r["ChargePeriodStart"][:7] for r in used] == [
        "2027-01", "2027-02", "2027-03", "2027-04"]
    assert len(unused) == 8
    assert all(r["EffectiveCost"] == pytest.approx(100 * 1700 / 1200) for r in used + unused)
    # stated to a millionth by their running sum, they add up to the contract's $1,700
    # exactly (12 × $141.666667 had made $1,700.000004), and the whole to the plan's total
    assert sum(r["EffectiveCost"] for r in used + unused) == pytest.approx(1700, abs=1e-9)
    assert sum(r["EffectiveCost"] for r in rows) == pytest.approx(1802, abs=1e-9)
    [egress] = [r for r in rows if r["PricingUnit"] == "GB"]
    assert egress["EffectiveCost"] == pytest.approx(2) and egress["PricingQuantity"] == 200


def test_focus_csv_and_sheet_from_the_command(tmp_path):
    folder = write_csv(tmp_path / "s", TABLES)
    out, focus = tmp_path / "plan.xlsx", tmp_path / "out" / "focus.csv"
    res = CliRunner().invoke(app, ["solve", str(folder), "-o", str(out), "--json",
                                   "--no-baselines", "--focus", str(focus)])
    assert res.exit_code == 0, res.output
    total = json.loads(res.stdout)["total_cost_usd"]
    with focus.open(newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == tuple(SPEC_COLUMNS) == COLUMNS
        rows = list(reader)
    assert sum(float(r["EffectiveCost"]) for r in rows) == pytest.approx(total, abs=0.01)
    for r in rows:
        assert r["ChargeCategory"] in ("Usage", "Purchase")
        assert r["ChargeClass"] == ""
        assert r["ChargeFrequency"] in ("Usage-Based", "Recurring", "One-Time")
        assert r["ServiceCategory"] in ("AI and Machine Learning", "Compute")
        assert r["PricingCategory"] in ("Standard", "Dynamic", "Committed")
        assert r["CommitmentDiscountStatus"] in ("", "Used", "Unused")
        assert r["CommitmentDiscountCategory"] in ("", "Usage")
        assert r["BillingCurrency"] == "USD"
    sheet = load_workbook(out)["FOCUS"]
    header = [c.value for c in sheet[1]]
    assert header == list(SPEC_COLUMNS)
    assert sheet.max_row == len(rows) + 1


def test_an_unwritable_focus_path_is_bad_input_before_solving(tmp_path):
    folder = write_csv(tmp_path / "s", TABLES)
    res = CliRunner().invoke(app, ["solve", str(folder), "-o", str(tmp_path / "p.xlsx"),
                                   "--focus", str(tmp_path)])
    assert res.exit_code == 2 and "is a directory" in res.output
    assert not (tmp_path / "p.xlsx").exists()


def test_an_output_over_another_or_over_the_scenario_is_bad_input(tmp_path):
    # --focus on the workbook's own path, or on one of the scenario's tables, would have
    # replaced that file (exit 0); a folder made for an output refused is removed again
    folder = write_csv(tmp_path / "s", TABLES)
    demand = (folder / "demand.csv").read_bytes()
    for focus, said in ((tmp_path / "p.xlsx", "is given for two outputs"),
                        (folder / "demand.csv", "is the scenario's own input")):
        res = CliRunner().invoke(app, ["solve", str(folder), "-o", str(tmp_path / "p.xlsx"),
                                       "--focus", str(focus)])
        assert res.exit_code == 2 and said in " ".join(res.output.split())
        assert not (tmp_path / "p.xlsx").exists()
    assert (folder / "demand.csv").read_bytes() == demand
    res = CliRunner().invoke(app, ["solve", str(folder), "-o",
                                   str(tmp_path / "new" / "deeper" / "p.xlsx"),
                                   "--focus", str(tmp_path)])
    assert res.exit_code == 2 and not (tmp_path / "new").exists()


# hours_per_month 100, 3 months, 2 GPUs of demand each month: an existing contract's GPU
# at $0 an hour serves one; for the other a 12-month build-to-order paid upfront alone
# ($0 an hour, $500 a GPU) beats on demand (3 × 100 × $5 = $1,500). Both are committed
# capacity with FOCUS charges of their own (both had none: no monthly payment).
PREPAID = scenario(
    settings={"hours_per_month": 100, "horizon_months": 3},
    offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 5},
            {"region": "r1", "gpu": "A", "term": "build_to_order", "usd_per_gpu_hour": 0,
             "commit_months": 12, "upfront_usd_per_gpu": 500}],
    throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 1}],
    demand=[{"workload": "w", "period": f"2027-0{m}", "amount": 2} for m in range(1, 4)],
    existing=[{"region": "r1", "gpu": "A", "gpus": 1, "start_month": "2027-01",
               "end_month": "2027-03", "usd_per_gpu_hour": 0}])


@pytest.mark.parametrize("policy, counted, months", [("full", 500, 12), ("prorate", 125, 3)])
def test_a_prepaid_commitment_and_a_free_contract_have_their_charges(tmp_path, policy,
                                                                     counted, months):
    # 2 GPUs of demand: the free existing GPU and one prepaid GPU. Full: the $500 upfront
    # counts, spread over the 12 months' 1,200 GPU-hours ($0.4167 an hour, 100 h used in
    # each of the 3 months, then the last month repeated); prorate: 3/12 of it, $125,
    # over the 3 months. The upfront is billed whole either way: $500, as invoiced.
    plan = solve_tables(tmp_path, scenario(**{**PREPAID, "settings": [
        *PREPAID["settings"], {"key": "tail_policy", "value": policy}]}))
    assert plan.totals["total_cost_usd"] == pytest.approx(counted)
    rows = focus_rows(plan)
    assert sum(r["EffectiveCost"] for r in rows) == pytest.approx(counted)
    [upfront] = [r for r in rows if r["ChargeFrequency"] == "One-Time"]
    assert (upfront["BilledCost"], upfront["ListUnitPrice"]) == (500, 500)
    assert not [r for r in rows if r["ChargeFrequency"] == "Recurring"]  # no payments
    new = [r for r in rows if r["CommitmentDiscountId"] == "new 2"
           or r["CommitmentDiscountType"] == "build_to_order"]
    used = [r for r in new if r["CommitmentDiscountStatus"] == "Used"]
    assert len(used) == months
    assert all(r["EffectiveCost"] == pytest.approx(counted / months) for r in used)
    existing = [r for r in rows if r["CommitmentDiscountType"] == "existing contract"]
    assert [(r["ChargePeriodStart"], r["ConsumedQuantity"], r["EffectiveCost"])
            for r in existing] == [(f"2027-0{m}-01", 100, 0) for m in range(1, 4)]



def test_an_existing_contract_of_no_gpus_bills_nothing(tmp_path):
    # existing.gpus may be 0 (a contract run down to nothing): the command wrote no
    # workbook, its FOCUS rows dividing the contract's cost by its GPUs (exit 1). It has
    # no charges, and the plan is as without it: two GPUs on the 12-month build-to-order
    # at $500 upfront each, $1,000 (on demand: 3 months × 2 GPUs × 100 h × $5 = $3,000).
    tables = scenario(**{**PREPAID, "existing": [{**PREPAID["existing"][0], "gpus": 0}]})
    folder = write_csv(tmp_path / "s", tables)
    res = CliRunner().invoke(app, ["solve", str(folder), "-o", str(tmp_path / "p.xlsx"),
                                   "--focus", str(tmp_path / "f.csv"), "--json",
                                   "--no-baselines"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["total_cost_usd"] == pytest.approx(1000)
    with (tmp_path / "f.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and not [r for r in rows if r["CommitmentDiscountType"] == "existing contract"]
    assert sum(float(r["EffectiveCost"]) for r in rows) == pytest.approx(1000)

def test_idle_gpus_of_a_rented_instance_are_paid_not_consumed(tmp_path):
    # on-demand sold in 4-GPU instances at $1: 3 GPUs of work rent one instance, paid
    # 4 × 100 h = 400 GPU-hours ($400), of which 300 consumed
    plan = solve_tables(tmp_path, scenario(
        settings={"hours_per_month": 100},
        offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 1,
                 "gpus_per_instance": 4}],
        throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 10}],
        demand=[{"workload": "w", "period": "2027-01", "amount": 30}]))
    [row] = focus_rows(plan)
    assert row["EffectiveCost"] == pytest.approx(400) == plan.totals["total_cost_usd"]
    assert row["PricingQuantity"] == pytest.approx(400)
    assert row["ConsumedQuantity"] == pytest.approx(300)


def test_input_text_in_the_csv_never_opens_as_a_formula(tmp_path):
    # an outside audit: a provider named =2+3 was written to the FOCUS CSV as it is, and
    # LibreOffice (as Excel) opened ProviderName as the formula, showing 5 (SPEC §5: text
    # from the input is never turned into a formula). It gets an apostrophe; a region
    # named -r1 too; numbers, negative ones included, stay numbers. So in `offers --format
    # csv`, a listing for people to open
    tables = copy.deepcopy(TABLES)
    tables["regions"][0]["provider"] = "=2+3"
    for table in ("regions", "offers"):
        for row in tables[table]:
            row["region"] = "-r1"
    folder = write_csv(tmp_path / "s", tables)
    focus = tmp_path / "focus.csv"
    res = CliRunner().invoke(app, ["solve", str(folder), "-o", str(tmp_path / "p.xlsx"),
                                   "--no-baselines", "--focus", str(focus)])
    assert res.exit_code == 0, res.output
    with focus.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["ProviderName"] for r in rows} == {"'=2+3"}
    assert {r["RegionId"] for r in rows} == {"'-r1"}
    assert sum(float(r["EffectiveCost"]) for r in rows) == pytest.approx(1802, abs=0.01)
    sheet = load_workbook(tmp_path / "p.xlsx")["FOCUS"]  # the workbook keeps the text
    column = [c.value for c in sheet[1]].index("ProviderName") + 1
    assert sheet.cell(2, column).value == "=2+3" and sheet.cell(2, column).data_type == "s"
    listed = CliRunner().invoke(app, ["offers", str(folder), "--format", "csv"])
    assert listed.exit_code == 0, listed.output
    offers = list(csv.DictReader(listed.stdout.splitlines()))
    assert {r["provider"] for r in offers} == {"'=2+3"} and offers[0]["region"] == "'-r1"
    assert float(offers[0]["usd_per_gpu_hour"]) == 0.5
