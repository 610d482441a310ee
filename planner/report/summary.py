"""The finance workbook's Summary sheet (SPEC §5): the solve, the totals as formulas over
the Costs sheet beside the solver's figures, their reconciliation with the plan's parts,
the comparison plans' savings (like for like only) and the seconds per stage.
"""

from __future__ import annotations

from openpyxl.styles import Font

from planner.report.cells import (
    BOLD,
    NUM,
    PCT,
    USD,
    F,
    Sheet,
    define_name,
    shown_width,
    text_cell,
    value_cell,
)
from planner.report.economics import effective_savings
from planner.report.plan import COST_KEYS, Plan


def summary_sheet(wb, ws, plan: Plan, costs: Sheet, ps: Sheet, cs: Sheet, es: Sheet,
                  baselines: list, seconds: dict, baselines_skipped: str) -> None:
    """The Summary sheet: the solve, the totals beside the solver's, their
    reconciliation, the comparison plans' savings and the seconds per stage."""
    ws.cell(1, 1, "GPU procurement plan").font = Font(bold=True, size=14)
    r = 3
    refs: dict[str, str] = {}  # label → its value's cell
    values: dict[str, object] = {}  # label → its value (a formula's as worked out)
    for label, value, fmt, solver in _summary_rows(plan, costs, ps, cs, es):
        if label is not None:
            ws.cell(r, 1, label).font = BOLD if not label.startswith("  ") else Font()
            value_cell(ws.cell(r, 2), value, fmt)
            if solver is not None:
                value_cell(ws.cell(r, 3), solver, fmt)
            refs[label] = f"B{r}"
            values[label] = value.value if isinstance(value, F) else value
        r += 1
    r = _reconciliation(ws, r, refs, values)
    r = _savings_rows(ws, r + 1, plan, refs, values["Total cost (nominal)"], baselines,
                      baselines_skipped)  # a blank row
    if seconds:
        r += 1
        ws.cell(r, 1, "Seconds per stage").font = BOLD
        r += 1
        for k, v in seconds.items():
            ws.cell(r, 1, k)
            ws.cell(r, 2, round(v, 3)).number_format = "0.000"
            r += 1
    define_name(wb, "TotalCost", f"Summary!${refs['Total cost (nominal)'][0]}$"
          f"{refs['Total cost (nominal)'][1:]}")
    define_name(wb, "DiscountedTotalCost", f"Summary!$B${refs['Total cost (discounted)'][1:]}")
    define_name(wb, "CommitmentObligation",
          f"Summary!$B${refs['Commitment obligation (new)'][1:]}")
    _summary_widths(ws)


