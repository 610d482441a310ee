"""The decomposition, round by round, within a budget.

1. bound: column generation on the master LP (planner.decompose.dual); every round's
   Lagrangian bound is valid, the best is kept. Until the LP relaxation is reached, or
   the bound's share of the budget is spent.
2. choice: each single-region workload is held to the (region, GPU type) its LP weighs
   most, and the master goes on as the LP of that choice.
3. plan: the master's commitments rounded, its arcs turned into whole replicas within
   capacity, month by month (planner.decompose.construct).
4. ascent: where the master did not reach the LP relaxation, steps up the Lagrangian
   function from the best prices so far, aimed at the plan's cost
   (planner.decompose.ascent); every step's bound is valid, the best is kept.
5. improve: pools planned again alone (fix and optimize) with what is left.

Each step advances in rounds that do not depend on the clock; the clock only decides
how many rounds are run. `Rounds` records them, and the same counts given back rebuild
the same plan on any machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from planner.budget import Budget
from planner.decompose.ascent import Ascent
from planner.decompose.blocks import Blocks
from planner.decompose.construct import construct, fill_unmet
from planner.decompose.dual import DualBound, first_prices, lagrangian
from planner.decompose.master import CommitmentPart
from planner.decompose.pricing import cheapest_arcs, pairs_by_cost
from planner.decompose.improve import CHOICES, replan_pool
from planner.decompose.primal import (
    all_pairs, choose_pairs, master_arcs, master_pairs, rounded_commitments)
from planner.model import ModelBuilder
from planner.solution import Solution

# Shares of the budget: the bound's rounds stop at BOUND_SHARE of it (200x40x24's
# master reaches 251.8 M, 0.6 % under its LP, in its 7th round, some 28 s into the
# plan's 35), the rounds of the single-region choice's LP at CHOICE_SHARE (the plan
# itself takes well under a second per hundred thousand demand cells); where the master
# did not reach the LP, the ascent takes ASCENT_SHARE (at 200x40x24 its bound rises fast
# for the first few seconds, 190 → 211 M in 4 s, then slowly: 221 M at 12 s); the
# plan's improvement takes what is left.
BOUND_SHARE = 0.85
CHOICE_SHARE = 0.9
ASCENT_SHARE = 0.1
# The ascent runs only when the bound is more than ASCENT_WORTH under the master's LP
# value, between which the LP relaxation lies (at 200x40x24 the master ends 0.4 % above
# its bound: 34 steps of the ascent gained nothing there, and left fix and optimize no
# time).
ASCENT_WORTH = 0.01


@dataclass
class Rounds:
    """Rounds of each step: ascent (steps up the Lagrangian function), bound (column
    generation), choice (the LP after holding single-region workloads to their pair),
    improve (pools planned again). Written "A+B+C+I" in the JSON and `--rounds`; an
    earlier version's "B+C+I" had no ascent (A = 0)."""

    ascent: int = 0
    bound: int = 0
    choice: int = 0
    improve: int = 0

    def __str__(self) -> str:
        return f"{self.ascent}+{self.bound}+{self.choice}+{self.improve}"

    @classmethod
    def parse(cls, text: str) -> "Rounds":
        parts = text.split("+")
        if len(parts) not in (3, 4) or not all(re.fullmatch(r"\s*\d+\s*", p) for p in parts):
            raise ValueError("rounds are written A+B+C+I (four whole numbers), "
                             f"not {text!r}")
        return cls(*([0] * (4 - len(parts))), *(int(p) for p in parts))


@dataclass
class Outcome:
    solution: Solution
    objective: float
    bound: float
    rounds: Rounds
    converged: bool  # the bound is the LP relaxation's
    termination: str


