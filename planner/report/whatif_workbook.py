"""The what-if comparison workbook: one row per policy and demand level, their stress
tests, the break-even utilization of every commitment offer, and each variant's own Plan
and Commitments sheets. Same formula, formatting and text rules as the solve workbook."""

from __future__ import annotations

import re
from pathlib import Path

from openpyxl import Workbook
from openpyxl.chart import BarChart, Reference
from openpyxl.styles import Font

from planner.baselines import no_more_unmet, same_unmet
from planner.io.scenario import Scenario
from planner.report.cells import (
    BOLD,
    NUM,
    PCT,
    RATE,
    USD,
    F,
    Sheet,
    print_setup,
    save_atomically,
    text_cell,
    value_cell,
)
from planner.report.plan import COST_KEYS, warning_lines
from planner.report.workbook import (
    commitments_sheet,
    contracts_sheet,
    plan_sheet,
    settings_block,
)
from planner.whatif import Variant, break_even, is_payg_only


def _sheet_title(label: str, suffix: str, taken: set[str]) -> str:
    """A variant's sheet title: what Excel refuses in one (and ' ), and braces, which
    the formulas naming the sheet would read as their row's placeholder (a policy
    named 'b}{' ended the command with an unexpected error), as '_'; at most 31
    characters, unique."""
    base = re.sub(r"[\[\]:*?/\\'{}]", "_", label)[: 31 - len(suffix) - 1]
    title = f"{base} {suffix}"
    n = 2
    while title.lower() in taken:
        title = f"{base[: 31 - len(suffix) - 4]}~{n} {suffix}"
        n += 1
    taken.add(title.lower())
    return title


def write_whatif_workbook(scenario: Scenario, variants: list[Variant], path: str | Path,
                          stress_scales: tuple[float, ...], notes: list[str] = ()) -> None:
    """`notes`: the command's own warnings, on the Settings sheet after the scenario's."""
    wb = Workbook()
    wb.calculation.fullCalcOnLoad = True
    _settings_sheet(wb, scenario, variants, list(notes))
    _comparison_sheet(wb, variants, sorted(x for x in set(stress_scales) if x != 1.0))
    _break_even_sheet(wb, scenario)
    taken = {name.lower() for name in wb.sheetnames}
    for v in variants:  # each variant's own plan, contracts and commitments
        if v.plan is None:
            continue
        plans = plan_sheet(wb, v.plan, _sheet_title(v.label, "Plan", taken))
        contracts = contracts_sheet(wb, v.plan, _sheet_title(v.label, "Contracts", taken))
        commitments_sheet(wb, v.plan, plans, contracts,
                          _sheet_title(v.label, "Commitments", taken))
        wb.move_sheet(contracts.ws, offset=1)
    print_setup(wb)
    save_atomically(wb, Path(path))


def _settings_sheet(wb: Workbook, scenario: Scenario, variants: list[Variant],
                    notes: list[str]) -> None:
    """The scenario, its settings, the workload scales every row shares, its warnings
    and the command's (`notes`)."""
    info = wb.active
    info.title = "Settings"
    settings_block(wb, info, scenario.settings)
    info["A1"] = "What-if comparison"
    info["A1"].font = Font(bold=True, size=14)
    text_cell(info["A2"], f"scenario {scenario.name}, input hash {scenario.content_hash()}")
    scaled = variants[0].workload_scales if variants else {}
    if scaled:  # --scale-workload: on top of every row's demand scale
        text_cell(info["A3"], "demand also scaled by workload: " + ", ".join(
            f"{w} ×{x:g}" for w, x in sorted(scaled.items())))
    said = warning_lines(scenario, notes)
    if said:  # as solve shows them (its Diagnostics sheet)
        info["A5"] = "Warnings"
        info["A5"].font = BOLD
        for i, warning in enumerate(said, start=6):
            text_cell(info[f"A{i}"], warning)
    info.column_dimensions["A"].width = 50
    info.column_dimensions["D"].width = 24


