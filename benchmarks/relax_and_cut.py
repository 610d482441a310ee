"""Relax and cut: a bound with cover cuts from a smaller LP's prices?

The cover round (planner.solve.decompose.covered) solves the whole model's LP with its
cover cuts: a bound that sees whole replicas, but an LP of every supply cell, too slow
past 100 k cells. Any prices are a valid bound once the rows that link the model's
blocks are priced instead of enforced (the Lagrangian function), cover cuts included
(relax and cut, Lucena 2005: a cut valid for every plan in whole replicas, priced at
μ ≥ 0, only lowers the function's value at a plan). So the question this measures: do the
duals of a *restricted* LP — the whole model on fewer supply cells, with the cuts of the
whole model on its variables — price the whole model near the LP with cuts?

    L(y) = min_{x in P} (c − Σ_i y_i a_i) x + Σ_i y_i b_i(y_i)

P: the whole model's LP relaxation without its capacity rows (offer_capacity,
committed_capacity) and without the cuts, which are the rows priced (y ≤ 0 on ≤ rows,
y ≥ 0 on ≥ rows, as HiGHS signs its duals; b_i the bound the sign binds). It is
separable by pool, month and segment, so the decomposition would evaluate it in closed
form; here HiGHS solves it whole, as a measurement.

    python benchmarks/relax_and_cut.py SCENARIO [--cheapest N]

prints the LP relaxation, the LP with cuts (the reference), and for restricted models —
the cells of the LP's own solution (as if column generation had reached the LP), and
those plus each demand cell's N cheapest supply cells — their LP with cuts and the
whole model's L at their prices, with the times.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from planner.io.validate import load_scenario
from planner.model.builder import ModelBuilder, paused_gc
from planner.model.candidates import find_candidates
from planner.model.covers import cover_cuts
from planner.model.graph import Transit
from planner.solve.decompose.covered import add_cuts, relaxed_highs

PRICED = ("offer_capacity__", "committed_capacity__")  # the rows that link blocks


def _solve(h) -> float:
    import highspy

    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal, h.getModelStatus()
    return h.getInfo().objective_function_value


def _support(model, h) -> set:
    """The supply cells the LP's solution uses."""
    x = h.getSolution().col_value
    return {key for key, v in model.supply.items() if x[v.index] > 1e-9}


def _cheapest(builder, model, count: int) -> set:
    """Each demand cell's `count` cheapest supply cells at the model's own costs (a
    replica's cost spread over the units it delivers, egress added)."""
    cost = {v.name: a for v, a in model.prob.objective.items()}
    by_cell = defaultdict(list)
    for key in model.supply:
        w, r, g, src, m, k = key
        pool = builder.s.workload_by_name[w].pool_name
        replicas = model.replicas.get((pool, r, g, src, m, k))
        per_unit = cost.get(model.supply[key].name, 0.0)
        if replicas is not None:
            per_unit += cost.get(replicas.name, 0.0) / builder.per_replica(w, g, src)
        by_cell[(w, m, k)].append((per_unit, key))
    return {key for options in by_cell.values() for _, key in sorted(options)[:count]}


def _on(model, cuts):
    """The whole model's cuts on `model`'s variables (the others are 0 there)."""
    by_name = {v.name: v for v in model.prob.variables()}
    for terms, rhs in cuts:
        yield [(by_name[v.name], a) for v, a in terms if v.name in by_name], rhs


def _prices(model, h, cut_count: int) -> tuple[dict, list]:
    """The restricted LP's duals: capacity rows by name, and the cuts' in order."""
    dual = h.getSolution().row_dual
    names = list(model.prob.constraints)
    rows = {n: dual[i] for i, n in enumerate(names) if n.startswith(PRICED)}
    return rows, list(dual[len(names):len(names) + cut_count])