def decompose(builder: ModelBuilder, budget: Budget, rounds: Rounds | None = None,
              progress=None) -> Outcome:
    """Plan `builder`'s model by decomposition within `budget` (or exactly `rounds`)."""
    fixed = rounds is not None
    blocks = Blocks(builder)
    # a plan at first prices alone, whole replicas within capacity: it seeds the master
    # with arcs that serve the demand, and stands if no LP-guided plan does better
    prices = first_prices(blocks)
    pairs = choose_pairs(blocks, {w: pairs_by_cost(wb, blocks, prices)
                                  for w, wb in enumerate(blocks.workloads) if wb.single_region})
    started = budget.elapsed()
    greedy = construct(blocks, prices, np.array(blocks.commitments.lower),
                       cheapest_arcs(blocks, prices, pairs), pairs, sign_wanted=True)
    # time kept back after the LP for the LP-guided plan (about the greedy one's) and
    # some fix and optimize: a master round the clock would push past it is not started
    keep = 2.0 * (budget.elapsed() - started) + 0.05 * budget.seconds
    done = Rounds()
    dual = None
    if fixed or budget.left() > keep:
        dual = DualBound(blocks, prices, greedy.arcs())
        bound = dual.best
    else:  # no time for a master: the bound at first prices
        bound = lagrangian(blocks, CommitmentPart(blocks), *prices)

    def run(limit: int | None, share: float) -> int:
        until = min(share * budget.seconds, budget.seconds - keep)
        n = 0
        while not dual.converged and (limit is None or n < limit):
            if limit is None and budget.elapsed() >= until:
                break
            seconds = None if limit is not None else max(0.1, until - budget.elapsed())
            if not dual.step(seconds):
                break
            n += 1
            if progress:
                progress(dual)
        dual.master.restart()  # however the step ended: the same start for the next
        return n

    if dual is not None:
        done.bound = run(rounds.bound if fixed else None, BOUND_SHARE)
        bound = dual.best
    solved = dual is not None and done.bound > 0
    if solved:
        # hold single-region workloads to their pair, a pair at a time (two that both
        # want one pair would not fit: the default scenario's pay-as-you-go variant left
        # both training runs unmet), each time going on with the LP of the choices so far
        while True:
            pairs = master_pairs(dual)
            if not pairs or (fixed and done.choice >= rounds.choice):
                break
            dual.hold_pairs(pairs)
            left = None if not fixed else rounds.choice - done.choice
            done.choice += run(left, CHOICE_SHARE)
            if not dual.converged:
                break
        bound = max(bound, dual.best)  # the bound keeps pricing every pair: still valid
    draft = greedy
    if solved:
        guided = construct(blocks, dual.prices, rounded_commitments(dual),
                           master_arcs(dual), all_pairs(dual))
        if guided.cost() <= greedy.cost():
            draft = guided
    if not solved or (not dual.converged
                      and bound < (1.0 - ASCENT_WORTH) * dual.master_value):
        # the master did not reach the LP relaxation, and its bound is well under the
        # master's LP (the LP relaxation lies between them: all the ascent could gain):
        # the ascent, from the best prices so far and aimed at the plan
        start = dual.prices if dual is not None else prices
        ascent = Ascent(blocks, CommitmentPart(blocks), start, draft.cost())
        until = min(budget.elapsed() + ASCENT_SHARE * budget.seconds, budget.seconds)
        while not ascent.stopped:
            if (done.ascent >= rounds.ascent) if fixed else (budget.elapsed() >= until):
                break
            ascent.step()
            done.ascent += 1
        bound = max(bound, ascent.best)
    # fix and optimize: pools planned again alone, those furthest above the LP first,
    # pass after pass with a wider choice of sources each time
    limit = rounds.improve if fixed else None
    for choices in CHOICES:
        for key in _by_excess(draft, dual if solved else None):
            if (limit is not None and done.improve >= limit) or \
                    (limit is None and budget.left() <= 0.0):
                break
            m, k, pool = key
            replan_pool(draft, pool, m, k, choices)
            done.improve += 1
        draft.trim_commitments()
    fill_unmet(draft)
    solution, objective = draft.solution(), draft.cost()
    converged = solved and dual.converged
    if converged:
        termination = "LP relaxation reached"
    elif not solved:
        source = f"{done.ascent} ascent steps" if done.ascent else "first prices"
        termination = f"time limit (no LP relaxation within it: bound from {source})"
    else:
        termination = "time limit (LP relaxation not reached)"
    return Outcome(solution, objective, bound, done, converged, termination)


def _by_excess(draft, dual: DualBound | None) -> list[tuple[int, int, str]]:
    """The pools' (month, segment, pool), those whose plan costs most above the master
    LP's first (what the plan has cost there beyond the LP, when there is no LP)."""
    b = draft.b
    lp: dict[tuple, float] = {}
    if dual is not None:
        m = dual.master
        for w, site, source, month, segment, col in m.arcs:
            wb = b.workloads[w]
            x = m.column_values(col, len(site))
            used = x > 1e-12
            cost = x[used] * ((wb.price * wb.gpus_per_unit + wb.egress)[source[used]]
                              * b.hd[month[used], segment[used]])
            for mm, kk, c in zip(month[used].tolist(), segment[used].tolist(), cost.tolist()):
                lp[(mm, kk, wb.pool)] = lp.get((mm, kk, wb.pool), 0.0) + c
    excess = {key: plan.cost - lp.get(key, 0.0) for key, plan in draft.pools.items()}
    return sorted(excess, key=lambda key: (-excess[key], key))
