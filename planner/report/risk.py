"""The Risk sheet of a stochastic plan: cost per scenario under the chosen commitment
schedule, its expected cost and CVaR (as formulas over the rows), what stochastic planning
is worth (VSS) and what knowing the future would be worth (EVPI), and the distribution as
a chart."""

from __future__ import annotations

from openpyxl.chart import BarChart, Reference

from planner.report.cells import (
    BOLD,
    NUM,
    PCT,
    USD,
    F,
    Sheet,
    shown_width,
    text_cell,
    value_cell,
)
from planner.stochastic.scenarios import cvar


def risk_sheet(wb, result) -> None:
    sh = Sheet(wb, "Risk", [
        ("Scenario", None), ("Probability", "0.0000"), ("Total cost", USD),
        ("Objective (with penalty)", USD), ("Unmet (unit-hours)", NUM),
        ("Stranded commitments", USD), ("Known in advance", USD), ("Weighted", USD),
    ], notes={
        "Total cost": "money only, the schedule's commitments and this scenario's "
                      "pay-as-you-go",
        "Objective (with penalty)": "what the plan minimizes: total cost (discounted as "
                                    "the objective) + unmet demand at its penalty",
        "Stranded commitments": "commitment payments inside the horizon for GPU-hours "
                                "this scenario leaves idle (USD)",
        "Known in advance": "this scenario's objective had its demand been known: the "
                            "cheapest plan found for it alone (its own, or a candidate "
                            "schedule's re-planned there)",
        "Weighted": "= probability × objective",
    })
    rows = result.scenario_rows()
    for row in rows:
        sh.add([row["name"], row["probability"], row["total_cost_usd"],
                row["objective_usd"], row["unmet_unit_hours"], row["stranded_usd"],
                row["wait_and_see_usd"],
                F(f"={sh.col('Probability')}{{r}}*{sh.col('Objective (with penalty)')}{{r}}",
                  row["probability"] * row["objective_usd"])])
        sh.fit({"Weighted": row["objective_usd"]})  # a formula: no value to size it by
    first, last = 2, sh.row
    sh.finish()
    ws = sh.ws
    c = sh.col
    r = last + 2
    lines = [
        ("Schedule chosen", result.chosen.name, None),
        ("Expected cost (objective)", F(f"=SUM({c('Weighted')}{first}:{c('Weighted')}{last})",
                                        sum(x["probability"] * x["objective_usd"]
                                            for x in rows)), USD),
        (f"CVaR at α = {result.alpha:g} (worst {1 - result.alpha:.0%})", result.cvar_usd,
         USD),
        ("Risk aversion λ", result.risk_aversion, "0.00"),
        # (a formula over the three rows above it: what the schedule was chosen on)
        ("Expected cost + λ·CVaR", F(f"=B{r + 1}+B{r + 3}*B{r + 2}", result.objective_usd),
         USD),
        (f"Lower bound ({result.bound_from})", result.bound_usd, USD),
        ("Gap", result.gap, PCT),
        ("Value of the stochastic solution (VSS)", result.vss_usd, USD),
        ("Expected value of perfect information (EVPI)" if result.evpi_usd is not None
         else "EVPI: not known (the scenarios' own solves were cut short)",
         result.evpi_usd, USD),
    ]
    if result.out_of_sample is not None:
        check = result.out_of_sample
        lines += [
            (f"Out of sample: expected cost on {check['samples']} fresh samples",
             check["expected_cost_usd"], USD),
            ("  difference to the expected cost above", check["difference_usd"], USD),
        ]
    # column B holds the probabilities above and these figures: as wide as they show (a
    # $26 M expected cost showed ### in the probabilities' 13), the expected cost's
    # formula at its value
    shown = [shown_width(result.expected_cost_usd, USD)]
    for label, value, fmt in lines:
        ws.cell(r, 1, label).font = BOLD
        value_cell(ws.cell(r, 2), value, fmt)
        if fmt and not isinstance(value, F) and value is not None:
            shown.append(shown_width(value, fmt))
        r += 1
    ws.cell(r + 1, 1, "Candidate schedules (expected objective)").font = BOLD
    averse = result.risk_aversion > 0
    shown_c: list[float] = []
    if averse:  # what the schedule was chosen on beside it (an outside audit saw three
        # candidates at one expected cost, nothing to tell why one won)
        ws.cell(r + 1, 3, "+ λ·CVaR").font = BOLD
    r += 2
    probabilities = [s.probability for s in result.scenarios]
    for candidate in result.candidates:
        text_cell(ws.cell(r, 1), candidate.name)
        costs = candidate.costs()
        expected = float(sum(p * x for p, x in zip(probabilities, costs)))
        ws.cell(r, 2, expected).number_format = USD
        shown.append(shown_width(expected, USD))
        if averse:
            chosen_on = expected + result.risk_aversion * cvar(costs, probabilities,
                                                               result.alpha)
            ws.cell(r, 3, chosen_on).number_format = USD
            shown_c.append(shown_width(chosen_on, USD))
        r += 1
    # as wide as its longest label, scenario's or candidate's name: two candidates a step
    # apart differ only at their ends ("… +1 GPUs", "… −1 GPUs"; an outside audit read
    # them as one at 44), and a scenario's name had been cut at 50
    longest = max([len(label) for label, _, _ in lines]
                  + [len(c.name) for c in result.candidates]
                  + [len(s.name) for s in result.scenarios], default=0)
    ws.column_dimensions["A"].width = max(ws.column_dimensions["A"].width or 0, 44,
                                          min(longest + 2, 120))
    ws.column_dimensions["B"].width = max(ws.column_dimensions["B"].width or 0, *shown)
    ws.column_dimensions["C"].width = max(ws.column_dimensions["C"].width or 0, *shown_c, 0)
    chart = BarChart()
    chart.title, chart.y_axis.title = "Objective per scenario under the schedule", "USD"
    col = sh.columns.index("Objective (with penalty)") + 1
    chart.add_data(Reference(ws, min_col=col, min_row=1, max_row=last), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=first, max_row=last))
    chart.width, chart.height = 24, 12
    ws.add_chart(chart, f"A{r + 2}")
