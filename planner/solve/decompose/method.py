"""The decomposition, round by round, within a budget.

0. kinds: demand sites with the same arcs merged into one block for the bound and its
   master (planner.solve.decompose.kinds): the same LP, some five times smaller on
   generated markets; the plan is built on the workloads' own blocks. In those blocks
   a load under one replica takes a whole one (planner.solve.decompose.replicas): the
   LP of the model with those valid rows, above the plain LP relaxation.
1. bound: column generation on the master LP (planner.solve.decompose.dual); every round's
   Lagrangian bound (by workload at capacity prices, by pair at demand prices) is
   valid, the best is kept. Until the LP relaxation is reached, or
   the bound's share of the budget is spent. Where it is reached on a model of up to
   COVER_CELLS supply cells, one more round: the whole model's LP with cover cuts on
   whole replicas (planner.solve.decompose.covered), a bound above the LP relaxation.
2. choice: each single-region workload is held to the (region, GPU type) its LP weighs
   most, and the master goes on as the LP of that choice.
3. plan: the master's commitments rounded, its arcs turned into whole replicas within
   capacity, month by month (planner.solve.decompose.construct).
4. ascent: where the master did not reach the LP relaxation, steps up the Lagrangian
   function from the best prices so far, aimed at the plan's cost
   (planner.solve.decompose.ascent); every step's bound is valid, the best is kept.
   Before and after it, the best bound is lifted by whole replicas in single-region
   workloads' blocks at its prices (planner.solve.decompose.replicas): above the LP
   relaxation, still under every plan. (The master weighs those workloads' plans in
   whole replicas, `pricing.in_whole_replicas`, so its prices see them; lifting every
   point column generation evaluates instead of the best alone gained $28 k at
   200x40x24 and cost 1000x100x36 ten bound rounds, 0.8 s a point.)
5. improve: pools planned again alone (fix and optimize) with what is left; before
   the passes and after the first, commitments topped up to the plan's whole replicas
   (planner.solve.decompose.topup). Then, on a model of up to COVER_CELLS_AFTER supply
   cells too large for step 1's round, that round with what is left.

The run ends as soon as its plan is proven within the gap asked (as branch and bound
stops at its gap): the plan of a run that ends so, not by its clock, is the same on every
run (SPEC §2).

Each step advances in rounds that do not depend on the clock; the budget's work clock
(planner.solve.budget: each step's work reckoned from its counts, planner.solve.work)
decides how many rounds are run, the same on every run. `Rounds` records them, and the
same counts given back rebuild the same plan on any machine, whatever its speed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from planner.model.builder import ModelBuilder
from planner.model.solution import Solution
from planner.solve.budget import Budget
from planner.solve.decompose.ascent import Ascent
from planner.solve.decompose.blocks import Blocks
from planner.solve.decompose.construct import Draft, cheaper, construct, fill_unmet
from planner.solve.decompose.covered import covered_bound
from planner.solve.decompose.dual import DualBound, first_prices, lagrangian
from planner.solve.decompose.improve import CHOICES, POOL_GAPS, Tried, replan_pool
from planner.solve.decompose.kinds import merge
from planner.solve.decompose.master import CommitmentPart
from planner.solve.decompose.pricing import cheapest_arcs
from planner.solve.decompose.primal import (
    FreeFirst,
    all_pairs,
    choose_pairs,
    master_arcs,
    master_pairs,
    rounded_commitments,
)
from planner.solve.decompose.replicas import small_load_fill, whole_replica_gain
from planner.solve.decompose.topup import (
    onto_committed,
    payg_beside_commitments,
    proposed_top_up,
    sign_if_cheaper,
)
from planner.solve.whole import honest_gap, status_of
from planner.solve.work import (
    ascent_s,
    blocks_s,
    construct_s,
    cover_s,
    top_up_moves_s,
    top_up_s,
    top_up_scan_s,
    trim_s,
    whole_replicas_s,
)

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
# value, between which the LP relaxation lies: from near the LP it gains nothing and
# takes fix and optimize's time (at 200x40x24 with the master 0.4 % above its bound, 34
# steps gained nothing; 1.0 % above, 28 steps nothing, and fix and optimize got no
# time). Far below, it climbs from the master's duals (1000x100x36: their bound 36 %
# under, 1.35 → 1.46 B in 32 steps), but not from the capacity prices of the bound split
# by pair (there 13 % under: 33 steps gained nothing).
ASCENT_WORTH = 0.2
# Column generation stops when, over its last STALL_ROUNDS rounds, the master's value fell
# and the bound rose by less than STALL, and those rounds took STALL_SHARE of the budget
# or more: at 200x40x24 (with idle arcs leaving the master) the bound reaches 252.0 M,
# 0.5 % under the LP relaxation, in round 14, then creeps (252.2 M at round 27, 13 s
# later) - time worth more to the plan; at 50x40x24 it stays at 54.32 M for six rounds
# of 0.15 s, then reaches the LP relaxation (54.44 M) two rounds later. (The clock
# only decides when the rounds stop: replays run as many as the run did.)
STALL = 1e-4
STALL_ROUNDS = 3
STALL_SHARE = 0.02
# Supply cells up to which the bound's last round is the whole model's LP with cover
# cuts (planner.solve.decompose.covered), once the master has reached the LP relaxation:
# the default scenario (40 k cells) builds it in 1.4 s and solved it with its cuts from
# scratch in 3.5 s (its LP alone 2.6 s; the LP first, then the cuts from its basis, as
# now: 8.2 s + 1.3 s on a slower machine where the cuts from scratch took 22.8 s),
# lifting the bound from $26.30 M (the master's LP lifted by whole replicas) to
# $26.41 M ($26.43 M with a cut for each replica size in reach, not only the largest).
COVER_CELLS = 100_000
# Up to these supply cells, a model larger than COVER_CELLS has that round after fix and
# optimize, where what it left of the budget holds the round as reckoned (`cover_s`):
# 50x40x24's 312 k cells (on a slower machine, pace 2.09: 261 s, its LP 147 s, its
# 56,966 cuts 80 s from that basis, reckoned 269 s; some 100 s reckoned on the project's
# machine) lift its bound from $54.63 M to $54.78 M, with 2.3 GiB for the model in PuLP:
# at --time-limit 800 there 1.24 % where 1.52 %, the same plan. Before the plan, as for
# smaller models, the round took fix and optimize's time: at --time-limit 400 there the
# plan was $49 k dearer (1.33 %, 5,040 pools where 8,052). Larger models' whole LP does
# not converge in budgets their users give (200x40x24: 1.7 M cells, 18 min) and would
# need 10 GiB or more.
COVER_CELLS_AFTER = 400_000


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
            raise ValueError(f"rounds are written A+B+C+I (four whole numbers), not {text!r}")
        return cls(*([0] * (4 - len(parts))), *(int(p) for p in parts))


@dataclass
class Progress:
    """What a progress callback is told, after each round of any step: the step, the
    rounds done, the master LP's value (None before it, or without one), the best proven
    bound and the cheapest whole plan so far (None before the first)."""

    step: str
    rounds: Rounds
    lp: float | None
    bound: float
    plan: float | None

    def __str__(self) -> str:
        parts = [self.step]
        if self.lp is not None:
            parts.append(f"LP {_money(self.lp)}")
        if np.isfinite(self.bound):
            parts.append(f"bound {_money(self.bound)}")
        if self.plan is not None:
            parts.append(f"best plan {_money(self.plan)}")
            if np.isfinite(self.bound) and self.plan > 0:
                parts.append(f"gap {max(0.0, 1 - self.bound / self.plan):.2%}")
        return ", ".join(parts)


def _money(usd: float) -> str:
    return f"${usd / 1e6:,.2f} M" if abs(usd) >= 1e5 else f"${usd:,.0f}"


@dataclass
class Outcome:
    solution: Solution
    objective: float
    bound: float
    rounds: Rounds
    converged: bool  # the bound is the LP relaxation's
    termination: str
    prices: tuple = None  # (y_payg, y_committed) of the bound: a two-stage plan's cuts
    # the least budget in which the master's first round would have been done, and so a
    # plan made from its LP (inf: not within this one): what a solve of this size needs
    least_s: float = float("inf")


def decompose(builder: ModelBuilder, budget: Budget, rounds: Rounds | None = None,
              progress=None, gap: float = 0.0) -> Outcome:
    """Plan `builder`'s model by decomposition within `budget` (or exactly `rounds`),
    ending early once the plan is proven within `gap` (taken on what it can change)."""
    run = _Run(Blocks(builder), budget, rounds, progress,
               _Enough(gap, builder.unservable_usd))
    greedy = run.greedy()
    dual = run.master(greedy)
    solved = dual is not None and run.done.bound > 0
    draft = greedy
    lp_arcs = None  # the master LP's arcs in the workloads' own blocks
    if solved:
        run.hold_pairs(dual)
        lp_arcs = run.kinds.original_arcs(master_arcs(dual))
        commit, pairs = rounded_commitments(dual), run.kinds.original_pairs(all_pairs(dual))
        guided = construct(run.blocks, dual.prices, commit, lp_arcs, pairs, hold=True)
        run.budget.spend(construct_s(len(guided.pools)))
        if guided.held_cells:
            # where the LP leaves demand unmet, holding its capacity for the pools it gave
            # it to is not always cheaper (200x40x24's comparison plans: cheapest single
            # GPU type 13.1 % -> 1.54 % over the bound, pay-as-you-go only 2.29 % ->
            # 4.29 %): built both ways, the cheaper stands
            unheld = construct(run.blocks, dual.prices, commit, lp_arcs, pairs)
            run.budget.spend(construct_s(len(unheld.pools)))
            if cheaper(unheld.cost(), guided.cost()):
                guided = unheld
        if guided.cost() <= greedy.cost():
            draft = guided
        run.planned(draft.cost(), "LP-guided plan", dual)
    run.lift()
    if not run.enough(draft) and (
            not solved or (not dual.converged
                           and run.bound < (1.0 - ASCENT_WORTH) * dual.master_value)):
        # the master did not reach the LP relaxation, and its bound is well under the
        # master's LP (the LP relaxation lies between them: all the ascent could gain)
        run.ascend(dual.prices if dual is not None else run.prices, draft.cost())
    run.lift()
    exhausted = False  # fix and optimize ran out of pools to improve, not out of time
    if not run.enough(draft):
        exhausted = run.improve(draft, lp_arcs)
    if solved:
        run.cover_after(dual, draft)
    fill_unmet(draft)
    converged = solved and dual.converged
    if run.enough(draft):
        termination = "gap reached"
    elif converged:
        # an analyst reading a gap above the one asked, the budget not all used, learns
        # whether more time would find more (an outside audit was not told either way)
        termination = "LP relaxation reached" + (
            "; fix and optimize found nothing more to improve" if exhausted else "")
    elif not solved:
        source = f"{run.done.ascent} ascent steps" if run.done.ascent else "first prices"
        termination = f"time limit (no LP relaxation within it: bound from {source})"
    else:
        termination = "time limit (LP relaxation not reached)"
    return Outcome(draft.solution(), draft.cost(), run.proven, run.done, converged,
                   termination, run.best_prices, run.least_s())


@dataclass(frozen=True)
class _Enough:
    """The gap asked, taken on what the plan can change: `unservable` (USD) is demand no
    source can serve, in the plan's cost and its bound alike (SPEC §4 v2)."""

    gap: float = 0.0
    unservable: float = 0.0

    def reached(self, cost: float, bound: float) -> bool:
        return status_of(honest_gap(cost, bound, self.unservable), self.gap) == "optimal"


