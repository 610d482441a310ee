"""Better capacity prices without an LP: ascent on the Lagrangian function.

L(y) (planner.solve.decompose.dual) is concave in the capacity prices y ≥ 0, and every
evaluation hands back a subgradient for free: per capacity row, the GPUs the blocks'
optima put in it less its capacity. Where the master did not reach the LP relaxation
within its share of the budget (1000x100x36: one round of its master LP takes minutes),
a step costs one evaluation (0.08 s at 200x40x24, 1.5 s at 1000x100x36) and lifts the
bound from the best prices the master found.

A step (Polyak's step towards the cost U of a plan at hand; Camerini–Fratta–Maffioli
deflection, which damps the zig-zag between capacity rows that alternately overflow and
idle):

    d ← g + β d,  β = max(0, −DEFLECTION · g·d / |d|²)   (β = 0 where that d would
                                                          not ascend along g; d's
                                                          components that would push a
                                                          zero price below 0: 0)
    y ← max(0, y + λ · (U − L(y)) / |d|² · d)

λ shrinks by SHRINK after STALL steps that found no better bound. Nothing reads the
clock: the same number of steps gives the same prices on any machine.
"""

from __future__ import annotations

import numpy as np

from planner.solve.decompose.blocks import Blocks
from planner.solve.decompose.dual import Point, evaluate
from planner.solve.decompose.master import CommitmentPart
from planner.solve.decompose.pricing import Rows

# Measured on the default scenario (its LP relaxation: $26.73 M), 800 steps from first
# prices ($23.06 M) aimed at a plan of $27.31 M: no deflection $25.76 M; DEFLECTION
# 1.5, STALL 20, SHRINK 0.6 $26.11 M; STALL 40, SHRINK 0.7 $26.24 M; restarting from
# the best point at each shrink, or aiming at a moving target instead of U: worse.
# Aimed at the greedy plan (63 % above the LP there, 30 % at 200x40x24), a first λ of
# 1 overshoots: 400 steps (150 at 200x40x24) from λ = 1, 0.3 and 0.1 reached $24.81 M,
# $25.52 M, $25.52 M on the default scenario; $211 M, $221 M, – at 200x40x24 (LP
# $253 M); $1.40 M, $1.35 M, $1.12 M on generated 8x6x3 (LP $2.03 M).
DEFLECTION = 1.5
STALL = 40
SHRINK = 0.7
FIRST_STEP = 0.3  # λ at the start
# λ below which the steps no longer move the prices: the ascent has stopped
SMALLEST_STEP = 1e-6


class Ascent:
    def __init__(self, blocks: Blocks, commitment_part: CommitmentPart, prices,
                 target: float):
        self.blocks = blocks
        self.commitment_part = commitment_part
        self.rows = Rows(blocks)
        self.target = target  # U: the cost of a plan at hand
        self.y = (np.array(prices[0], dtype=float), np.array(prices[1], dtype=float))
        self.point = self._evaluate(self.y)
        self.best, self.best_prices = self.point.value, self.y
        self.direction = (self.point.g_payg.copy(), self.point.g_committed.copy())
        self.step_size = FIRST_STEP  # λ
        self.stalled = 0
        self.steps = 0

    @property
    def stopped(self) -> bool:
        """No step can help: the bound has met the plan, or λ has shrunk to nothing."""
        return self.best >= self.target or self.step_size < SMALLEST_STEP

    def _evaluate(self, y) -> Point:
        return evaluate(self.blocks, self.commitment_part, self.rows, *y)

    def step(self) -> None:
        g = (self.point.g_payg, self.point.g_committed)
        d = self.direction
        dd = sum(float((x * x).sum()) for x in d)
        gd = sum(float((a * b).sum()) for a, b in zip(g, d))
        beta = max(0.0, -DEFLECTION * gd / dd) if dd > 0 else 0.0
        if sum(float((a * a).sum()) for a in g) + beta * gd < 0.0:
            beta = 0.0  # deflected so far it no longer ascends along g (in one price, always)
        d = tuple(np.where((y <= 0) & (a + beta * b < 0), 0.0, a + beta * b)
                  for y, a, b in zip(self.y, g, d))
        norm = sum(float((x * x).sum()) for x in d)
        self.steps += 1
        if norm <= 0.0:  # every row within its capacity at prices 0 or exactly full
            self.step_size = 0.0
            return
        t = self.step_size * (self.target - self.point.value) / norm
        self.y = tuple(np.maximum(0.0, y + t * x) for y, x in zip(self.y, d))
        self.direction = d
        self.point = self._evaluate(self.y)
        if self.point.value > self.best + 1e-6 * abs(self.best):
            self.best, self.best_prices = self.point.value, self.y
            self.stalled = 0
        else:
            self.stalled += 1
            if self.stalled >= STALL:
                self.step_size *= SHRINK
                self.stalled = 0
