"""The finance workbook (SPEC §5), written with openpyxl.

Every figure that is arithmetic over other cells is a live formula: a Plan row's cost is
GPUs × hours × rate; Costs sums Plan, Commitments and Egress with SUMIFS month by month;
Summary refers to Costs and reconciles the total with the plan's parts. The solver's own
figure stands beside a formula where that helps checking. Text from the input is always
written as text, never as a formula. The file is written to a temporary name and renamed,
so a failed run leaves an earlier workbook intact.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd
from openpyxl import Workbook
from openpyxl.chart import BarChart, Reference
from openpyxl.formatting.rule import CellIsRule, FormulaRule
from openpyxl.styles import Alignment

from planner.io.parse import CellError, parse_month
from planner.io.schema import PAY_AS_YOU_GO, SETTINGS_BY_NAME, TABLES
from planner.report.cells import (
    AMBER_FILL,
    BOLD,
    DAY,
    MONTH,
    NUM,
    PCT,
    RATE,
    RED_FILL,
    USD,
    F,
    Sheet,
    criterion,
    define_name,
    fit_figures,
    formula_cell,
    in_template,
    month_date,
    print_setup,
    save_atomically,
    shown_width,
    text_cell,
)
from planner.report.economics import (
    line_economics,
    line_name,
    line_names,
    monthly_use,
    schedule_lines,
)
from planner.report.offers import shown_ms
from planner.report.plan import COST_KEYS, Plan, records, warning_lines
from planner.report.summary import summary_sheet

# Pruned (workload, offer) pairs listed one by one in Diagnostics up to this many
PRUNED_LISTED = 10_000




def write_workbook(plan: Plan, path: str | Path, baselines: list | None = None,
                   seconds: dict | None = None,
                   baselines_skipped: str = "--no-baselines", risk=None,
                   notes: list[str] = ()) -> None:
    """`baselines`: the comparison plans (planner.baselines); `baselines_skipped`: why
    there are none, when there are none; `risk`: a stochastic plan's scenarios
    (planner.stochastic.StochasticResult) for a Risk sheet; `notes`: the command's own
    warnings, on the Diagnostics sheet after the scenario's."""
    wb = _build(plan, baselines or [], seconds or {}, baselines_skipped, list(notes))
    if risk is not None:
        from planner.report.risk import risk_sheet

        risk_sheet(wb, risk)
        # what the Plan, Service and totals are of: demand nobody entered as such (an
        # outside audit read a Service demand of 8 beside an input of 10, unsaid)
        summary = wb["Summary"]
        note = summary.cell(2, 1)
        text_cell(note, f"Stochastic plan: the probability-weighted mean of "
                        f"{len(risk.scenarios)} demand scenarios under the commitment "
                        f"schedule chosen over them ({risk.chosen.name}); its expected cost "
                        f"over the scenarios, ${risk.expected_cost_usd:,.0f} (objective), "
                        f"and each scenario's are on the Risk sheet")
        note.alignment = Alignment(wrap_text=True, vertical="top")
        summary.merge_cells("A2:C2")  # (D2 holds a setting: wrapped across A to C)
        summary.row_dimensions[2].height = 15 * (1 + len(note.value) // 70)
        print_setup(wb)
    save_atomically(wb, Path(path))


def _build(plan: Plan, baselines: list, seconds: dict, baselines_skipped: str,
           notes: list[str]) -> Workbook:
    s = plan.scenario
    st = s.settings
    wb = Workbook()
    summary = wb.active
    summary.title = "Summary"
    wb.calculation.fullCalcOnLoad = True

    settings_block(wb, summary, st)

    plans = plan_sheet(wb, plan)
    contracts = contracts_sheet(wb, plan)
    commitments = commitments_sheet(wb, plan, plans, contracts)
    wb.move_sheet(contracts.ws, offset=1)  # the schedule first, its contracts after
    egress = _egress_sheet(wb, plan)
    costs = _costs_sheet(wb, plan, plans, contracts, egress)
    _service_sheet(wb, plan)
    _diagnostics_sheet(wb, plan, notes)
    _focus_sheet(wb, plan)
    summary_sheet(wb, summary, plan, costs, plans, commitments, egress, baselines, seconds,
                  baselines_skipped)
    _input_sheets(wb, plan)
    print_setup(wb)
    return wb


def settings_block(wb: Workbook, ws, st) -> None:
    """Settings that formulas refer to by name, in D1:E4 of `ws`."""
    title = ws.title
    for i, (label, name, value) in enumerate((
            ("Hours per month", "HoursPerMonth", st.hours_per_month),
            ("Tail policy", "TailPolicy", st.tail_policy),
            ("Discount rate (annual)", "DiscountRate", st.discount_rate_annual),
            ("Horizon (months)", "HorizonMonths", st.horizon_months)), start=1):
        ws.cell(i, 4, label).font = BOLD
        text_cell(ws.cell(i, 5), value)
        define_name(wb, name, f"'{title}'!$E${i}")
    ws["E3"].number_format = "0.00%"  # 8.25 %, not 8.3 % (an outside audit)


def plan_sheet(wb, plan: Plan, title: str = "Plan") -> Sheet:
    sh = Sheet(wb, title, [
        ("Month", MONTH), ("Month #", "0"), ("Segment", "0"), ("Hours", NUM),
        ("Workload", None), ("Region", None), ("Provider", None), ("GPU", None),
        ("Term", None), ("Contract", None), ("GPUs", NUM), ("USD per GPU-hour", RATE),
        ("GPU-hours", NUM), ("Cost", USD), ("Solver cost", USD),
    ], notes={
        "Segment": "hours of the month in which every workload is at a fixed level "
                   "(0 = the first hours: the peaks)",
        "GPUs": "GPUs this workload uses; a pool's GPUs are shared in proportion to load, "
                "as are the paid, idle GPUs of a part-used whole instance",
        "Contract": "pay-as-you-go offer, or the commitment / existing contract drawn on",
        "Cost": "= GPUs × hours × rate; committed rows are part of the commitment's payment",
    })
    st = plan.scenario.settings
    line = line_names(plan)  # renewals are one line of the Commitments sheet
    for a in records(plan.assignments):
        gpu_hours = a.gpus * a.hours
        sh.add([month_date(st, int(a.month)), int(a.month), int(a.segment), a.hours,
                a.workload, a.region,
                a.provider, a.gpu, a.term, line.get(a.contract, a.contract), a.gpus,
                a.usd_per_gpu_hour,
                F(f"={sh.col('GPUs')}{{r}}*{sh.col('Hours')}{{r}}", gpu_hours),
                F(f"={sh.col('GPU-hours')}{{r}}*{sh.col('USD per GPU-hour')}{{r}}",
                  gpu_hours * a.usd_per_gpu_hour),
                a.cost_usd])
    if len(plan.assignments):
        a = plan.assignments
        sh.fit({"GPU-hours": (a["gpus"] * a["hours"]).max(), "Cost": a["cost_usd"].max()})
    sh.costs = _plan_costs(plan, line)
    sh.finish()
    return sh


def _plan_costs(plan: Plan, line: dict[str, str]) -> pd.DataFrame:
    """The Plan sheet's rows as its formulas work them out (GPU-hours, cost), with the
    cells the SUMIFS over it match (month, term, provider, contract as listed: `line`,
    contract -> its line's name): what other sheets' formulas add up."""
    a = plan.assignments
    gpu_hours = a["gpus"] * a["hours"]
    return pd.DataFrame({
        "month": a["month"].astype(int), "term": a["term"], "provider": a["provider"],
        "contract": a["contract"].map(lambda c: line.get(c, c)),
        "gpu_hours": gpu_hours, "cost": gpu_hours * a["usd_per_gpu_hour"]})


def contracts_sheet(wb, plan: Plan, title: str = "Contracts") -> Sheet:
    """Every contract, one row each — what each month's commitment payments are summed
    from (the Costs sheet) — and the line of the Commitments sheet it belongs to."""
    st = plan.scenario.settings
    sh = Sheet(wb, title, [
        ("Contract", None), ("Line", None), ("Kind", None), ("Region", None),
        ("Provider", None), ("GPU", None), ("Term", None), ("Commit months", "0"),
        ("Start month", MONTH), ("End month", MONTH), ("Start #", "0"), ("End #", "0"),
        ("GPUs", "0"), ("USD per GPU-hour", RATE), ("Monthly payment", USD),
        ("Upfront per GPU", USD), ("Upfront", USD), ("Total obligation", USD),
        ("Months in horizon", "0"), ("Beyond horizon", USD), ("Counted payments", USD),
        ("Counted after horizon", USD), ("Counted upfront", USD), ("Counted cost", USD),
        ("Available GPU-hours", NUM),
    ], keep=True, notes={
        "Line": "the line of the Commitments sheet (renewals of one offer are one line)",
        "Kind": "new: to sign; existing: already signed (sunk cost)",
        "Start #": "month index from the start of the horizon (0 = first month)",
        "Total obligation": "monthly payment × months from start to end + upfront, whatever "
                            "the tail policy (an existing contract begun before the horizon: "
                            "from the horizon's start; the months before are paid)",
        "Beyond horizon": "payments for months after the horizon (existing contracts too: "
                          "owed, though sunk)",
        "Counted after horizon": "of the counted payments, those for months after the "
                                 "horizon (tail policy full, new commitments)",
        "Counted cost": "what the plan's total counts: the whole obligation under tail policy "
                        "full; under prorate only the months inside the horizon (existing "
                        "contracts: months inside the horizon)",
        "Available GPU-hours": "GPUs × months in horizon × hours per month",
    })
    c = sh.col
    offers = plan.scenario.offer_by_key
    line = line_names(plan)
    for k in records(plan.contracts):
        upfront_per_gpu = offers[k.offer].upfront_usd_per_gpu if k.kind == "new" else 0.0
        inside = sum(1 for m in st.months if k.start <= m <= k.end)
        x = _contract_figures(k, upfront_per_gpu, inside, st)
        span = f"({c('End #')}{{r}}-{c('Start #')}{{r}}+1)"
        if k.kind == "existing":
            counted = F(f"={c('Monthly payment')}{{r}}*{c('Months in horizon')}{{r}}",
                        x["Counted payments"])
            counted_upfront = 0.0
        else:
            counted = F(f'=IF(TailPolicy="full",{c("Monthly payment")}{{r}}*{span},'
                        f'{c("Monthly payment")}{{r}}*{c("Months in horizon")}{{r}})',
                        x["Counted payments"])
            counted_upfront = F(f'=IF(TailPolicy="full",{c("Upfront")}{{r}},'
                                f'{c("Upfront")}{{r}}*{c("Months in horizon")}{{r}}/'
                                f'{c("Commit months")}{{r}})', x["Counted upfront"])
        sh.add([
            k.contract, line[k.contract], k.kind, k.region, k.provider, k.gpu, k.term,
            int(k.commit_months), month_date(st, int(k.start)), month_date(st, int(k.end)),
            int(k.start), int(k.end), int(k.gpus), k.usd_per_gpu_hour,
            F(f"={c('GPUs')}{{r}}*HoursPerMonth*{c('USD per GPU-hour')}{{r}}",
              x["Monthly payment"]),
            upfront_per_gpu,
            F(f"={c('GPUs')}{{r}}*{c('Upfront per GPU')}{{r}}", x["Upfront"]),
            # (an existing contract begun before the horizon: from its start on)
            F(f"={c('Monthly payment')}{{r}}*MAX(0,{c('End #')}{{r}}-MAX(0,{c('Start #')}{{r}})"
              f"+1)+{c('Upfront')}{{r}}", x["Total obligation"]),
            inside,
            F(f"={c('Monthly payment')}{{r}}*MAX(0,{c('End #')}{{r}}-HorizonMonths+1)",
              x["Beyond horizon"]),
            counted,
            F(f'=IF(TailPolicy="full",{c("Beyond horizon")}{{r}},0)' if k.kind == "new"
              else "=0", x["Counted after horizon"]),
            counted_upfront,
            F(f"={c('Counted payments')}{{r}}+{c('Counted upfront')}{{r}}",
              x["Counted cost"]),
            F(f"={c('GPUs')}{{r}}*{c('Months in horizon')}{{r}}*HoursPerMonth",
              x["Available GPU-hours"]),
        ])
        # no money figure of a contract is more than its obligation
        sh.fit({name: k.obligation_usd for name, fmt in zip(sh.columns, sh.formats)
                if fmt == USD})
        sh.fit({"Available GPU-hours": int(k.gpus) * inside * st.hours_per_month})
    sh.finish()
    return sh


# the Contracts sheet's figures each line of the Commitments sheet sums
SUMMED = ("Upfront", "Total obligation", "Beyond horizon", "Counted payments",
          "Counted after horizon", "Counted upfront", "Available GPU-hours")


def _contract_figures(k, upfront_per_gpu: float, inside: int, st) -> dict[str, float]:
    """The figures of contract `k`'s row of the Contracts sheet that are formulas, worked
    out as its formulas work them out (their saved values): `inside` its months in the
    horizon."""
    hours, gpus = st.hours_per_month, int(k.gpus)
    start, end = int(k.start), int(k.end)
    full = st.tail_policy == "full"
    monthly = gpus * hours * k.usd_per_gpu_hour
    upfront = gpus * upfront_per_gpu
    beyond = monthly * max(0, end - st.horizon_months + 1)
    if k.kind == "existing":
        counted, counted_upfront, after = monthly * inside, 0.0, 0.0
    else:
        counted = monthly * ((end - start + 1) if full else inside)
        counted_upfront = upfront if full else upfront * inside / int(k.commit_months)
        after = beyond if full else 0.0
    return {
        "Monthly payment": monthly, "Upfront": upfront,
        "Total obligation": monthly * max(0, end - max(0, start) + 1) + upfront,
        "Beyond horizon": beyond, "Counted payments": counted,
        "Counted after horizon": after, "Counted upfront": counted_upfront,
        "Counted cost": counted + counted_upfront,
        "Available GPU-hours": gpus * inside * hours,
    }


def commitments_sheet(wb, plan: Plan, plans: Sheet, contracts: Sheet,
                      title: str = "Commitments") -> Sheet:
    """What to sign, one line per contract — contiguous renewals of one offer on one
    line, whatever GPUs each signs — its money summed from the Contracts sheet, with its
    economics (planner.report.economics)."""
    st = plan.scenario.settings
    sh = Sheet(wb, title, [
        ("Contract", None), ("Kind", None), ("Region", None), ("Provider", None),
        ("GPU", None), ("Term", None), ("Commit months", "0"), ("Contracts", "0"),
        ("Start month", MONTH), ("End month", MONTH), ("Start #", "0"), ("End #", "0"),
        ("GPUs", "0"), ("GPU-months", "0"), ("USD per GPU-hour", RATE),
        ("Monthly payment", USD), ("Upfront", USD), ("Total obligation", USD),
        ("Months in horizon", "0"), ("Beyond horizon", USD), ("Counted payments", USD),
        ("Counted after horizon", USD), ("Counted upfront", USD), ("Counted cost", USD),
        ("Used GPU-hours", NUM),
        ("Available GPU-hours", NUM), ("Utilization in horizon", PCT), ("Used cost", USD),
        ("Idle cost in horizon", USD), ("Utilization", PCT), ("Idle cost", USD),
        ("Monthly saving", USD), ("Break-even month", "0"),
    ], keep=True, notes={
        "Kind": "new: to sign; existing: already signed (sunk cost)",
        "Contracts": "contracts on this line (each on the Contracts sheet): contiguous "
                     "contracts of one offer (a term renewed as it ends) are one line, "
                     "whatever GPUs each signs",
        "Start #": "month index from the start of the horizon (0 = first month)",
        "GPUs": "the most GPUs the line holds in any month",
        "GPU-months": "GPUs × months, summed over the line's contracts",
        "Monthly payment": "payments ÷ months from start to end: the average where the "
                           "line's GPUs change from month to month",
        "Total obligation": "its contracts' monthly payments × their months + upfronts, "
                            "whatever the tail policy",
        "Beyond horizon": "payments for months after the horizon",
        "Counted cost": "what the plan's total counts: the whole obligation under tail policy "
                        "full; under prorate only the months inside the horizon (existing "
                        "contracts: months inside the horizon)",
        "Utilization in horizon": "GPU-hours the plan uses / GPU-hours available inside "
                                  "the horizon",
        "Counted after horizon": "of the counted payments, those for months after the "
                                 "horizon (tail policy full): no Plan row uses them, so the "
                                 "Summary's idle committed capacity holds them "
                                 "(Utilization assumes the forecast's last month goes on)",
        "Idle cost in horizon": "counted payments inside the horizon not used by any "
                                "workload",
        "Utilization": "GPU-hours used / GPU-hours committed over the whole term, as the "
                       "JSON's utilization (an existing contract: from the horizon's "
                       "start); pooled use goes to the contract that ends soonest first; "
                       "after the horizon the forecast's last month is assumed to repeat, "
                       "drawn from the contracts still running",
        "Idle cost": "GPU-hours unused over the whole term × the hourly rate, as the "
                     "JSON's idle_usd",
        "Monthly saving": "per month of the term: the same use at its cheapest "
                          "pay-as-you-go sources offered that month, within the room the "
                          "plan leaves them (an instance's GPUs paid in full), minus the "
                          "monthly payment (net of idle GPUs, before the upfront); blank: "
                          "no pay-as-you-go source has room for that use",
        "Break-even month": "month of the term (from 1) at which the cumulative saving "
                            "covers the upfront payments made so far; blank: never, "
                            "or an existing contract (signed before the horizon)",
    })
    c = sh.col
    pc, kc = plans, contracts
    use = monthly_use(plan)
    # the Contracts rows' and the Plan's figures the SUMIFS below add up, by line
    by_line: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in kc.figures:
        for column in SUMMED:
            by_line[row["Line"]][column] += float(row[column])
    used = pc.costs.groupby("contract")[["gpu_hours", "cost"]].sum()
    for line in schedule_lines(plan):
        k, last = line[0], line[-1]
        name = line_name(line)
        e = line_economics(plan, line, use)
        inside = sum(1 for m in st.months if k.start <= m <= last.end)
        x = by_line[name]

        def summed(column: str) -> F:
            return F(f"=SUMIFS({kc.rng(column)},{kc.rng('Line')},{c('Contract')}{{r}})",
                     x[column])

        gpu_months = sum(int(y.gpus) * (int(y.end) - int(y.start) + 1) for y in line)
        used_hours, used_cost = ((float(used.at[name, "gpu_hours"]),
                                  float(used.at[name, "cost"])) if name in used.index
                                 else (0.0, 0.0))
        sh.add([
            name, k.kind, k.region, k.provider, k.gpu, k.term,
            int(k.commit_months), len(line), month_date(st, int(k.start)),
            month_date(st, int(last.end)), int(k.start), int(last.end), int(e["peak_gpus"]),
            gpu_months, k.usd_per_gpu_hour,
            F(f"={c('GPU-months')}{{r}}*HoursPerMonth*{c('USD per GPU-hour')}{{r}}/"
              f"({c('End #')}{{r}}-{c('Start #')}{{r}}+1)",
              gpu_months * st.hours_per_month * k.usd_per_gpu_hour
              / (int(last.end) - int(k.start) + 1)),
            summed("Upfront"), summed("Total obligation"), inside, summed("Beyond horizon"),
            summed("Counted payments"), summed("Counted after horizon"),
            summed("Counted upfront"),
            F(f"={c('Counted payments')}{{r}}+{c('Counted upfront')}{{r}}",
              x["Counted payments"] + x["Counted upfront"]),
            F(f"=SUMIFS({pc.rng('GPU-hours')},{pc.rng('Contract')},{c('Contract')}{{r}})",
              used_hours),
            summed("Available GPU-hours"),
            F(f"=IF({c('Available GPU-hours')}{{r}}>0,{c('Used GPU-hours')}{{r}}/"
              f"{c('Available GPU-hours')}{{r}},0)",
              used_hours / x["Available GPU-hours"] if x["Available GPU-hours"] > 0 else 0),
            F(f"=SUMIFS({pc.rng('Cost')},{pc.rng('Contract')},{c('Contract')}{{r}})",
              used_cost),
            F(f"={c('Counted payments')}{{r}}-{c('Counted after horizon')}{{r}}"
              f"-{c('Used cost')}{{r}}",
              x["Counted payments"] - x["Counted after horizon"] - used_cost),
            e["utilization"], e["idle_usd"], e["monthly_saving_usd"], e["break_even_month"],
        ])
        # no money figure of a line is more than its contracts' obligations
        sh.fit({name: sum(x.obligation_usd for x in line)
                for name, fmt in zip(sh.columns, sh.formats) if fmt == USD})
        sh.fit({name: sum(int(x.gpus) * sum(1 for m in st.months if x.start <= m <= x.end)
                          for x in line) * st.hours_per_month
                for name in ("Used GPU-hours", "Available GPU-hours")})
    if sh.row >= 2:
        for name in ("Utilization in horizon", "Utilization"):
            util = f"{c(name)}2:{c(name)}{sh.row}"
            sh.ws.conditional_formatting.add(util, CellIsRule(
                operator="lessThan", formula=["0.4"], fill=AMBER_FILL))
    sh.finish()
    return sh


def _egress_sheet(wb, plan: Plan) -> Sheet:
    sh = Sheet(wb, "Egress", [
        ("Month", MONTH), ("Month #", "0"), ("Segment", "0"), ("Workload", None),
        ("Region", None), ("Provider", None), ("GB", NUM), ("USD per GB", RATE), ("Cost", USD),
    ])
    st = plan.scenario.settings
    regions = plan.scenario.region_by_name
    # each row's cost as its formula works it out, by month and provider (what the Costs
    # sheet and the Summary sum; a table of its own rows could hold millions)
    sh.costs = defaultdict(float)
    for e in records(plan.egress):
        cost = e.gb * regions[e.region].egress_usd_per_gb
        sh.costs[(int(e.month), e.provider)] += cost
        sh.add([month_date(st, int(e.month)), int(e.month), int(e.segment), e.workload,
                e.region,
                e.provider, e.gb, regions[e.region].egress_usd_per_gb,
                F(f"={sh.col('GB')}{{r}}*{sh.col('USD per GB')}{{r}}", cost)])
    sh.finish()
    return sh


def _costs_sheet(wb, plan: Plan, ps: Sheet, cs: Sheet, es: Sheet) -> Sheet:
    s = plan.scenario
    st = s.settings
    providers = sorted({r.provider for r in s.regions})
    last_month = max([st.horizon_months - 1, *plan.commitments["end"].astype(int).tolist()])
    term_cols = [(t, USD) for t in COST_KEYS]
    sh = Sheet(wb, "Costs", [
        ("Month", MONTH), ("Month #", "0"), ("In horizon", None), *term_cols,
        ("egress", USD), ("Total", USD), ("Discount factor", "0.0000"),
        ("Discounted total", USD), ("", None),
        *[(f"{p}", USD) for p in providers], ("Total by provider", USD),
    ], keep=True, notes={
        "Month #": "month index from the start of the horizon",
        "In horizon": "months after the horizon carry commitment payments only, counted "
                      "under tail policy full",
        "Discount factor": "(1 + annual rate)^(−month/12)",
    })
    c = sh.col
    first = None
    x = _MonthCosts(plan, ps, cs, es)
    for m in range(0, last_month + 1):
        inside = m < st.horizon_months
        row = [month_date(st, m), m, "yes" if inside else "no"]
        for term in COST_KEYS:
            if term in PAY_AS_YOU_GO:
                row.append(F(f"=SUMIFS({ps.rng('Cost')},{ps.rng('Month #')},$B{{r}},"
                             f"{ps.rng('Term')},\"{term}\")", x.plan[(m, term)]))
            else:
                row.append(F(_commitment_formula(cs, f'"{term}"', "Term"),
                             x.committed(m, "Term", term)))
        row.append(F(f"=SUMIFS({es.rng('Cost')},{es.rng('Month #')},$B{{r}})",
                     x.egress[m]))
        total = sum(f.value for f in row[3:])  # the terms' and egress
        factor = (1 + st.discount_rate_annual) ** (-m / 12)
        row.append(F(f"=SUM({c(COST_KEYS[0])}{{r}}:{c('egress')}{{r}})", total))
        row.append(F("=(1+DiscountRate)^(-$B{r}/12)", factor))
        row.append(F(f"={c('Total')}{{r}}*{c('Discount factor')}{{r}}", total * factor))
        row.append(None)
        for p in providers:
            name = in_template(criterion(p))  # inside an F, whose {r} is its row
            payg = "+".join(
                f"SUMIFS({ps.rng('Cost')},{ps.rng('Month #')},$B{{r}},"
                f"{ps.rng('Provider')},{name},{ps.rng('Term')},\"{term}\")"
                for term in PAY_AS_YOU_GO)  # committed rows are paid by their contract
            commit = _commitment_formula(cs, name, "Provider")[1:]
            egress = (f"SUMIFS({es.rng('Cost')},{es.rng('Month #')},$B{{r}},"
                      f"{es.rng('Provider')},{name})")
            row.append(F(f"={payg}+{commit}+{egress}", x.by_provider(m, p)))
        by_provider = sum(f.value for f in row[-len(providers):]) if providers else 0
        row.append(F(f"=SUM({c(providers[0])}{{r}}:{c(providers[-1])}{{r}})"
                     if providers else "=0", by_provider))
        r = sh.add(row)
        first = first or r
    last = sh.row
    # no month, term or provider, nor the total row, counts more than the plan's total
    sh.fit({name: plan.totals["total_cost_usd"] for name, fmt in zip(sh.columns, sh.formats)
            if fmt == USD})
    sh.finish()
    sh.ws.auto_filter.ref = None
    total_row = last + 1
    sh.ws.cell(total_row, 1, "Total").font = BOLD
    sh.totals = {}  # column -> its total, as the total row works it out
    for name in [*COST_KEYS, "egress", "Total", "Discounted total", *providers,
                 "Total by provider"]:
        sh.totals[name] = sum(row[name] for row in sh.figures)
        cell = sh.ws.cell(total_row, sh.columns.index(name) + 1)
        formula_cell(cell, F(f"=SUM({c(name)}{first}:{c(name)}{last})", sh.totals[name]))
        cell.number_format, cell.font = USD, BOLD
    sh.total_row = total_row
    # cost per month by term, stacked, over the whole table (commitments' months after
    # the horizon included)
    chart = BarChart()
    chart.type, chart.grouping, chart.overlap = "col", "stacked", 100
    chart.title, chart.y_axis.title = "Cost per month by term", "USD"
    j0 = sh.columns.index(COST_KEYS[0]) + 1
    data = Reference(sh.ws, min_col=j0, max_col=j0 + len(COST_KEYS), min_row=1,
                     max_row=last)
    chart.add_data(data, titles_from_data=True)
    chart.set_categories(Reference(sh.ws, min_col=1, min_row=first, max_row=last))
    chart.width, chart.height = 24, 12
    sh.ws.add_chart(chart, f"A{total_row + 3}")
    return sh


class _MonthCosts:
    """What the Costs sheet's formulas come to month by month, worked out as they work
    it out: the Plan's costs by month and term (and provider), the Commitments lines'
    payments and upfronts, the Egress sheet's costs."""

    def __init__(self, plan: Plan, ps: Sheet, cs: Sheet, es: Sheet):
        st = plan.scenario.settings
        self.horizon, self.full = st.horizon_months, st.tail_policy == "full"
        costs = ps.costs.groupby(["month", "term", "provider"])["cost"].sum()
        # (month, term[, provider]) -> the Plan's cost
        self.plan: dict[tuple, float] = defaultdict(float, {
            **costs.groupby(level=["month", "term"]).sum().to_dict(), **costs.to_dict()})
        self.lines: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for x in cs.figures:  # by term and by provider
            for column in ("Term", "Provider"):
                self.lines[(column, x[column])].append(x)
        self.egress: dict[int, float] = defaultdict(float)
        self.egress_by = es.costs  # (month, provider) -> cost
        for (m, _), cost in es.costs.items():
            self.egress[m] += cost

    def committed(self, m: int, column: str, value: str) -> float:
        """_commitment_formula's value in month `m` for the lines whose `column` is
        `value`."""
        lines = self.lines.get((column, value), [])
        active = sum(x["Monthly payment"] for x in lines
                     if x["Start #"] <= m <= x["End #"]
                     and (m < self.horizon or self.full and x["Kind"] == "new"))
        return active + sum(x["Counted upfront"] for x in lines if x["Start #"] == m)

    def by_provider(self, m: int, provider: str) -> float:
        return (sum(self.plan[(m, term, provider)] for term in PAY_AS_YOU_GO)
                + self.committed(m, "Provider", provider) + self.egress_by[(m, provider)])


def _commitment_formula(cs: Sheet, value: str, column: str) -> str:
    """Commitment cost in the month of $B{r} for the Commitments rows whose `column` equals
    `value`: monthly payments of every contract active that month (after the horizon: new
    commitments only, and only under tail policy full) plus upfronts counted in their start
    month."""
    crit = f"{cs.rng(column)},{value}"
    active = (f"SUMIFS({cs.rng('Monthly payment')},{crit},{cs.rng('Start #')},\"<=\"&$B{{r}},"
              f"{cs.rng('End #')},\">=\"&$B{{r}}")
    upfront = f"SUMIFS({cs.rng('Counted upfront')},{crit},{cs.rng('Start #')},$B{{r}})"
    return (f"=IF($B{{r}}<HorizonMonths,{active}),IF(TailPolicy=\"full\","
            f"{active},{cs.rng('Kind')},\"new\"),0))+{upfront}")


def _service_sheet(wb, plan: Plan) -> None:
    s = plan.scenario
    st = s.settings
    demand = defaultdict(float)
    for d in s.demand:
        demand[(d.workload, d.month)] += d.amount
    served = defaultdict(float)
    for f in records(plan.flows):
        served[(f.workload, f.month)] += f.units * plan.candidates.segments[f.segment].share
    unmet = defaultdict(float)
    for u in records(plan.unmet):
        unmet[(u.workload, u.month)] += u.units * plan.candidates.segments[u.segment].share
    worst = defaultdict(lambda: None)
    places = defaultdict(set)
    transit = plan.candidates.transit
    for f in records(plan.flows):
        key = (f.workload, f.month)
        region = s.region_by_name[f.region]
        site = s.site_by_name[region.site]
        places[key].add(site.jurisdiction)
        if isinstance(f.site, str):
            # as its links add up (0.1 + 0.2 ms at an SLO of 0.3 had shown -0 headroom)
            ms = shown_ms(transit.latency(f.site, region.site))
            worst[key] = ms if worst[key] is None else max(worst[key], ms)
    sh = Sheet(wb, "Service", [
        ("Workload", None), ("Kind", None), ("Month", MONTH), ("Demand (average)", NUM),
        ("Served (average)", NUM), ("Unmet (average)", NUM), ("Unmet unit-hours", NUM),
        ("Worst transit ms", NUM), ("SLO ms", NUM), ("SLO headroom ms", NUM),
        ("Jurisdictions used", None),
    ], notes={
        "Demand (average)": "average level over the month, in the workload's own unit",
        "Worst transit ms": "largest transit latency from a demand site to a serving region",
        "SLO headroom ms": "= SLO − worst transit latency",
    })
    c = sh.col
    for w in s.workloads:
        for m in st.months:
            key = (w.workload, m)
            if key not in demand:
                continue
            slo = w.latency_slo_ms
            # (a blank SLO is None, or NaN, which is written as a blank cell)
            headroom = ("" if slo is None or slo != slo or worst[key] is None
                        else slo - worst[key])
            sh.add([
                w.workload, w.kind, month_date(st, m), demand[key], served[key], unmet[key],
                F(f"={c('Unmet (average)')}{{r}}*HoursPerMonth",
                  unmet[key] * st.hours_per_month),
                worst[key], slo,
                F(f'=IF(OR({c("SLO ms")}{{r}}="",{c("Worst transit ms")}{{r}}=""),"",'
                  f'{c("SLO ms")}{{r}}-{c("Worst transit ms")}{{r}})', headroom),
                ", ".join(sorted(places[key])),
            ])
    if sh.row >= 2:
        n = sh.row
        sh.ws.conditional_formatting.add(
            f"{c('Unmet (average)')}2:{c('Unmet (average)')}{n}",
            CellIsRule(operator="greaterThan", formula=["0.000001"], fill=RED_FILL))
        col = c("SLO headroom ms")
        sh.ws.conditional_formatting.add(
            f"{col}2:{col}{n}",
            FormulaRule(formula=[f'AND(ISNUMBER({col}2),{col}2<0.1*{c("SLO ms")}2)'],
                        fill=AMBER_FILL))
    sh.finish()


def _diagnostics_sheet(wb, plan: Plan, notes: list[str]) -> None:
    """Every warning (the scenario's, then the command's `notes`), every unmet demand with
    its reason, the candidate counts."""
    s = plan.scenario
    ws = wb.create_sheet("Diagnostics")
    ws["A1"] = "Warnings"
    ws["A1"].font = BOLD
    r = 2
    said = warning_lines(s, notes)
    if not said:
        ws.cell(r, 1, "none")
        r += 1
    for w in said:
        text_cell(ws.cell(r, 1), w)
        r += 1
    r += 1
    ws.cell(r, 1, "Unmet demand").font = BOLD
    r += 1
    heads = ["Workload", "Site", "Month", "Segment", "Units", "Unit-hours", "Penalty",
             "Reason"]
    for j, h in enumerate(heads, start=1):
        ws.cell(r, j, h).font = BOLD
    r += 1
    if plan.unmet.empty:
        ws.cell(r, 1, "none: all demand is served")
        r += 1
    st = s.settings
    for u in records(plan.unmet):
        for j, v in enumerate([u.workload, u.site if isinstance(u.site, str) else "",
                               month_date(st, int(u.month)), int(u.segment), u.units,
                               u.unit_hours, u.penalty_usd, u.reason], start=1):
            text_cell(ws.cell(r, j), v)
        ws.cell(r, 3).number_format = MONTH
        ws.cell(r, 5).number_format = ws.cell(r, 6).number_format = NUM
        ws.cell(r, 7).number_format = USD
        r += 1
    r += 1
    ws.cell(r, 1, "Candidates").font = BOLD
    r += 1
    for k, v in plan.candidates.counts().items():
        text_cell(ws.cell(r, 1), k)
        ws.cell(r, 2, v)
        r += 1
    r += 1
    _pruned(ws, r, plan.candidates.pruned)
    for col, width in zip("ABCDEFGH", (40, 36, 40, 10, 14, 14, 14, 50)):
        # the unmet figures as wide as they show (a month of a training run left unmet
        # is billions at its penalty)
        fit_figures(ws, col, width)


def _pruned(ws, r: int, pruned: dict[tuple[str, str], str]) -> None:
    """The (workload, offer) pairs the candidates left out and why, from row `r`: every pair
    up to PRUNED_LISTED, else a count per workload and reason (1000 workloads × 1400
    offers prune a million pairs: Excel's row limit, and half the workbook's cells)."""
    if len(pruned) <= PRUNED_LISTED:
        ws.cell(r, 1, "Pruned (workload, offer) pairs").font = BOLD
        heads = ["Workload", "Offer", "Reason"]
        rows = [[w, offer, reason] for (w, offer), reason in sorted(pruned.items())]
    else:
        text_cell(ws.cell(r, 1), f"Pruned (workload, offer) pairs: {len(pruned):,}, more "
                                 f"than {PRUNED_LISTED:,}, so counted per workload and "
                                 "reason")
        ws.cell(r, 1).font = BOLD
        heads = ["Workload", "Offers pruned", "Reason"]
        count: dict[tuple[str, str], int] = defaultdict(int)
        for (w, _offer), reason in pruned.items():
            count[(w, reason)] += 1
        rows = [[w, n, reason] for (w, reason), n in sorted(count.items())]
    r += 1
    for j, h in enumerate(heads, start=1):
        ws.cell(r, j, h).font = BOLD
    for row in rows:
        r += 1
        for j, v in enumerate(row, start=1):
            text_cell(ws.cell(r, j), v)


def _focus_sheet(wb, plan: Plan) -> None:
    """The plan's charges in FOCUS 1.2 columns, as `solve --focus` writes them."""
    from planner.report.focus import COLUMNS, focus_rows

    money = ("ListCost", "BilledCost", "EffectiveCost")
    dates = {c for c in COLUMNS if c.endswith(("PeriodStart", "PeriodEnd"))}
    sh = Sheet(wb, "FOCUS", [(c, USD if c in money else RATE if c == "ListUnitPrice"
                               else NUM if c.endswith("Quantity") else DAY if c in dates
                               else None) for c in COLUMNS],
               notes={"EffectiveCost": "sums to the plan's total cost (nominal): commitments "
                                       "amortized over their GPU-hours, used and unused"})
    for row in focus_rows(plan):
        # the CSV's ISO dates as dates (SPEC §5 v2: dates are dates)
        sh.add([None if row[c] == "" else dt.date.fromisoformat(row[c]) if c in dates
                else row[c] for c in COLUMNS])
    sh.finish()


def _input_sheets(wb, plan: Plan) -> None:
    read = plan.scenario.tables_as_read
    for table in TABLES:
        if table.name not in read:
            continue
        _, columns, rows = read[table.name]
        kinds = {c.name: c for c in table.columns}
        # a figure or date column's format; the user's own columns, and text, as read
        typed = {name: kinds[name] for name in columns if name in kinds and kinds[name].type
                 in ("float", "int", "date", "month", "period")}
        # a setting's value is read as its key's type (a month, a figure …), each cell
        # in its own format
        value = columns.index("value") if table.name == "settings" and {
            "key", "value"} <= set(columns) else None
        table_rows, settings = [], []
        for cells in rows:
            values = [_as_read(cells.get(name), kinds.get(name)) for name in columns]
            setting = None
            if value is not None:
                setting = SETTINGS_BY_NAME.get(str(cells.get("key") or "").strip().lower())
                values[value] = _as_read(cells.get("value"), setting)
            table_rows.append(values)
            settings.append(setting)
        formats = [_input_format(typed[name], [v[j] for v in table_rows])
                   if name in typed else None for j, name in enumerate(columns)]
        sh = Sheet(wb, f"Input {table.name}"[:31], list(zip(columns, formats)),
                   edited=value is not None)
        for values, setting in zip(table_rows, settings):
            r = sh.add(values)
            if setting is not None and setting.type in ("date", "month", "float", "int"):
                shown = _input_format(setting, [values[value]])
                sh.ws.cell(r, value + 1).number_format = shown or "General"
                # as wide as the format shows it (a penalty of $1,000,000.0000 an
                # hour showed ### in a column sized for 1000000: an outside audit)
                sh.widths[value] = max(sh.widths[value],
                                       shown_width(values[value], shown))
        sh.finish()


def _as_read(v, column):
    """A cell of an input sheet: as read, but a number of a numeric column as a number,
    and a date or month as a date (SPEC §5 v2: dates are dates, rates show four
    decimals); what does not parse stays as it was (a quarter, say)."""
    if v == "":  # a blank CSV cell is a blank cell, not text (ISBLANK, COUNTA, filters)
        return None
    kind = None if column is None else column.type
    if kind in ("month", "period") and v is not None and str(v).strip():
        try:
            year, month = parse_month(v)
            return dt.date(year, month, 1)
        except CellError:
            pass
    if kind == "date" and isinstance(v, dt.date):
        return v.date() if isinstance(v, dt.datetime) else v
    if v is not None and not isinstance(v, (str, int, float, bool)):
        v = str(v)
    if not isinstance(v, str) or column is None or not v.strip():
        return v
    try:
        if kind in ("float", "int"):
            text = v.strip()
            # a whole number written whole stays whole: the cell reads as the file did
            return int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
        if kind == "date":
            return dt.date.fromisoformat(v.strip())
    except ValueError:
        pass
    return v


def _input_format(column, values: list) -> str | None:
    """The number format of an input column: prices per GPU-hour or GB to four decimals,
    money per GPU in dollars, counts whole, dates as dates, other figures as figures
    (as the file wrote them, where three decimals would show one of its `values` as 0:
    2e-05 GB a unit-hour)."""
    if column.type == "date":
        return DAY
    if column.type in ("month", "period"):
        return MONTH
    if column.unit in ("USD/GPU-hour", "USD/GB", "USD/unit-hour"):
        return RATE
    if column.unit.startswith("USD"):
        return USD
    if column.type == "int":
        return "0"
    tiny = any(isinstance(v, float) and 0 < abs(v) < 5e-4 for v in values)
    return None if tiny else NUM