def _summary_rows(plan: Plan, costs: Sheet, ps: Sheet, cs: Sheet,
                  es: Sheet) -> list[tuple[str | None, object, str | None, object]]:
    """(label, value or formula, number format, the solver's figure) per row of the
    Summary's top: the solve, the totals, the reconciliation's parts (None: a blank row)."""
    s, res, t = plan.scenario, plan.result, plan.totals
    st = s.settings
    tr = costs.total_row
    savings = effective_savings(plan)
    cc = costs.col
    total = costs.totals  # the Costs sheet's totals, as its formulas work them out

    def of(kind: str, column: str) -> float:
        """The Commitments sheet's `column` summed over its lines of `kind`."""
        return sum(x[column] for x in cs.figures if x["Kind"] == kind)

    def summed(column: str) -> float:
        return sum(x[column] for x in cs.figures)

    plan_cost = float(ps.costs["cost"].sum())
    rows: list[tuple[str | None, object, str | None, object]] = [
        ("Scenario", s.name, None, None),
        ("Input hash", s.content_hash(), None, None),
        ("Horizon", f"{st.month(0)} to {st.month(st.horizon_months - 1)}", None, None),
        ("Solver", f"{res.solver} ({res.version})", None, None),
        # why a plan is not proven optimal: the time limit, the LP not reached …
        ("Status", res.status + ("" if res.status == "optimal"
                                 else f" ({res.termination})"), None, None),
        ("MIP gap", res.gap, PCT, None),
        ("Lower bound (proven)", res.bound, USD, None),
        ("Solve seconds", round(res.seconds, 3), "0.000", None),
        ("Rounds (decomposition)", res.rounds or "solved whole", None, None),
        (None, None, None, None),
        ("Totals", "Workbook (formula)", None, "Solver"),
        ("Total cost (nominal)", F(f"=Costs!{cc('Total')}{tr}", total["Total"]), USD,
         t["total_cost_usd"]),
        ("Total cost (discounted)", F(f"=Costs!{cc('Discounted total')}{tr}",
                                     total["Discounted total"]), USD,
         t["discounted_total_cost_usd"]),
    ]
    for term in COST_KEYS:
        rows.append((f"  {term}", F(f"=Costs!{cc(term)}{tr}", total[term]), USD,
                     t["cost_by_term_usd"][term]))
    rows.append(("  egress", F(f"=Costs!{cc('egress')}{tr}", total["egress"]), USD,
                 t["egress_usd"]))
    rows += [
        ("Unmet demand (unit-hours)", t["unmet_unit_hours"], NUM, None),
        ("Unmet penalty (nominal)", t["unmet_penalty_usd"], USD, None),
        # the objective is the discounted total and this (an outside audit could not
        # rebuild it from the nominal penalty beside it)
        ("Unmet penalty (discounted)", t["discounted_unmet_penalty_usd"], USD, None),
        ("  of which no offer can serve (unit-hours)", t["unservable_unit_hours"], NUM,
         None),
        ("Objective (discounted, with penalty)", t["objective_usd"], USD,
         res.objective),
        ("Commitment obligation (new)", F(f"=SUMIFS({cs.rng('Total obligation')},"
         f"{cs.rng('Kind')},\"new\")", of("new", "Total obligation")), USD,
         t["obligation_usd"]),
        ("  of which beyond the horizon", F(f"=SUMIFS({cs.rng('Beyond horizon')},"
         f"{cs.rng('Kind')},\"new\")", of("new", "Beyond horizon")), USD,
         t["beyond_horizon_usd"]),
    ]
    if st.tail_policy == "prorate":  # obligation = counted + beyond + this (audit, stop 61)
        rows.append(("  of which upfronts' share beyond the horizon (prorate: not counted)",
                     t["uncounted_upfront_usd"], USD, None))
    rows += [
        ("  months it runs after the horizon (obligation-weighted)",
         savings["lock_in_months"], "0.0", None),
        ("Existing contracts' payments after the horizon (sunk)",
         F(f"=SUMIFS({cs.rng('Beyond horizon')},{cs.rng('Kind')},\"existing\")",
           of("existing", "Beyond horizon")), USD,
         None),
        ("Effective savings rate", savings["effective_savings_rate"], PCT, None),
        ("  on-demand equivalent (horizon)", savings["on_demand_equivalent_usd"], USD, None),
        (None, None, None, None),
        ("Reconciliation", None, None, None),
        ("Plan costs (sum of Plan)", F(f"=SUM({ps.rng('Cost')})", plan_cost), USD,
         t["plan_cost_usd"]),
        # SPEC §5: the total is the Plan's costs, idle committed capacity, upfronts and
        # egress; a commitment's payments after the horizon are capacity no plan uses
        ("Idle committed capacity", F(f"=SUM({cs.rng('Idle cost in horizon')})"
                                     f"+SUM({cs.rng('Counted after horizon')})",
                                     summed("Idle cost in horizon")
                                     + summed("Counted after horizon")),
         USD,
         t["idle_committed_usd"] + t["after_horizon_usd"]),
        ("  of which idle in the horizon", F(f"=SUM({cs.rng('Idle cost in horizon')})",
                                             summed("Idle cost in horizon")),
         USD,
         t["idle_committed_usd"]),
        ("  of which payments after the horizon",
         F(f"=SUM({cs.rng('Counted after horizon')})", summed("Counted after horizon")), USD,
         t["after_horizon_usd"]),
        ("Upfronts (as counted)", F(f"=SUM({cs.rng('Counted upfront')})",
                                    summed("Counted upfront")), USD,
         t["upfront_usd"]),
        ("Egress", F(f"=SUM({es.rng('Cost')})", sum(es.costs.values())), USD,
         t["egress_usd"]),
    ]
    return rows