class _Run:
    """One decomposition's steps and what they share: the blocks (the workloads' own,
    for the plan; `lp`, those with demand sites of one kind merged, for the bound and
    its master: planner.solve.decompose.kinds), the clock (or the rounds to replay),
    the gap that ends it, the rounds done and the best bound so far."""

    def __init__(self, blocks: Blocks, budget: Budget, rounds: Rounds | None, progress,
                 enough: _Enough = _Enough()):
        self.blocks, self.budget, self.progress = blocks, budget, progress
        self.kinds = merge(blocks)
        self.lp = small_load_fill(self.kinds)  # small loads take whole replicas
        self.enough_at = enough
        self.fixed = rounds  # replay exactly these rounds, whatever the clock
        self.done = Rounds()
        self.prices = first_prices(blocks)
        self.bound = -np.inf
        self.best_prices = self.prices  # where the best bound was found
        self.lifted = -np.inf  # the best bound lifted by whole replicas (`lift`)
        self.covered = -np.inf  # the LP with cover cuts' bound (`cover`)
        self.lifted_at = None  # the prices it was lifted at last
        self.plan: float | None = None  # the cheapest whole plan's cost so far
        self.keep = 0.0  # seconds kept back after the master's rounds
        self.longest_pool = 0.0  # seconds of the longest pool MIP so far
        self.tried = Tried()  # fix and optimize: pools whose MIP found nothing
        self.first_round_s = np.inf  # seconds into the budget to the first master round
        self.last_round_s = 0.0  # seconds the last master round took, of either step
        budget.spend(blocks_s(blocks.cells))

    def least_s(self) -> float:
        """The least budget in which the first round of column generation would have
        been done: within BOUND_SHARE of it and the time kept back after it (`greedy`)."""
        return max(self.first_round_s / BOUND_SHARE, self.first_round_s + self.keep)

    def enough(self, draft: Draft) -> bool:
        """Whether `draft` is proven within the gap asked, so the run ends. Read at the
        same points on every run (between rounds), the plan it ends with is the same;
        a replay's counts stop it there anyway."""
        return np.isfinite(self.proven) and self.enough_at.reached(draft.running_cost(),
                                                                   self.proven)

    def raise_bound(self, bound: float, prices) -> None:
        """Keep `bound` (L at `prices`) if it is the best so far."""
        if bound > self.bound:
            self.bound, self.best_prices = bound, prices

    @property
    def proven(self) -> float:
        """The bound proven so far: the best of the Lagrangian function (`bound`, an LP
        relaxation's), of it lifted by whole replicas and of the LP with cover cuts."""
        return max(self.bound, self.lifted, self.covered)

    def lift(self) -> None:
        """The best bound lifted by whole replicas in single-region workloads' blocks
        at its prices (planner.solve.decompose.replicas), once for those prices."""
        if self.lifted_at is self.best_prices or not np.isfinite(self.bound):
            return
        gain = whole_replica_gain(self.lp, *self.best_prices)
        self.lifted = max(self.lifted, self.bound + gain)
        self.budget.spend(whole_replicas_s(self.lp.single_region_pairs))
        self.lifted_at = self.best_prices

    def tell(self, step: str, dual=None) -> None:
        """Report progress: the step, rounds, master LP, bound and best plan."""
        if self.progress:
            bound = self.proven if dual is None else max(self.proven, dual.best)
            lp = None if dual is None else dual.master_value
            self.progress(Progress(step, self.done, lp, bound, self.plan))

    def planned(self, cost: float, step: str, dual=None) -> None:
        """A whole plan costing `cost` exists (the cheapest is kept by the caller)."""
        self.plan = cost if self.plan is None else min(self.plan, cost)
        self.tell(step, dual)

    def more(self, step: str, until: float) -> bool:
        """Whether another round of `step` may start: under its count when replaying,
        else before `until` seconds into the budget."""
        if self.fixed is not None:
            return getattr(self.done, step) < getattr(self.fixed, step)
        return self.budget.elapsed() < until and not self.budget.out_of_time()

    def _share_end(self, share: float) -> float:
        """Seconds into the budget where a step given `share` of it ends, the time kept
        back after the master's rounds (`keep`) left to what follows."""
        return min(share * self.budget.seconds, self.budget.seconds - self.keep)

    def _writing_starts(self, draft: Draft) -> float:
        """Seconds into the budget by which work on `draft` ends, for it to be written in
        time: a plan larger than the time kept back for writing it foresaw stops earlier
        (default demand × 1e4: 5.9 k assignment rows, the default's 2.4 k; at 10 s the
        command took 12.4 s)."""
        return self.budget.seconds - self.budget.short_for(draft.rows())

    def _round_starts(self, step: str, until: float) -> bool:
        """Whether a master round of `step` may start (`more`); on the clock, only if a
        round as long as the last (of either step) would end before `until`, else its
        time is left to what follows (1000x100x36, 560 s: round 3 ended at 390 s after
        129 s, round 4 was cut at 476 s, 86 s lost)."""
        return self.more(step, until) and (
            self.fixed is not None or self.budget.elapsed() + self.last_round_s <= until)

    def greedy(self) -> Draft:
        """A plan at first prices alone, whole replicas within capacity: it seeds the
        master with arcs that serve the demand, and stands if no LP-guided plan does
        better. It signs commitments only where nothing else can serve; fix and
        optimize tops them up first thing (`improve`), where they displace more
        pay-as-you-go than they cost. (Signed wherever the first prices' arcs wanted
        committed GPUs, each priced as if used all its term, the default scenario's plan
        at first prices had cost $43.5 M, above its pay-as-you-go-only plan's $34.9 M;
        now $33.2 M, and $31.1 M topped up; 50x40x24 $71.9 M -> $59.8 M topped up, its
        LP $54.6 M.) The time it took sets what is kept back after the master's rounds."""
        b, prices = self.blocks, self.prices
        first = FreeFirst(b, prices)
        pairs = choose_pairs(b, first.orders(), reorder=first.reorder)
        greedy = construct(b, prices, np.array(b.commitments.lower),
                           cheapest_arcs(b, prices, pairs), pairs)
        took = construct_s(len(greedy.pools))
        self.budget.spend(took)
        # time kept back for the LP-guided plan (about the greedy one's) and some fix
        # and optimize: a master round the clock would push past it is not started
        self.keep = 2.0 * took + 0.05 * self.budget.seconds
        self.planned(greedy.cost(), "plan at first prices")
        return greedy

    def master(self, greedy: Draft) -> DualBound | None:
        """Column generation on the master until BOUND_SHARE of the budget (None: no
        time for a master; the bound at first prices)."""
        if self.fixed is None and self.budget.left() <= self.keep:
            self.raise_bound(lagrangian(self.lp, CommitmentPart(self.lp), *self.prices),
                             self.prices)
            self.budget.spend(ascent_s(self.lp.cells, self.lp.single_region_pairs))
            return None
        dual = DualBound(self.lp, self.prices, self.kinds.merged_seed(greedy.arcs()))
        self.budget.spend(dual.work_s)
        self.column_generation(dual, "bound", BOUND_SHARE)
        self.cover(dual)
        return dual

    def cover(self, dual: DualBound) -> None:
        """Where the master reached the LP relaxation of a model of up to COVER_CELLS
        supply cells, one more bound round within BOUND_SHARE of the budget: the whole
        model's LP with cover cuts (planner.solve.decompose.covered). Counted only when
        solved to its optimum (a replay then solves it to the end); not started where
        it is reckoned not to fit (`cover_s`: the default scenario at 8 s had spent the
        time of its plan's improvement on an LP stopped short)."""
        if self.blocks.cells <= COVER_CELLS:
            self._cover(dual, self._share_end(BOUND_SHARE))

    def cover_after(self, dual: DualBound, draft: Draft) -> None:
        """The same round after fix and optimize, on a model of more than COVER_CELLS
        and up to COVER_CELLS_AFTER supply cells whose plan is not yet proven within
        the gap asked: with what is left of the budget, its plan's writing apart, so
        that it never takes the plan's time."""
        if (COVER_CELLS < self.blocks.cells <= COVER_CELLS_AFTER
                and not self.enough(draft)):
            self._cover(dual, self._writing_starts(draft))

    def _cover(self, dual: DualBound, until: float) -> None:
        """The LP with cover cuts as a bound round ending `until` seconds into the budget,
        where the master reached the LP relaxation and it is reckoned to fit."""
        if not dual.converged:
            return
        if not self.more("bound", until) or (
                self.fixed is None
                and self.budget.elapsed() + cover_s(self.blocks.cells) > until):
            return
        seconds = wall = None
        if self.fixed is None:
            seconds = until - self.budget.elapsed()
            wall = self.budget.wall_until(until)
        covered = covered_bound(self.blocks.builder, seconds, wall)
        self.budget.spend(covered.work_s)
        if covered.bound is None:
            return
        self.covered = max(self.covered, covered.bound)
        self.done.bound += 1
        self.tell(f"LP with {covered.cuts:,} cover cuts", dual)

    def column_generation(self, dual: DualBound, step: str, share: float) -> None:
        """Master rounds, counted as `step`, until the LP relaxation or `share` of the
        budget; a round the clock stops is not counted."""
        until = self._share_end(share)
        seen = []  # (master value, bound, seconds into the budget) after each round
        while not dual.converged and self._round_starts(step, until):
            if self.fixed is None and _stalled(seen, STALL_SHARE * self.budget.seconds):
                break
            seconds = wall = None
            if self.fixed is None:
                seconds = max(0.1, until - self.budget.elapsed())
                # and on the wall clock where the step's share ends: an LP far slower
                # than reckoned (1000x100x36's choice LP) had taken the time its plan
                # and fix and optimize were kept (the command 649 s of 600)
                wall = self.budget.wall_until(until)
            started = self.budget.elapsed()
            stepped = dual.step(seconds, wall)
            self.budget.spend(dual.work_s)
            if not stepped:
                break
            self.last_round_s = self.budget.elapsed() - started
            seen.append((dual.master_value, dual.best, self.budget.elapsed()))
            self.first_round_s = min(self.first_round_s, seen[-1][2])
            setattr(self.done, step, getattr(self.done, step) + 1)
            self.tell(f"LP round {self.done.bound}" if step == "bound"
                      else f"LP of the choice, round {self.done.choice}", dual)
        dual.master.restart()  # however the step ended: the same start for the next
        self.raise_bound(dual.best, dual.prices)

    def hold_pairs(self, dual: DualBound) -> None:
        """Hold single-region workloads to their pair, a pair at a time (two that both
        want one pair would not fit: the default scenario's pay-as-you-go variant left
        both training runs unmet), each time going on with the LP of the choices so
        far. The bound keeps pricing every pair: it stays valid. A pair is held only
        where a round of the choice's LP follows: a replay, which counts rounds, holds
        no more than the run did (a hold the clock left without a round had ended the
        run's LP short of the choice's relaxation, the replay's not)."""
        until = self._share_end(CHOICE_SHARE)
        while True:
            pairs = master_pairs(dual)
            if not pairs or not self._round_starts("choice", until):
                break
            dual.hold_pairs(pairs)
            self.column_generation(dual, "choice", CHOICE_SHARE)
            if not dual.converged:
                break

    def ascend(self, start, plan_cost: float) -> None:
        """The ascent from `start`, aimed at the plan, for ASCENT_SHARE of the budget."""
        ascent = Ascent(self.lp, CommitmentPart(self.lp), start, plan_cost)
        until = min(self.budget.elapsed() + ASCENT_SHARE * self.budget.seconds,
                    self.budget.seconds)
        self.budget.spend(ascent_s(self.lp.cells, self.lp.single_region_pairs))
        while not ascent.stopped and self.more("ascent", until):
            ascent.step()
            self.budget.spend(ascent_s(self.lp.cells, self.lp.single_region_pairs))
            self.done.ascent += 1
            self.raise_bound(ascent.best, ascent.best_prices)
            self.tell(f"ascent step {self.done.ascent}")

    def improve(self, draft: Draft, lp: dict | None) -> bool:
        """Fix and optimize: pools planned again alone, those furthest above the master
        LP first, pass after pass with a wider choice of sources each time, then the
        widest again while a pass still finds something (a pool planned again changes
        the room the others have); all that with the pools' MIPs stopped at a loose gap
        first, then at a tight one (POOL_GAPS), until the budget ends. `lp`: the master
        LP's arcs (as `master_arcs`, in the workloads' own blocks; None: no LP).
        Commitments are topped up (`top_up`) before the passes (200x40x24, whose first
        pass the budget does not finish: $0.6 M) and after the first (the default
        scenario: $37 k; the pools' plans then show what the commitments lack). Returns
        whether every pass ran to the end, finding nothing more (not the budget, the
        rounds replayed, nor the gap reached ended it)."""
        self.top_up(draft)
        for gap in POOL_GAPS:
            for choices in CHOICES:
                found, ended = self._pass(draft, lp, choices, gap)
                if ended:
                    return False
                if (gap, choices) == (POOL_GAPS[0], CHOICES[0]):
                    self.top_up(draft)  # again, the pools' plans settled once
            while found:
                found, ended = self._pass(draft, lp, CHOICES[-1], gap)
                if ended:
                    return False
        return True

    def _pass(self, draft: Draft, lp: dict | None, choices: int,
              gap: float) -> tuple[bool, bool]:
        """One pass of fix and optimize over every pool: whether any got cheaper, and
        whether the budget (or the rounds to replay) ended it."""
        found = ended = False
        end = self._writing_starts(draft)
        for m, k, pool in _by_excess(draft, lp):
            if self.tried.pointless(m, k, pool, choices, gap):
                continue
            # a pool's MIP is bounded by nodes, not the clock: none starts unless twice
            # the longest so far still fits (1000x100x36 ran 32 s past its budget)
            if not self.more("improve", end - 2.0 * self.longest_pool):
                ended = True
                break
            saved = self._replan(draft, m, k, pool, choices, gap)
            found |= saved
            if saved and self.fixed is None and self.enough(draft):
                ended = True
                break
            if self.done.improve % 50 == 0:
                self.planned(draft.cost(), f"improving, {self.done.improve} pools")
        trimmed = draft.trim_commitments()
        self.budget.spend(trim_s(len(draft.pools)))
        if trimmed:
            self.tried.commitments_cut()
            ended |= self.fixed is None and self.enough(draft)
        self.planned(draft.cost(), f"improving, {self.done.improve} pools")
        return found, ended

    def _replan(self, draft: Draft, m: int, k: int, pool: str, choices: int,
                gap: float) -> bool:
        """One pool's MIP (planner.solve.decompose.improve), counted: whether its plan
        got cheaper."""
        saved, proved, took = replan_pool(draft, pool, m, k, choices, gap)
        self.budget.spend(took)
        self.longest_pool = max(self.longest_pool, took)
        self.done.improve += 1
        self.tried.solved(m, k, pool, choices, saved, proved)
        return saved

    def top_up(self, draft: Draft) -> None:
        """Pay-as-you-go replicas moved onto idle committed GPUs of the same region and
        GPU type, then commitments topped up where the plan pays for pay-as-you-go GPUs
        beside them (planner.solve.decompose.topup), a (region, GPU type) at a time: the
        top-up signed, the replicas moved onto it, kept only if the plan is then cheaper
        (else every pool's plan is put back). No MIP: deterministic, and reckoned by the
        pools it scans and the cells it looks at."""
        started = draft.running_cost()
        self.budget.spend(top_up_scan_s(len(draft.pools)))
        for row, (payg, payers) in payg_beside_commitments(draft).items():
            moves = onto_committed(draft, row, sorted(payers), payers)
            self.budget.spend(top_up_s(len(payg)) + top_up_moves_s(moves))
        self.budget.spend(top_up_scan_s(len(draft.pools)))
        for row, (payg, payers) in payg_beside_commitments(draft).items():
            adds = proposed_top_up(draft, row, payg)
            self.budget.spend(top_up_s(len(payg)))
            if adds:
                self.budget.spend(top_up_moves_s(sign_if_cheaper(draft, row, adds, payers)))
        if draft.running_cost() < started:
            self.tried.commitments_cut()  # the room the pools have changed
        self.planned(draft.cost(), "commitments topped up")


