"""Lagrangian cuts: a scenario's least cost as a function of the commitments it is given.

Price the capacity rows at y ≥ 0 (planner.solve.decompose.dual) and the model falls apart
into blocks. Hold the commitments q fixed instead of choosing them, and what is left of
the Lagrangian function is affine in q:

    V(q) ≥ L(y; q) = A(y) + Σ_n (cost_n − Σ_{m active, k} y_committed[pair_n, m, k]) · q_n
    A(y) = constant + Σ_blocks min(cost + y · GPUs) − y_payg · max_gpus − y_committed · existing

for every y ≥ 0 and every q ≥ 0 (weak duality on the model with q fixed): a cut that stays
valid wherever the first stage goes, and under whole replicas and instances too (the
blocks relax them). The best y for one q̂ is the LP dual of the model with q̂ fixed, which
column generation finds (`DualBound` on blocks whose commitments' bounds are set to q̂);
stopped early, its best prices still give a valid, weaker cut. A commitment the
scenario's model has no use for (no workload may draw on its region and GPU type) only
costs: its slope is its counted cost.

`CutMaster` is the first stage over such cuts (an L-shaped master with Lagrangian
cuts): min Σ_s p_s θ_s (+ λ·CVaR_α of θ, Rockafellar–Uryasev) with θ_s above every cut
of scenario s and above its own proven bound; its value is a valid lower bound on any
commitment schedule's expected cost, and its q a schedule worth trying.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.model.builder import ModelBuilder
from planner.solve.budget import Budget
from planner.solve.decompose.blocks import Blocks
from planner.solve.decompose.dual import DualBound, first_prices
from planner.solve.decompose.kinds import merge
from planner.solve.decompose.master import CommitmentPart
from planner.solve.decompose.pricing import Rows, block_usage
from planner.solve.decompose.replicas import small_load_fill
from planner.solve.highs import new_highs
from planner.solve.work import blocks_s, pricing_s


@dataclass
class Cut:
    """V(q) ≥ constant + Σ slope[key] · q[key] for every schedule q (keys: (offer key,
    start month); a key not listed has slope `costs[key]`: it only costs)."""

    constant: float
    slope: dict
    value: float  # at the schedule it was taken at
    work_s: float = 0.0  # the seconds of work it is reckoned to have taken


def commitment_space(builder: ModelBuilder) -> dict:
    """(offer key, start month) -> (most GPUs worth committing, counted cost per GPU):
    the model's commitment variables."""
    cm = Blocks(builder).commitments
    return {(cm.offer[n], int(cm.start[n])): (float(cm.upper[n]), float(cm.cost[n]))
            for n in range(len(cm.offer))}


def cut_at(builder: ModelBuilder, schedule: dict, seconds: float,
           prices: tuple | None = None) -> Cut:
    """The cut at `schedule` ((offer key, start) -> GPUs; missing: none): the prices of
    the model with those commitments fixed, by column generation for up to `seconds`
    from `prices` (default: first prices), on a work clock of its own."""
    blocks = _fixed(builder, schedule)
    dual = DualBound(blocks, prices if prices is not None else first_prices(blocks))
    clock = Budget.of_work(seconds)
    clock.spend(blocks_s(blocks.cells) + dual.work_s)
    while not dual.converged and clock.left() > 0:
        stepped = dual.step(clock.left(), clock.wall_left())
        clock.spend(dual.work_s)
        if not stepped:
            break
    cut = _cut(blocks, dual.prices, schedule)
    cut.work_s = clock.elapsed() + pricing_s(blocks.cells, blocks.single_region_pairs)
    return cut


def cut_with(builder: ModelBuilder, prices: tuple, schedule: dict) -> Cut:
    """The cut at `prices` (valid for any schedule; `schedule` only sets its `value`)."""
    blocks = _fixed(builder, schedule)
    cut = _cut(blocks, prices, schedule)
    cut.work_s = blocks_s(blocks.cells) + pricing_s(blocks.cells, blocks.single_region_pairs)
    return cut


def _fixed(builder: ModelBuilder, schedule: dict) -> Blocks:
    """The model's blocks with every commitment held at `schedule`'s GPUs, demand sites
    of one kind merged (planner.solve.decompose.kinds: the same LP, smaller) and small
    loads taking whole replicas (planner.solve.decompose.replicas)."""
    blocks = Blocks(builder)
    cm = blocks.commitments
    q = np.array([float(schedule.get((cm.offer[n], int(cm.start[n])), 0.0))
                  for n in range(len(cm.offer))])
    cm.lower, cm.upper = q.copy(), q.copy()
    return small_load_fill(merge(blocks))


def _cut(blocks: Blocks, prices: tuple, schedule: dict) -> Cut:
    y_payg, y_committed = prices
    rows = Rows(blocks)
    constant = blocks.constant
    for wb in blocks.workloads:
        constant += block_usage(wb, blocks, rows, y_payg, y_committed)[0]
    constant -= float((y_payg * blocks.payg_cap[:, None, None]).sum())
    constant -= float((y_committed.sum(axis=2) * blocks.existing).sum())
    slope = CommitmentPart(blocks).reduced_costs(y_committed)
    cm = blocks.commitments
    keys = [(cm.offer[n], int(cm.start[n])) for n in range(len(cm.offer))]
    return Cut(constant=float(constant), slope=dict(zip(keys, slope.tolist())),
               value=float(constant + slope @ cm.lower))