def _stress_columns(scales: list[float]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """A column group per stress scale, with their notes: a fall in demand strands
    commitments, a rise is topped up with pay-as-you-go."""
    columns: list[tuple[str, str]] = []
    notes: dict[str, str] = {}
    for x in scales:
        columns.append((f"Stress {x:g}× total", USD))
        notes[f"Stress {x:g}× total"] = ("commitments of this policy kept, only "
                                         "pay-as-you-go re-optimised, demand scaled")
        if x < 1:
            columns.append((f"Stress {x:g}× idle committed", USD))
            notes[f"Stress {x:g}× idle committed"] = (
                "committed GPU-hours no workload uses when demand falls (stranded), at "
                "their rate, as the total counts them: inside the horizon, and under "
                "tail policy full over the rest of each term (the last month repeated)")
        else:
            columns += [(f"Stress {x:g}× pay-as-you-go", USD),
                        (f"Stress {x:g}× top-up", USD)]
            notes[f"Stress {x:g}× top-up"] = (
                "extra pay-as-you-go spend over this policy's own plan when demand rises "
                "(only where the stressed plan serves all that demand)")
        # each test's own: a sum over a fall and a rise in demand is neither's (an
        # outside audit: 800 and 2,400 unit-hours read as one 3,200)
        columns += [(f"Stress {x:g}× unmet unit-hours", NUM),
                    (f"Stress {x:g}× unmet at the penalty", USD)]
    return columns, notes


def _comparison_sheet(wb: Workbook, variants: list[Variant], scales: list[float]) -> None:
    """One row per policy and demand level: costs by term, utilization, savings against
    pay-as-you-go like for like, unmet demand, stress tests, and why a figure is not
    stated; a chart of the totals."""
    stress_columns, stress_notes = _stress_columns(scales)
    columns = [("Policy", None), ("Terms", None), ("Demand scale", "0.00"), ("Status", None),
               ("Gap", PCT), *[(t, USD) for t in COST_KEYS], ("egress", USD),
               ("Total cost", USD), ("Obligation (new)", USD), ("Beyond horizon", USD),
               ("Average utilization", PCT), ("Pay-as-you-go total", USD),
               ("Savings vs pay-as-you-go", USD), ("Savings %", PCT),
               ("Unmet unit-hours", NUM), ("Unmet at the penalty", USD), *stress_columns,
               ("Note", None)]
    sh = Sheet(wb, "Comparison", columns, notes={
        "Total cost": "= sum of the cost by term and egress (nominal, tail policy applied)",
        "Average utilization": "GPU-hours used / GPU-hours committed inside the horizon",
        "Pay-as-you-go total": "total of the cheapest pay-as-you-go-only policy at the same "
                               "demand that leaves as much demand unmet",
        **stress_notes,
        "Unmet at the penalty": "not paid: unmet_penalty_usd_per_unit_hour on the demand "
                                "left unserved (nominal)",
        "Note": "why a saving, a top-up or a stress test is not stated: a plan that leaves "
                "more or less demand unmet is not like for like; a stress test the time "
                "limit did not hold is not run; stress tests are of the base demand "
                "level only. Also where a policy's plan is another's, cheaper one that "
                "uses only offers it allows",
    }, edited=True)  # savings and notes are written once every row is there
    rows: list[tuple[Variant, int]] = []
    note: dict[int, list[str]] = {}  # row -> why a figure is not stated
    for v in variants:
        values, notes = _comparison_row(v, scales, sh.col, variants)
        r = sh.add(values)
        note[r] = notes
        if v.plan is not None:  # formulas carry no value to size their column by
            total = v.plan.totals["total_cost_usd"]
            sh.fit({"Total cost": total, "Pay-as-you-go total": total,
                    "Savings vs pay-as-you-go": -total})
        rows.append((v, r))
    _savings(sh, rows, note)
    for r, notes in note.items():
        if notes:
            text_cell(sh.ws[f"{sh.col('Note')}{r}"], "; ".join(notes))
    sh.finish()
    if rows:
        _comparison_chart(sh, scales)


def _comparison_row(v: Variant, scales: list[float], c,
                    others: list[Variant]) -> tuple[list, list[str]]:
    """A variant's row of the Comparison sheet (`c`: its columns' letters) up to its
    savings, and why any of its figures is not stated (`others`: every variant, the
    base level's among them)."""
    if v.plan is None:
        return [v.policy.name, v.policy.text, v.demand_scale, v.status], [
            f"not run: {v.note}" if v.note else
            "no plan found within its share of the time limit"]
    t = v.plan.totals
    commitments = v.plan.commitments
    available = float(commitments["available_gpu_hours"].sum())
    util = float(commitments["used_gpu_hours"].sum()) / available if available else None
    values = [v.policy.name, v.policy.text, v.demand_scale, v.status, v.plan.result.gap,
              *[t["cost_by_term_usd"][k] for k in COST_KEYS], t["egress_usd"],
              F(f"=SUM({c(COST_KEYS[0])}{{r}}:{c('egress')}{{r}})", _total(t)),
              t["obligation_usd"], t["beyond_horizon_usd"], util,
              None, None, None, t["unmet_unit_hours"], t["unmet_penalty_usd"]]
    notes = []
    if v.adopted:
        notes.append(f"the plan of {v.adopted}: cheaper than this policy's own, and "
                     "every offer it uses is allowed here")
    if scales and not v.stress:
        base = next((u.demand_scale for u in others if u.stress), None)
        notes.append("stress tests are of the base demand level's plans"
                     + (f" (×{base:g}, as 1.0 is not among the levels)"
                        if base is not None and base != 1.0 else ""))
    rough = [(x, v.stress[x].get("mip_gap")) for x in scales
             if v.stress.get(x, {}).get("rough")]
    if rough:
        notes.append("stress test at " + ", ".join(
            f"{x:g}×" + (f" (gap {gap:.1%})" if gap is not None else "") for x, gap in rough)
            + " a rough plan: the time held no plan from its LP, so its commitments may "
              "sit idle where a better plan would fill them")
    skipped = [x for x in scales if v.stress.get(x, {}).get("status") == "not_run"]
    if skipped:
        notes.append("stress test at " + ", ".join(f"{x:g}×" for x in skipped)
                     + " not run: the time limit did not hold it")
    for x in scales:
        stressed = v.stress.get(x, {})
        values.append(stressed.get("total_cost_usd"))
        if x < 1:
            values.append(stressed.get("idle_committed_usd"))
        else:
            short = not no_more_unmet(stressed.get("unmet_unit_hours") or 0,
                                      t["unmet_unit_hours"])
            if short:
                notes.append(f"top-up not stated: at {x:g}× demand its commitments with "
                             f"pay-as-you-go leave {stressed['unmet_unit_hours']:,.1f} "
                             "unit-hours unmet")
            values += [stressed.get("payg_usd"),
                       F(f"={c(f'Stress {x:g}× pay-as-you-go')}{{r}}-{c('spot')}{{r}}"
                         f"-{c('on_demand')}{{r}}", stressed["payg_usd"]
                         - t["cost_by_term_usd"]["spot"] - t["cost_by_term_usd"]["on_demand"])
                       if stressed.get("payg_usd") is not None and not short else None]
        values += [stressed.get("unmet_unit_hours"), stressed.get("unmet_penalty_usd")]
    values.append(None)  # the note, written once every row is there
    return values, notes


def _total(totals: dict) -> float:
    """A plan's total as its Comparison row's formula works it out: its costs by term
    and egress."""
    return sum(totals["cost_by_term_usd"][k] for k in COST_KEYS) + totals["egress_usd"]


def _savings(sh: Sheet, rows: list[tuple[Variant, int]], note: dict[int, list[str]]) -> None:
    """Each row's savings against the cheapest pay-as-you-go-only plan at its demand
    level that leaves as much demand unmet (like for like only, SPEC §4: either plan
    serving less makes it cheaper), as formulas; where there is none, why not."""
    c = sh.col
    payg_rows: dict[float, list[tuple[float, float, int]]] = {}  # scale -> (total, unmet, row)
    for v, r in rows:
        if v.plan is not None and is_payg_only(v.policy):
            t = v.plan.totals
            payg_rows.setdefault(v.demand_scale, []).append(
                (_total(t), t["unmet_unit_hours"], r))
    for v, r in rows:
        payg = payg_rows.get(v.demand_scale)
        if not payg or v.plan is None:
            continue
        unmet = v.plan.totals["unmet_unit_hours"]
        alike = [(total, row) for total, left, row in payg
                 if same_unmet(left, unmet)]
        if not alike:
            note[r].insert(0, f"no saving stated: it leaves {unmet:,.1f} unit-hours unmet, "
                              "pay-as-you-go only " + " or ".join(
                                  sorted({f"{left:,.1f}" for _, left, _ in payg})))
            continue
        payg_total, ref = min(alike)
        total = _total(v.plan.totals)
        saving = payg_total - total
        value_cell(sh.ws[f"{c('Pay-as-you-go total')}{r}"],
                   F(f"={c('Total cost')}{ref}", payg_total))
        value_cell(sh.ws[f"{c('Savings vs pay-as-you-go')}{r}"],
                   F(f"={c('Pay-as-you-go total')}{r}-{c('Total cost')}{r}", saving))
        value_cell(sh.ws[f"{c('Savings %')}{r}"],
                   F(f"=IF({c('Pay-as-you-go total')}{r}>0,{c('Savings vs pay-as-you-go')}{r}/"
                     f"{c('Pay-as-you-go total')}{r},0)",
                     saving / payg_total if payg_total > 0 else 0))


def _comparison_chart(sh: Sheet, scales: list[float]) -> None:
    """Total cost by policy, and at each stress scale, below the table."""
    chart = BarChart()
    chart.type, chart.title, chart.y_axis.title = "col", "Total cost by policy", "USD"
    for name in ["Total cost", *(f"Stress {x:g}× total" for x in scales)]:
        j = sh.columns.index(name) + 1
        chart.add_data(Reference(sh.ws, min_col=j, max_col=j, min_row=1, max_row=sh.row),
                       titles_from_data=True)
    chart.set_categories(Reference(sh.ws, min_col=1, max_col=1, min_row=2, max_row=sh.row))
    chart.width, chart.height = 24, 12
    sh.ws.add_chart(chart, f"A{sh.row + 3}")


def _break_even_sheet(wb: Workbook, scenario: Scenario) -> None:
    """The utilization at which each commitment offer costs what on-demand does."""
    be = Sheet(wb, "Break-even", [
        ("Offer", None), ("Region", None), ("GPU", None), ("Term", None),
        ("Commit months", "0"), ("USD per GPU-hour", RATE), ("Upfront per GPU", USD),
        ("On-demand USD per GPU-hour", RATE), ("Break-even utilization", PCT)],
        notes={"Break-even utilization": "= (months × hours × rate + upfront) / (months × "
               "hours × on-demand rate): below this utilization on-demand is cheaper"})
    b = be.col
    for row in break_even(scenario):
        formula = (F(f"=({b('Commit months')}{{r}}*HoursPerMonth*{b('USD per GPU-hour')}{{r}}"
                     f"+{b('Upfront per GPU')}{{r}})/({b('Commit months')}{{r}}*HoursPerMonth*"
                     f"{b('On-demand USD per GPU-hour')}{{r}})",
                     row["break_even_utilization"])
                   if row["on_demand_usd_per_gpu_hour"] else "no on-demand offer")
        be.add([row["offer"], row["region"], row["gpu"], row["term"], row["commit_months"],
                row["usd_per_gpu_hour"], row["upfront_usd_per_gpu"],
                row["on_demand_usd_per_gpu_hour"], formula])
    be.finish()