def _stalled(seen: list[tuple[float, float, float]], seconds: float) -> bool:
    """Whether column generation has stalled (STALL): `seen` is (master value, bound,
    seconds) after each round; `seconds` what the last STALL_ROUNDS must have taken."""
    if len(seen) <= STALL_ROUNDS:
        return False
    (value, bound, since), (last_value, last_bound, now) = seen[-1 - STALL_ROUNDS], seen[-1]
    return (now - since >= seconds and value - last_value <= STALL * abs(value)
            and last_bound - bound <= STALL * abs(last_bound))


def _by_excess(draft, lp: dict | None) -> list[tuple[int, int, str]]:
    """The pools' (month, segment, pool), those whose plan costs most above the master
    LP's arcs `lp` (workload → (site, source, month, segment, units), as
    `master_arcs`) first (what the plan has cost there beyond the LP, when there is no
    LP)."""
    b = draft.b
    cost_of: dict[tuple, float] = {}
    for w, (_, source, month, segment, x) in (lp or {}).items():
        wb = b.workloads[w]
        cost = x * ((wb.price * wb.gpus_per_unit + wb.egress)[source] * b.hd[month, segment])
        for mm, kk, c in zip(month.tolist(), segment.tolist(), cost.tolist()):
            cost_of[(mm, kk, wb.pool)] = cost_of.get((mm, kk, wb.pool), 0.0) + c
    excess = {key: plan.cost - cost_of.get(key, 0.0) for key, plan in draft.pools.items()}
    return sorted(excess, key=lambda key: (-excess[key], key))