def lagrangian(whole, cuts, rows: dict, cut_duals: list) -> tuple[float, float, set]:
    """L at the prices `rows` (capacity rows by name) and `cut_duals`, on the whole
    model `whole`: (value, seconds, the supply cells its minimizer uses)."""
    import highspy

    started = time.perf_counter()
    h = relaxed_highs(whole.prob)
    lp = h.getLp()
    n = lp.num_col_
    cost = np.array(lp.col_cost_)
    upper = np.array(lp.row_upper_)
    names = list(whole.prob.constraints)
    y = np.zeros(len(names))
    for i, name in enumerate(names):
        if name.startswith(PRICED):
            y[i] = min(0.0, rows.get(name, 0.0))  # ≤ rows: y ≤ 0
    offset = float(np.dot(y[y < 0], upper[y < 0]))
    # c − Aᵀy over the capacity rows
    a = lp.a_matrix_
    start, index, value = np.array(a.start_), np.array(a.index_), np.array(a.value_)
    major = np.repeat(np.arange(len(start) - 1), np.diff(start))
    rowwise = a.format_ == highspy.MatrixFormat.kRowwise
    row, column = (major, index) if rowwise else (index, major)
    cost -= np.bincount(column, weights=value * y[row], minlength=n)
    # the cuts, priced: Σ_j μ α_j x_j off the costs, μ β onto the constant
    for (terms, rhs), mu in zip(cuts, cut_duals):
        mu = max(0.0, mu)  # ≥ rows: μ ≥ 0
        if mu:
            offset += mu * rhs
            for v, coef in terms:
                cost[v.index] -= mu * coef
    priced = np.array([i for i, name in enumerate(names) if name.startswith(PRICED)],
                      dtype=np.int32)
    if len(priced):
        h.changeRowsBounds(len(priced), priced, np.full(len(priced), -highspy.kHighsInf),
                           np.full(len(priced), highspy.kHighsInf))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
    value = _solve(h) + whole.prob.objective.constant + offset
    return value, time.perf_counter() - started, _support(whole, h)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--cheapest", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--scales", type=lambda t: [float(x) for x in t.split(",")],
                        default=[], help="also L at the cuts' prices times each of these")
    args = parser.parse_args(argv)
    s = load_scenario(args.scenario)
    builder = ModelBuilder(s, find_candidates(s, Transit(s)))

    t = time.perf_counter()
    whole = builder.build()
    with paused_gc():
        cuts = list(cover_cuts(builder, whole))
    constant = whole.prob.objective.constant
    print(f"whole model: {len(whole.supply):,} supply cells, {len(cuts):,} cover cuts "
          f"({time.perf_counter() - t:.1f} s to build)")

    t = time.perf_counter()
    h = relaxed_highs(whole.prob)
    lp = _solve(h) + constant
    support = _support(whole, h)
    t_lp = time.perf_counter() - t
    t = time.perf_counter()
    add_cuts(h, cuts)
    reference = _solve(h) + constant
    print(f"LP relaxation          {lp:,.0f}  ({t_lp:.1f} s)")
    print(f"LP with cover cuts     {reference:,.0f}  (+{100 * (reference / lp - 1):.3f} %, "
          f"{time.perf_counter() - t:.1f} s more from its basis)")
    # the check of L itself: at the whole LP's own prices it is that LP's value
    rows, cut_duals = _prices(whole, h, len(cuts))
    value, seconds, _ = lagrangian(whole, cuts, rows, cut_duals)
    print(f"L at its prices        {value:,.0f}  ({seconds:.1f} s)")

    cheap = _cheapest(builder, whole, args.cheapest)
    for label, cells in (("the LP's support", support),
                         (f"support + {args.cheapest} cheapest", support | cheap)):
        print(f"from {label}:")
        best = -float("inf")
        for round_ in range(args.rounds):
            t = time.perf_counter()
            restricted = builder.build(cells=cells)
            own = list(_on(restricted, cuts))
            hr = relaxed_highs(restricted.prob)
            add_cuts(hr, own)
            value_r = _solve(hr) + restricted.prob.objective.constant
            t_r = time.perf_counter() - t
            rows, cut_duals = _prices(restricted, hr, len(own))
            whole = builder.build()  # the restricted build replaced the builder's model
            cuts = list(cover_cuts(builder, whole))
            bound, seconds, used = lagrangian(whole, cuts, rows, cut_duals)
            for theta in args.scales:  # the cuts' prices scaled down: each L is valid
                scaled = [theta * mu for mu in cut_duals]
                at, _, _ = lagrangian(whole, cuts, rows, scaled)
                print(f"    cut prices × {theta}: L {at:,.0f}")
                bound = max(bound, at)
            best = max(best, bound)
            print(f"  round {round_}: {len(cells):,} cells, their LP with cuts "
                  f"{value_r:,.0f} ({t_r:.1f} s); L {bound:,.0f} ({seconds:.1f} s); "
                  f"best {100 * (best / lp - 1):+.3f} % over the LP, "
                  f"{100 * (best / reference - 1):+.3f} % against the reference")
            if used <= cells:
                break
            cells = cells | used  # the cells the prices call for: column generation


if __name__ == "__main__":
    main(sys.argv[1:])
