"""The lower bound: column generation on the restricted master, Lagrangian bound at
every round.

The master starts with every arc when the model is small enough for its LP to be solved
at once (then one round proves the LP relaxation), else with the cheapest arcs of each
demand cell at first prices (a committed GPU at its cheapest commitment's hourly rate,
pay-as-you-go capacity free). Each round solves the master from its last basis, prices
every arc and single-region plan at its duals, adds those whose reduced cost is negative
(at most a few per demand cell), and evaluates the Lagrangian function at the duals —
a valid bound whether or not the master has converged; the best is kept.

Rounds are deterministic: the same scenario gives the same columns, duals and bound
after the same number of rounds on any machine.
"""

from __future__ import annotations

import numpy as np

from planner.decompose.blocks import Blocks
from planner.decompose.master import CommitmentPart, Master
from planner.decompose.pricing import (
    Rows, arc_prices, block_values, single_region_column, unit_costs)

# Arcs (demand cells × sources in reach) up to which the master starts with all of them:
# its LP is then the LP relaxation, solved at once (the default scenario: 40 k arcs, 2 s).
ALL_ARCS = 250_000
START_PER_CELL = 3  # else: the cheapest arcs of each demand cell at first prices
ADD_PER_CELL = 2  # arcs joining per demand cell and round, the most negative first
START_PLANS = 3  # a single-region workload's cheapest pairs at first prices
# Reduced costs above −TOLERANCE · (1 + |cost|) do not count.
TOLERANCE = 1e-7


class DualBound:
    """The column generation's state: master, best bound and the prices it came from."""

    def __init__(self, blocks: Blocks, threads: int | None = 1):
        self.blocks = blocks
        self.rows = Rows(blocks)
        self.master = Master(blocks, self.rows, threads)
        self.commitment_part = CommitmentPart(blocks)
        self.rounds = 0
        self.best = -np.inf
        self.prices = self.first_prices()
        self.converged = False
        self.pairs: dict[int, int] = {}  # single-region workloads held to one pair
        arcs = sum(int(wb.reach.sum()) * int((wb.level.sum(axis=0) > 0).sum())
                   for wb in blocks.workloads)
        per_cell = None if arcs <= ALL_ARCS else START_PER_CELL
        zero_duals = np.zeros((blocks.months, blocks.segments))
        for w, wb in enumerate(blocks.workloads):
            if wb.single_region:
                for rank in range(START_PLANS):
                    plan = single_region_column(wb, blocks, self.rows, *self.prices, rank)
                    if rank == 0 or not any(p is not None and _same(p, plan)
                                            for _, p, _ in self.master.plans[-rank:]):
                        self.master.add_plan(w, plan)
                continue
            _, priced = unit_costs(wb, blocks, *self.prices)
            n = len(wb.sources) if per_cell is None else per_cell
            site, source, month, segment, _ = arc_prices(
                wb, priced, np.zeros(wb.level.shape), zero_duals if wb.limited_spot else None, n)
            self.master.add_arcs(w, site, source, month, segment)

    def first_prices(self) -> tuple[np.ndarray, np.ndarray]:
        """A committed GPU at the hourly rate of its cheapest commitment (upfront spread
        over the term) for the hours of each segment; pay-as-you-go capacity free."""
        b = self.blocks
        builder = b.builder
        y_payg = np.zeros((len(b.payg_offers), b.months, b.segments))
        y_committed = np.zeros((len(b.committed_pairs), b.months, b.segments))
        hours = builder.settings.hours_per_month
        for i, pair in enumerate(b.committed_pairs):
            offers = builder.commit_offers.get(pair, [])
            if offers:
                rate = min(o.usd_per_gpu_hour + o.upfront_usd_per_gpu / (o.commit_months * hours)
                           for o in offers)
                y_committed[i] = rate * b.hd
        return y_payg, y_committed

    def lagrangian(self, y_payg: np.ndarray, y_committed: np.ndarray) -> float:
        """L(y): a lower bound on every plan, for any prices y ≥ 0."""
        b = self.blocks
        return (b.constant
                + sum(block_values(wb, b, y_payg, y_committed) for wb in b.workloads)
                + self.commitment_part.value(y_committed)
                - float((y_payg * b.payg_cap[:, None, None]).sum())
                - float((y_committed.sum(axis=2) * b.existing).sum()))

    def step(self, seconds: float | None = None) -> bool:
        """One round: solve the master, price, add columns. False when the master's LP
        did not finish within `seconds`."""
        m = self.master
        if not m.solve(seconds):
            return False
        self.rounds += 1
        y = (m.y_payg, m.y_committed)
        added = 0
        for w, wb in enumerate(self.blocks.workloads):
            if wb.single_region:
                plan = single_region_column(wb, self.blocks, self.rows, *y,
                                            pair=self.pairs.get(w))
                if m.plan_reduced_cost(w, plan) < -TOLERANCE * (1 + abs(float(plan.cost[0]))):
                    m.add_plan(w, plan)
                    added += 1
                continue
            _, priced = unit_costs(wb, self.blocks, *y)
            site, source, month, segment, rc = arc_prices(
                wb, priced, m.demand_duals(w), m.spot_duals(w), ADD_PER_CELL)
            true = (wb.price * wb.gpus_per_unit + wb.egress)[source] * \
                self.blocks.hd[month, segment]
            keep = rc < -TOLERANCE * (1 + np.abs(true))
            added += m.add_arcs(w, site[keep], source[keep], month[keep], segment[keep])
        bound = self.lagrangian(*y)
        if bound > self.best:
            self.best, self.prices = bound, y
        if added == 0:
            self.converged = True  # the master's LP is the LP relaxation
        return True

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


def _same(a, b) -> bool:
    return (a.cost.shape == b.cost.shape and np.allclose(a.cost, b.cost)
            and np.array_equal(a.cell_source, b.cell_source))