def _reconciliation(ws, r: int, refs: dict[str, str], values: dict[str, object]) -> int:
    """At row `r`: the reconciliation's parts summed, and their difference to the total
    (0 when the workbook's sheets hold the whole cost). The row after them."""
    parts = ("Plan costs (sum of Plan)", "Idle committed capacity", "Upfronts (as counted)",
             "Egress")
    ws.cell(r, 1, "Sum of the parts").font = BOLD
    whole = sum(values[k] for k in parts)
    value_cell(ws.cell(r, 2), F("=" + "+".join(refs[k] for k in parts), whole), USD)
    r += 1
    ws.cell(r, 1, "Difference to total (should be 0)").font = BOLD
    total = "Total cost (nominal)"
    # in cents: the float sums' last digits (-7e-9) had shown as -$0.00 (an audit)
    value_cell(ws.cell(r, 2), F(f"=ROUND(B{r - 1}-{refs[total]},2)",
                                round(whole - values[total], 2) + 0.0), USD)
    return r + 1


def _savings_rows(ws, r: int, plan: Plan, refs: dict[str, str], total: float,
                  baselines: list, baselines_skipped: str) -> int:
    """At row `r`: each comparison plan's total, saving (a formula against the plan's
    `total`, the Summary's), status, gap and unmet demand, or why there is none. The row
    after them."""
    t = plan.totals
    ws.cell(r, 1, "Savings").font = BOLD
    for j, title in enumerate(("Plan of comparison", "Its total", "Saving", "Saving %",
                               "Status", "Gap", "Unmet (unit-hours)", "Note"), start=2):
        ws.cell(r, j, title).font = BOLD
    r += 1
    if not baselines:
        ws.cell(r, 1, f"comparison plans not solved ({baselines_skipped})")
    for b in baselines:
        ws.cell(r, 1, "against")
        text_cell(ws.cell(r, 2), b["name"])
        ws.cell(r, 6, b["status"])
        if b["total_cost_usd"] is None:
            ws.cell(r, 9, "not solved (--no-baselines)" if b["status"] == "not_run"
                    else "no plan found within its share of the time limit")
            r += 1
            continue
        ws.cell(r, 3, b["total_cost_usd"]).number_format = USD
        if b["mip_gap"] is not None:
            ws.cell(r, 7, b["mip_gap"]).number_format = PCT
        ws.cell(r, 8, b["unmet_unit_hours"]).number_format = NUM
        if b["saving_usd"] is not None:
            theirs = b["total_cost_usd"]
            value_cell(ws.cell(r, 4), F(f"=C{r}-{refs['Total cost (nominal)']}",
                                        theirs - total), USD)
            value_cell(ws.cell(r, 5), F(f"=IF(C{r}>0,D{r}/C{r},0)",
                                        (theirs - total) / theirs if theirs > 0 else 0), PCT)
        else:
            ws.cell(r, 9, f"no saving stated: it leaves {b['unmet_unit_hours']:,.1f} "
                          f"unit-hours unmet, the plan {t['unmet_unit_hours']:,.1f}")
            if b.get("unmet_penalty_usd") is not None:
                # what it leaves unserved, priced apart from what it costs
                r += 1
                ws.cell(r, 2, "  its unmet demand at the penalty")
                ws.cell(r, 3, b["unmet_penalty_usd"]).number_format = USD
                ws.cell(r, 9, "not paid: the workloads' unmet_penalty_usd_per_unit_hour "
                              "on the demand it leaves unserved (nominal)")
        r += 1
    return r


def _summary_widths(ws) -> None:
    ws.column_dimensions["A"].width = 40
    ws.column_dimensions["B"].width = 30
    ws.column_dimensions["C"].width = 18
    ws.column_dimensions["D"].width = 24
    ws.column_dimensions["E"].width = 14
    # the comparison plans' totals, status, gap and unmet demand: as wide as they show
    # (an AWS-only plan leaves a billion unit-hours unmet)
    for col, least in (("C", 18), ("F", 10), ("G", 10), ("H", 20)):
        shown = [shown_width(c.value, c.number_format) for c in ws[col]
                 if c.value is not None and not str(c.value).startswith("=")]
        ws.column_dimensions[col].width = max([least, *shown])
