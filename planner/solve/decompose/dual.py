"""The lower bound: column generation on the restricted master, Lagrangian bound at
every round.

The master starts with every arc when the model is small enough for its LP to be solved
at once (then one round proves the LP relaxation), else with a few arcs of each demand
cell at first prices (a committed GPU at its cheapest commitment's hourly rate,
pay-as-you-go capacity free): the cheapest, the cheapest uncapped on-demand one and the
cheapest committed ones (START_PER_CELL). Each round solves the master from its last
basis, drops the arcs that have stayed out of its basis (planner.solve.decompose.master),
prices every single-region plan at its duals and every arc between them and the best
bound's point (PRICING_SMOOTHING), adds those whose reduced cost is negative (at most
ADD_PER_CELL arcs per demand cell and ADD_MOST in all, the costliest to leave out first;
a single-region workload's plans on its PLAN_PAIRS cheapest pairs and at the completed
duals), and evaluates the Lagrangian function at the duals (also completed where they
leave committed rows at 0, and smoothed) — a valid bound whether or not the master has
converged; while columns still price out, also the bound split by pair at the master's
demand duals and the Lagrangian function at the capacity prices that split finds
(planner.solve.decompose.by_pair); the best is kept.

Rounds are deterministic: the same scenario gives the same columns, duals and bound
after the same number of rounds on any machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.solve.decompose.blocks import Blocks
from planner.solve.decompose.by_pair import pair_split
from planner.solve.decompose.master import CommitmentPart, Master, arc_key
from planner.solve.decompose.pricing import (
    Rows,
    arc_prices,
    block_usage,
    demand_prices,
    single_region_column,
    single_region_columns,
    unit_costs,
)
from planner.solve.work import master_start_s, pricing_s

# Arcs (demand cells × sources in reach) up to which the master starts with all of them:
# its LP is then the LP relaxation, solved at once (the default scenario: 33 k arcs, 2 s;
# 50x40x24: 400 k arcs, 16 s, where column generation from the cheapest arcs was 15 %
# above the LP after 25 rounds and 70 s).
ALL_ARCS = 600_000
# Else, for each demand cell, the START_PER_CELL cheapest arcs at the prices the master
# starts from, the cheapest uncapped on-demand arc (with no room limit it can always
# serve: without it, demand whose cheap arcs are full goes unmet at the penalty in the
# master, and its duals price every arc as if that were the cost of a unit) and the
# START_COMMITTED cheapest committed arcs (what makes a commitment worth signing).
# 200x40x24's first master LP (its LP relaxation: 253.35 M): 3 cheapest a cell 308 M;
# 10 293 M; 17 279 M (16 s); 20 253.6 M (720 k arcs, 22 s); 3 + on-demand 255.1 M
# (251 k arcs, 2.8 s); 3 + on-demand + 3 committed 254.7 M (292 k, 3.7 s).
START_PER_CELL = 3
START_COMMITTED = 3
# Arcs joining per demand cell and round, the most negative first: 200x40x24's bound
# reached 250.6 M in round 13 (76 s) with 2, 251.7 M in round 6 (57 s; 28 s with the
# primal simplex) with 6 (200 k arcs a round). At most ADD_MOST arcs a round, though:
# 1000x100x36 (268 k cells, 1.6 M arcs in its first master), column generation alone for
# ~400 s with rounds of many new arcs by the dual simplex (MANY_NEW): 300 k a round, 8
# rounds, bound 1.878 B; 600 k, 6 rounds, 1.917 B; 1.2 M, 3 rounds (its second 133 s),
# 1.873 B. (With the primal simplex 6 a cell had doubled the master, and its second
# solve did not end in 5 minutes.) Where more would join, those whose absence costs the
# bound most join: the most negative level x reduced cost over every cell, up to
# ADD_PER_CELL a cell (was ADD_MOST ÷ cells a cell, 2 at 1000x100x36, where tiny cells
# took as many as large ones). 1000x100x36 alone, arcs priced at 0.7 (PRICING_SMOOTHING):
# bound after rounds 3 and 4 1.953, 1.961 B with 2 a cell; 1.985 B with the
# weighted choice (the master's value 2.130 → 2.124 B; 4 rounds 317 → 357 s).
ADD_PER_CELL = 6
ADD_MOST = 600_000
START_PLANS = 3  # a single-region workload's cheapest pairs at first prices
# Each round, a single-region workload not yet held to a pair offers the master its
# PLAN_PAIRS cheapest pairs' plans at the duals and its cheapest at the completed duals
# (those that price out). Its block is one plan over the whole horizon, and the master
# mixes such plans — across pairs where capacity binds, within a pair across sources —
# so one plan a round converges slowly: at 200x40x24 (28 such workloads, 60 s) two
# thirds of what still separated the bound from the master after 10 rounds was theirs.
# Bound after 21-22 rounds: 1 plan 252.15 M; 4 pairs 252.91; 3 pairs and the completed
# duals' 252.71; 4 and it 253.17; 6 and it (and the best prices') 253.06 (17 rounds);
# the master 253.23 M.
PLAN_PAIRS = 4
# Reduced costs above −TOLERANCE · (1 + |cost|) do not count.
TOLERANCE = 1e-7


# The bound split by pair (planner.solve.decompose.by_pair) is taken while the best bound
# is more than SPLIT_WORTH under the master's value. It costs some three evaluations
# of L (200x40x24: 0.7 s a round) and lifts a bound far under the master (1000x100x36,
# round 1: 1.36 → 1.80 B against a master of 2.15 B; 200x40x24: 210.6 → 249.3 M against
# 254.5 M), but near the master little: at 200x40x24 the master converges within 0.5 %
# of its LP, and a split every round cost the command 8 of its 14 master rounds.
SPLIT_WORTH = 0.02

# Arcs are priced from the second round on at the point PRICING_SMOOTHING of the way from
# the master's duals to the best bound's (Wentges' smoothing): a restricted master's duals
# price many arcs out that the LP relaxation would not use, and its columns converge
# slowly. 1000x100x36, column generation alone: bound after rounds 3, 4, 5 1.863, 1.887,
# 1.917 B at the master's duals (6 rounds 519 s), 1.951, 1.961, 1.966 B at 0.5 (467 s),
# 1.953, 1.961, 1.972 B at 0.7 (469 s; the master's value after 6 rounds 2.129, 2.129,
# 2.127 B). Only while the bound is far under the master's value (SPLIT_WORTH), though:
# near it the master's duals are nearly the LP's, and smoothing slows the last rounds
# (200x40x24, within 2 % of the master from round 1: 253.15 M after 24 rounds at the
# master's duals, 253.22 M at 0.5, 252.92 M at 0.7; the LP relaxation 253.25 M).
PRICING_SMOOTHING = 0.7

# Weight of the best prices so far in the point between them and the master's duals
# (completed: `DualBound.completed`) at which the bound is also taken each round (in-out
# smoothing: while the master has few columns its duals swing widely; a point nearer the
# best prices often bounds better).
SMOOTHING = 0.7


def lp_at_once(blocks: Blocks) -> bool:
    """Whether the master starts with every arc (ALL_ARCS)."""
    return sum(int(wb.arcs.sum()) * int((wb.level.sum(axis=0) > 0).sum())
               for wb in blocks.workloads) <= ALL_ARCS


def first_prices(blocks: Blocks) -> tuple[np.ndarray, np.ndarray]:
    """Where pricing starts: a committed GPU in month m at the least a commitment active
    then costs per GPU-hour of its months inside the horizon (what the tail policy counts
    spread over the months it can serve), for the hours of each segment; pay-as-you-go
    capacity free. (Existing contracts' GPUs alone: free; and a stress test's or a
    stochastic evaluation's fixed commitments, paid whatever the plan: a what-if's stress
    test at its plan at first prices had left $310 k of the very commitments its own
    plan filled idle, at $1.45 M against that plan's $1.01 M.)"""
    b = blocks
    cm = b.commitments
    hours = b.builder.settings.hours_per_month
    y_payg = np.zeros((len(b.payg_offers), b.months, b.segments))
    rate = np.full((len(b.committed_pairs), b.months), np.inf)
    inside = np.minimum(cm.start + cm.months, b.months) - cm.start
    per_hour = cm.cost / (np.maximum(inside, 1) * hours)
    for n in range(len(cm.offer)):
        if cm.upper[n] <= cm.lower[n]:  # decided: no GPU of it is a choice
            continue
        end = int(cm.start[n] + inside[n])
        row = rate[cm.committed_row[n], int(cm.start[n]):end]
        np.minimum(row, per_hour[n], out=row)
    rate[~np.isfinite(rate)] = 0.0
    # (the commitments' costs are discounted already: the segments' hours are not)
    return y_payg, rate[:, :, None] * np.array(b.builder.hours)[None, None, :]


@dataclass
class Point:
    """L(y) at one point y, and a subgradient there: per capacity row, the GPUs the
    blocks' optima put in it less the row's capacity (a capped offer's max_gpus; the
    existing GPUs and those the commitments' optimum signs)."""

    value: float
    g_payg: np.ndarray  # [offers, M, K]
    g_committed: np.ndarray  # [pairs, M, K]


def evaluate(blocks: Blocks, commitment_part: CommitmentPart, rows: Rows,
             y_payg: np.ndarray, y_committed: np.ndarray) -> Point:
    """L(y), a lower bound on every plan for any prices y ≥ 0 (planner.solve.decompose.master),
    with a subgradient."""
    b = blocks
    value, usage = b.constant, np.zeros(rows.count)
    for wb in b.workloads:
        v, u = block_usage(wb, b, rows, y_payg, y_committed)
        value += v
        usage += u
    signing, q = commitment_part.optimum(y_committed)
    value += (signing - float((y_payg * b.payg_cap[:, None, None]).sum())
              - float((y_committed.sum(axis=2) * b.existing).sum()))
    g_payg = usage[:rows.payg].reshape(y_payg.shape) - b.payg_cap[:, None, None]
    g_committed = (usage[rows.payg:].reshape(y_committed.shape)
                   - commitment_part.supply(q, b.existing)[:, :, None])
    return Point(value, g_payg, g_committed)


def lagrangian(blocks: Blocks, commitment_part: CommitmentPart, y_payg: np.ndarray,
               y_committed: np.ndarray) -> float:
    """L(y) alone."""
    return evaluate(blocks, commitment_part, Rows(blocks), y_payg, y_committed).value


class DualBound:
    """The column generation's state: master, best bound and the prices it came from.

    `seed`: arcs of a plan that respects capacity (workload index → arrays (site,
    source, month, segment)) and single-region pairs, so that the first master LP can
    serve its demand: with the cheapest arcs alone, capped offers overflow, the master
    leaves demand unmet at the penalty and its duals are worth nothing for many rounds
    (50x40x24: 20 rounds)."""

    def __init__(self, blocks: Blocks, prices, seed: tuple[dict, dict] | None = None):
        self.blocks = blocks
        self.rows = Rows(blocks)
        self.master = Master(blocks, self.rows)
        self.commitment_part = CommitmentPart(blocks)
        self.rounds = 0
        self.dropped = 0  # arcs that left the master idle (Master.drop_idle)
        self.prices = prices
        self.first = prices  # where it started: what completes the master's zero prices
        self.best = self.lagrangian(*prices)
        self.converged = False
        self.pairs: dict[int, int] = {}  # single-region workloads held to one pair
        at_once = lp_at_once(blocks)
        zero_duals = np.zeros((blocks.months, blocks.segments))
        seeded, seed_pairs = seed or ({}, {})
        for w, wb in enumerate(blocks.workloads):
            if wb.single_region:
                plans = single_region_columns(wb, blocks, self.rows, *prices, START_PLANS)
                if w in seed_pairs:
                    plans.append(single_region_column(wb, blocks, self.rows, *prices,
                                                      pair=seed_pairs[w]))
                for i, plan in enumerate(plans):
                    if not any(_same(p, plan) for p in plans[:i]):
                        self.master.add_plan(w, plan)
                continue
            _, priced = unit_costs(wb, blocks, *prices)
            on_demand = (wb.payg_row < 0) & (wb.committed_row < 0) & ~wb.spot
            kinds = [(None, len(wb.sources))] if at_once else [
                (None, START_PER_CELL), (on_demand, 1),
                (wb.committed_row >= 0, START_COMMITTED)]
            parts = [arc_prices(wb, priced, np.zeros(wb.level.shape),
                                zero_duals if wb.limited_spot else None, n, among)[:4]
                     for among, n in kinds]
            if w in seeded:
                parts.append(seeded[w][:4])
            arcs = tuple(np.concatenate([p[i] for p in parts]) for i in range(4))
            self.master.add_arcs(w, *_unique_arcs(wb, blocks, *arcs))
        self.work_s = master_start_s(blocks.cells, self.master.n_cols)

    def lagrangian(self, y_payg: np.ndarray, y_committed: np.ndarray) -> float:
        return evaluate(self.blocks, self.commitment_part, self.rows, y_payg,
                        y_committed).value

    def step(self, seconds: float | None = None, wall: float | None = None) -> bool:
        """One round: solve the master, price, add columns. False when the master's LP
        did not finish within `seconds` of work (or `wall` seconds on the wall clock).
        `work_s`: the round's reckoning (planner.solve.work)."""
        m = self.master
        solved = m.solve(seconds, wall)
        self.work_s = m.work_s
        if not solved:
            return False
        self.work_s += pricing_s(self.blocks.cells, self.blocks.single_region_pairs)
        self.rounds += 1
        self.dropped += m.drop_idle()
        y = (m.y_payg, m.y_committed)
        completed = self.completed(y)
        # the arcs priced at the point between the master's duals and the best bound's
        # (from the second round: the first's best is first prices; and while the bound
        # is far under the master); where none prices out there, at the master's duals,
        # which alone prove the LP relaxation reached
        weight = PRICING_SMOOTHING if self.rounds > 1 and self._far() else 0.0
        arcs = self._priced_arcs(y, weight) if weight > 0 else {}
        if not arcs:
            arcs = self._priced_arcs(y, 0.0)
        added = 0
        for w, wb in enumerate(self.blocks.workloads):  # in the workloads' order
            if wb.single_region:
                added += self._add_plans(w, wb, y, completed)
            elif w in arcs:
                added += m.add_arcs(w, *arcs[w])
        smoothed = (SMOOTHING * self.prices[0] + (1 - SMOOTHING) * completed[0],
                    SMOOTHING * self.prices[1] + (1 - SMOOTHING) * completed[1])
        for point in (y, completed, smoothed):
            self._keep_best(self.lagrangian(*point), point)
        if added and self._far():
            # short of the LP, the bound still far under it: the bound split by pair,
            # and L at the prices it finds
            split, split_prices = pair_split(self.blocks, self.rows, m, y)
            self._keep_best(split, split_prices)
            self._keep_best(self.lagrangian(*split_prices), split_prices)
        if added == 0:
            self.converged = True  # the master's LP is the LP relaxation
        return True

    def _far(self) -> bool:
        """Whether the best bound is still more than SPLIT_WORTH under the master's value."""
        return self.best < (1.0 - SPLIT_WORTH) * self.master_value

    def _priced_arcs(self, y, weight: float) -> dict[int, tuple]:
        """Per workload, the arcs (site, source, month, segment) to join the master: those
        whose reduced cost is negative at the point `weight` of the way from the master's
        duals (y and its demand and spot-share rows') to the best bound's prices and the
        demand prices they imply (`demand_prices`), at most ADD_PER_CELL a demand cell,
        the most negative first, and at most ADD_MOST in all, those whose level x reduced
        cost is most negative (the costliest for the bound to leave out)."""
        m, b = self.master, self.blocks
        point = y if weight == 0 else tuple(weight * c + (1 - weight) * d
                                            for c, d in zip(self.prices, y))
        found = {}  # workload → (site, source, month, segment, level x reduced cost)
        for w, wb in enumerate(b.workloads):
            if wb.single_region:
                continue
            pi, tau = m.demand_duals(w), m.spot_duals(w)
            if weight > 0:
                pi_center, tau_center = demand_prices(wb, b, *self.prices)
                pi = weight * pi_center + (1 - weight) * pi
                if tau is not None:
                    tau = weight * tau_center + (1 - weight) * tau
            _, priced = unit_costs(wb, b, *point)
            site, source, month, segment, rc = arc_prices(wb, priced, pi, tau, ADD_PER_CELL)
            true = (wb.price * wb.gpus_per_unit + wb.egress)[source] * b.hd[month, segment]
            keep = rc < -TOLERANCE * (1 + np.abs(true))
            if keep.any():
                site, source, month, segment = (site[keep], source[keep], month[keep],
                                                segment[keep])
                found[w] = (site, source, month, segment,
                            rc[keep] * wb.level[site, month, segment])
        costs = np.concatenate([f[4] for f in found.values()]) if found else np.zeros(0)
        if len(costs) <= ADD_MOST:
            return {w: f[:4] for w, f in found.items()}
        cut = np.partition(costs, ADD_MOST - 1)[ADD_MOST - 1]
        return {w: tuple(x[f[4] <= cut] for x in f[:4]) for w, f in found.items()}

    def _add_plans(self, w: int, wb, y, completed) -> int:
        """A single-region workload's plans that price out at the duals `y` join the
        master (how many): its held pair's plan, or, while it may still choose, its
        PLAN_PAIRS cheapest pairs' plans at the duals and its cheapest at the
        `completed` duals, none twice."""
        m = self.master
        if w in self.pairs:
            plans = [single_region_column(wb, self.blocks, self.rows, *y, pair=self.pairs[w])]
        else:
            plans = single_region_columns(wb, self.blocks, self.rows, *y, PLAN_PAIRS)
            plans += single_region_columns(wb, self.blocks, self.rows, *completed, 1)
        added = []
        for plan in plans:
            if (m.plan_reduced_cost(w, plan) < -TOLERANCE * (1 + abs(float(plan.cost[0])))
                    and not any(_same(plan, p) for p in added)):
                m.add_plan(w, plan)
                added.append(plan)
        return len(added)

    def _keep_best(self, bound: float, prices) -> None:
        if bound > self.best:
            self.best, self.prices = bound, prices

    def completed(self, y):
        """The master's duals with the committed rows they price at 0 priced as at
        first prices, scaled down per (region, GPU type) until no commitment there
        earns more than it costs. A restricted master leaves many committed rows slack
        (arcs that would fill them are not in it yet): at 0 every block in reach uses
        their GPUs for free and the bound at the duals is far under the master's value
        (200x40x24, round 1: L = −20 M against 254.5 M; completed 167 M). Scaled, the
        commitments' part of L signs nothing it would not sign at the duals."""
        cp = self.commitment_part
        fill = np.where(y[1] <= 0.0, self.first[1], 0.0)
        gain = cp.cost_gain(fill)
        room = np.maximum(cp.cm.cost - cp.cost_gain(y[1]), 0.0)
        ratio = np.minimum(room / np.where(gain > 0, gain, 1.0), 1.0)
        scale = np.ones(len(self.blocks.committed_pairs))
        np.minimum.at(scale, cp.cm.committed_row[gain > 0], ratio[gain > 0])
        return y[0], y[1] + fill * scale[:, None, None]

    def hold_pairs(self, pairs: dict[int, int]) -> None:
        """Hold single-region workloads to one (region, GPU type) pair each: the master
        drops their other plans, and goes on (`step`) as the LP of that choice. The
        Lagrangian bound still prices every pair, so it stays a bound on every plan."""
        m = self.master
        self.pairs.update(pairs)
        for w, plan, col in m.plans:
            if w in pairs and plan_pair(self.blocks.workloads[w], plan) != pairs[w]:
                m.h.changeColBounds(col, 0.0, 0.0)
        for w, pair in pairs.items():
            wb = self.blocks.workloads[w]
            m.add_plan(w, single_region_column(wb, self.blocks, self.rows, *self.prices,
                                               pair=pair))
        self.converged = False

    @property
    def master_value(self) -> float:
        return self.master.objective


def plan_pair(wb, plan) -> int | None:
    """The pair a single-region plan uses (None: it leaves everything unmet)."""
    real = plan.cell_source >= 0
    if not real.any():
        return None
    return int(np.searchsorted(wb.pair_start, int(plan.cell_source[real][0]), side="right") - 1)


def _unique_arcs(wb, blocks, site, source, month, segment):
    """The arcs once each, in a fixed order."""
    _, first = np.unique(arc_key(wb, blocks, site, source, month, segment),
                         return_index=True)
    return site[first], source[first], month[first], segment[first]


def _same(a, b) -> bool:
    return (a.cost.shape == b.cost.shape and np.allclose(a.cost, b.cost)
            and np.array_equal(a.cell_source, b.cell_source))