class CutMaster:
    """The first stage over Lagrangian cuts (module docstring). `space`: (offer key,
    start) -> (upper, cost) of every commitment any scenario may sign; `floors`: each
    scenario's proven bound; `caps`: [(keys, max_gpus)], the commitments of one capped
    offer active in one month."""

    def __init__(self, probabilities, space: dict, floors, risk_aversion: float = 0.0,
                 alpha: float = 0.9, caps: list | None = None):
        import highspy

        inf = highspy.kHighsInf
        self.keys = sorted(space)
        self.cost = {key: space[key][1] for key in self.keys}
        p = np.asarray(probabilities, dtype=float)
        self.n_scenarios = len(p)
        h = self.h = new_highs()
        h.setOptionValue("random_seed", 0)
        h.setOptionValue("threads", 1)
        n = len(self.keys)
        # columns: q (n), θ (S), and for CVaR: t, η (S)
        self.upper = np.array([space[k][0] for k in self.keys], dtype=float)
        h.addCols(n, np.zeros(n), np.zeros(n), self.upper,
                  0, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        floors = np.array([f if f is not None and np.isfinite(f) else -inf for f in floors])
        self.theta = n
        h.addCols(len(p), p, floors, np.full(len(p), inf), 0, np.zeros(0, dtype=np.int32),
                  np.zeros(0, dtype=np.int32), np.zeros(0))
        if risk_aversion > 0:
            t = n + len(p)
            h.addCol(risk_aversion, -inf, inf, 0, np.zeros(0, dtype=np.int32), np.zeros(0))
            h.addCols(len(p), risk_aversion * p / (1 - alpha), np.zeros(len(p)),
                      np.full(len(p), inf), 0, np.zeros(0, dtype=np.int32),
                      np.zeros(0, dtype=np.int32), np.zeros(0))
            for s in range(len(p)):  # η_s ≥ θ_s − t
                h.addRow(0.0, inf, 3, np.array([t + 1 + s, self.theta + s, t], dtype=np.int32),
                         np.array([1.0, -1.0, 1.0]))
        column = {key: j for j, key in enumerate(self.keys)}
        for keys, cap in caps or ():  # an offer's max_gpus in a month it is active
            cols = [column[k] for k in keys if k in column]
            if cols:
                h.addRow(-inf, float(cap), len(cols), np.array(cols, dtype=np.int32),
                         np.ones(len(cols)))
        self.cuts = 0
        self.floors = floors
        self.by_scenario: list[list[Cut]] = [[] for _ in range(len(p))]

    def scenario_costs(self, schedule: dict) -> np.ndarray:
        """What the cuts say each scenario costs under `schedule` ((offer key, start) ->
        GPUs): its largest cut there, at least its proven bound. A lower bound on each;
        where few cuts are near, a rough one."""
        return np.array([max([float(f)] + [
            c.constant + sum(c.slope.get(k, self.cost[k]) * q for k, q in schedule.items()
                             if k in self.cost)
            for c in cuts]) for f, cuts in zip(self.floors, self.by_scenario)])

    def add(self, scenario: int, cut: Cut) -> None:
        """θ_s − Σ slope · q ≥ constant."""
        import highspy

        self.by_scenario[scenario].append(cut)

        index = [self.theta + scenario]
        value = [1.0]
        for j, key in enumerate(self.keys):
            a = cut.slope.get(key, self.cost[key])
            if a != 0.0:
                index.append(j)
                value.append(-a)
        self.h.addRow(cut.constant, highspy.kHighsInf, len(index),
                      np.array(index, dtype=np.int32), np.array(value))
        self.cuts += 1

    def solve(self, center: dict | None = None, radius: float = 0.0) -> tuple[float, dict]:
        """The master's value and its schedule (GPUs, fractional). Without `center`, the
        value is a valid lower bound. With it, the schedule stays within `radius` of
        each commitment's GPUs there (at least one GPU): a trust region, so that few
        cuts do not send the next schedule to a far corner where they say little (its
        value is then no bound)."""
        n, upper = len(self.keys), self.upper
        if center is not None:
            c = np.array([center.get(k, 0.0) for k in self.keys])
            width = np.maximum(1.0, radius * c)
            self.h.changeColsBounds(n, np.arange(n, dtype=np.int32),
                                    np.maximum(0.0, c - width), np.minimum(upper, c + width))
        import highspy

        self.h.run()
        optimal = self.h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        info = self.h.getInfo()
        x = np.asarray(self.h.getSolution().col_value)
        if center is not None:
            self.h.changeColsBounds(n, np.arange(n, dtype=np.int32), np.zeros(n), upper)
        if not optimal:  # a scenario with neither a cut nor a bound: nothing proven
            return -np.inf, dict(center or {})
        return float(info.objective_function_value), {
            key: float(x[j]) for j, key in enumerate(self.keys) if x[j] > 1e-9}
