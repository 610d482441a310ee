"""Measurement: how far whole replicas can lift the bound (issue #17's bound question).

    planner solve SCENARIO --export-model model.mps --time-limit 30 -o plan.xlsx
    python benchmarks/integer_blocks.py model.mps [--rounds 60] [--block-seconds 0.5]

The whole model splits into small blocks once the rows that link them — committed
capacity and offer capacity — are priced: a pool's demand, flows, supply and whole
replicas in one month and segment. This solves the Lagrangian dual over those blocks
*kept integer* (Dantzig-Wolfe with whole-replica columns): a master LP over the priced
rows and the commitments (kept continuous), columns from each block solved as a MIP by
HiGHS at the master's prices, box-step stabilised around the best prices so far
(starting at the LP relaxation's duals). At any prices the Lagrangian function (each
block's proven MIP bound, the commitments at their reduced costs, the rows' prices times
their capacity) is a valid lower bound; the best is printed each round beside the LP
relaxation. It is the strongest bound any Lagrangian over these blocks can give, so it
says how much of a plan's gap the bound, not the plan, holds.

A measuring tool, run by hand on small models: its blocks are HiGHS MIPs, seconds a
round for a 12x10x6 market. benchmarks/README.md keeps its figures.
"""

from __future__ import annotations

import argparse
import time

import highspy
import numpy as np
from scipy.sparse import csc_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components

from planner.solve.highs import new_highs

INF = highspy.kHighsInf
PRICED = ("committed_capacity", "offer_capacity")  # the rows linking the blocks
SERVES = ("supply", "flow", "replicas")  # columns that serve demand (0: all unmet)


class Model:
    """The exported model's arrays, its priced rows and its blocks."""

    def __init__(self, path: str):
        self.highs = h = new_highs()  # the whole model, for its LP relaxation
        h.readModel(path)
        lp = h.getLp()
        self.names = list(lp.col_names_)
        m, n = lp.num_row_, lp.num_col_
        a = lp.a_matrix_
        matrix = csc_matrix((np.array(a.value_), np.array(a.index_), np.array(a.start_)),
                            shape=(m, n)).tocsr()
        self.cost, self.offset = np.array(lp.col_cost_), lp.offset_
        self.lower, self.upper = np.array(lp.col_lower_), np.array(lp.col_upper_)
        self.integer = np.array(lp.integrality_, dtype=np.uint8)
        row_lower, row_upper = np.array(lp.row_lower_), np.array(lp.row_upper_)
        priced = np.array([name.startswith(PRICED) for name in lp.row_names_])
        self.priced = np.flatnonzero(priced)
        assert (row_lower[self.priced] <= -1e30).all(), "priced rows are capacities (<=)"
        self.capacity = row_upper[self.priced]
        self.linking = matrix[self.priced].tocsc()  # [priced rows, columns]
        kept = matrix[~priced]
        self.kept_lower, self.kept_upper = row_lower[~priced], row_upper[~priced]
        _, label = connected_components((kept.T @ kept) != 0, directed=False)
        in_rows = np.diff(kept.tocsc().indptr)
        self.commitments = np.flatnonzero(in_rows == 0)  # only in priced rows: master
        self.blocks = [Block(self, kept, columns) for columns in
                       (np.flatnonzero(label == b) for b in range(label.max() + 1))
                       if in_rows[columns].sum() > 0]

    def lagrangian(self, prices: np.ndarray, values: list[float]) -> float:
        """The Lagrangian function at the priced rows' duals (≤ 0) from the blocks'
        proven values there: a lower bound on the whole model's optimum."""
        j = self.commitments
        reduced = self.cost[j] - self.linking[:, j].T @ prices
        # the LP's duals leave reduced costs of -1e-9 of a price where 0 is meant
        reduced[(reduced < 0) & (reduced > -1e-7 * np.maximum(1.0, np.abs(self.cost[j])))] = 0
        best = np.where(reduced >= 0, reduced * self.lower[j],
                        np.where(np.isinf(self.upper[j]), -np.inf, reduced * self.upper[j]))
        return self.offset + sum(values) + float(best.sum()) + float(prices @ self.capacity)


class Block:
    """One block: a HiGHS MIP over its columns and the rows that only they share."""

    def __init__(self, model: Model, kept: csr_matrix, columns: np.ndarray):
        self.model, self.columns = model, columns
        rows = np.unique(kept[:, columns].tocoo().row)
        sub = kept[rows][:, columns].tocsr()
        self.highs = h = new_highs()
        n = len(columns)
        h.addVars(n, model.lower[columns], model.upper[columns])
        h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), model.integer[columns])
        h.addRows(len(rows), model.kept_lower[rows], model.kept_upper[rows], sub.nnz,
                  sub.indptr[:-1].astype(np.int32), sub.indices.astype(np.int32), sub.data)
        self.linking = model.linking[:, columns]
        self.whole = True  # False: solved as an LP (its value is still under its MIP's)

    def solve(self, prices: np.ndarray, seconds: float, serve: bool = True,
              whole: bool | None = None):
        """(proven value, incumbent value, incumbent) at the prices, as a MIP if `whole`
        (default: the block's own `whole`); serve=False keeps every column that serves
        demand at 0 (all unmet: feasible under any capacity)."""
        h, n = self.highs, len(self.columns)
        whole = self.whole if whole is None else whole
        every = np.arange(n, dtype=np.int32)
        if not serve:
            upper = self.model.upper[self.columns].copy()
            upper[[self.model.names[j].startswith(SERVES) for j in self.columns]] = 0.0
            h.changeColsBounds(n, every, self.model.lower[self.columns], upper)
        h.changeColsCost(n, every, self.model.cost[self.columns] - self.linking.T @ prices)
        h.setOptionValue("time_limit", seconds if whole else INF)  # an LP stopped proves nothing
        h.setOptionValue("solve_relaxation", not whole)
        h.run()
        info = h.getInfo()
        x = np.array(h.getSolution().col_value)
        proven = info.mip_dual_bound if whole else info.objective_function_value
        found = info.primal_solution_status == 2  # a feasible plan of the block
        incumbent = info.objective_function_value if found else INF
        if not np.isfinite(proven):  # stopped before its root LP: the LP is the bound
            proven = self.solve(prices, seconds, serve, whole=False)[0]
        if not serve:
            h.changeColsBounds(n, every, self.model.lower[self.columns],
                               self.model.upper[self.columns])
        return proven, incumbent, x


class Master:
    """The Dantzig-Wolfe master: priced rows, one convexity row per block, the
    commitments, the blocks' columns, and box-step columns that keep its duals within
    `width` of a centre: relaxing row i costs (width − centre_i), using it
    min(0, centre_i + width)."""

    def __init__(self, model: Model):
        self.model, self.highs = model, new_highs()
        h, rows, blocks = self.highs, len(model.priced), len(model.blocks)
        empty = (np.zeros(1, np.int32), np.zeros(0, np.int32), np.zeros(0))
        h.addRows(rows, np.full(rows, -INF), model.capacity, 0, *empty)
        h.addRows(blocks, np.ones(blocks), np.ones(blocks), 0, *empty)
        for j in model.commitments:
            col = model.linking[:, j]
            h.addCol(model.cost[j], model.lower[j], model.upper[j], col.nnz,
                     col.indices.astype(np.int32), col.data)
        self.box = h.getNumCol() + np.arange(2 * rows, dtype=np.int32)
        for i in range(rows):
            for sign in (-1.0, 1.0):
                h.addCol(0.0, 0.0, INF, 1, np.array([i], np.int32), np.array([sign]))
        self.columns = 0

    def centre(self, prices: np.ndarray, width: np.ndarray) -> None:
        cost = np.empty(len(self.box))
        cost[0::2], cost[1::2] = width - prices, np.minimum(prices + width, 0.0)
        self.highs.changeColsCost(len(self.box), self.box, cost)

    def add(self, b: int, x: np.ndarray) -> None:
        block = self.model.blocks[b]
        use = block.linking @ x
        nz = np.flatnonzero(np.abs(use) > 1e-12)
        index = np.concatenate([nz, [len(self.model.priced) + b]]).astype(np.int32)
        self.highs.addCol(float(self.model.cost[block.columns] @ x), 0.0, INF, len(index),
                          index, np.concatenate([use[nz], [1.0]]))
        self.columns += 1

    def solve(self):
        """(value, the priced rows' duals ≤ 0, the convexity rows' duals, box in use)."""
        h = self.highs
        if h.run() != highspy.HighsStatus.kOk:  # a hot start can fail (24x12x12): cold
            h.clearSolver()
            h.run()
        assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal, h.getModelStatus()
        duals = np.array(h.getSolution().row_dual)
        rows = len(self.model.priced)
        in_use = float(np.array(h.getSolution().col_value)[self.box].sum())
        return (h.getInfo().objective_function_value + self.model.offset,
                np.minimum(0.0, duals[:rows]), duals[rows:], in_use)


def lp_relaxation(model: Model) -> tuple[float, np.ndarray]:
    """The whole model's LP relaxation: its value and its rows' duals."""
    h = model.highs
    h.setOptionValue("solve_relaxation", True)
    h.run()
    return h.getInfo().objective_function_value, np.array(h.getSolution().row_dual)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="an MPS file from planner solve --export-model")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--block-seconds", type=float, default=0.5,
                        help="each block MIP's limit (its proven bound is what counts)")
    parser.add_argument("--block-gap", type=float, default=1e-5)
    parser.add_argument("--integer-up-to", type=int, default=None,
                        help="keep whole replicas only in blocks of at most this many "
                             "columns; larger blocks are solved as LPs (still a valid bound)")
    parser.add_argument("--width", type=float, default=0.02,
                        help="the box's half-width, a share of each price (+1 %% of the mean)")
    args = parser.parse_args()
    started = time.perf_counter()
    model = Model(args.model)
    for block in model.blocks:
        block.highs.setOptionValue("mip_rel_gap", args.block_gap)
        block.whole = args.integer_up_to is None or len(block.columns) <= args.integer_up_to
    lp, duals = lp_relaxation(model)
    centre = np.minimum(0.0, duals[model.priced])
    print(f"{len(model.blocks)} blocks, {len(model.commitments)} commitments, "
          f"{len(model.priced)} priced rows; LP relaxation ${lp:,.2f}", flush=True)

    def price(prices):
        return [block.solve(prices, args.block_seconds) for block in model.blocks]

    master = Master(model)
    solved = price(centre)
    best = model.lagrangian(centre, [s[0] for s in solved])
    print(f"at the LP's duals ${best:,.2f} ({best / lp - 1:+.3%}) "
          f"{time.perf_counter() - started:.0f}s", flush=True)
    for b, block in enumerate(model.blocks):
        master.add(b, solved[b][2])
        master.add(b, block.solve(np.zeros(len(model.priced)), args.block_seconds,
                                  serve=False)[2])
    scale = 0.01 * np.abs(centre[centre < 0]).mean()
    share = args.width
    master.centre(centre, share * (np.abs(centre) + scale))
    for round_ in range(args.rounds):
        value, prices, convexity, boxed = master.solve()
        solved = price(prices)
        here = model.lagrangian(prices, [s[0] for s in solved])
        added = 0
        for b, (_, incumbent, x) in enumerate(solved):
            if incumbent - convexity[b] < -1e-7 * max(1.0, abs(convexity[b])):
                master.add(b, x)
                added += 1
        step = "null"
        if here > best + 1e-7 * abs(best):
            best, centre, step = here, prices, "serious"
        if added == 0 and boxed < 1e-9:
            print(f"converged: no block's best plan prices out and the box is idle, so the "
                  f"master's ${value:,.2f} is the Lagrangian dual (to the blocks' MIP gaps)")
            break
        if added == 0:
            share *= 4
        master.centre(centre, share * (np.abs(centre) + scale))
        print(f"round {round_}: master ${value:,.2f}, here ${here:,.2f}, best "
              f"${best:,.2f} ({best / lp - 1:+.3%} over the LP), {step}; {added} columns "
              f"added ({master.columns}), box {share:g} ({boxed:.3g} used) "
              f"{time.perf_counter() - started:.0f}s",
              flush=True)
    print(f"bound: ${best:,.2f}, {best / lp - 1:+.3%} over the LP relaxation")
    where_lifted(model, centre, args.block_seconds)


def where_lifted(model: Model, prices: np.ndarray, seconds: float) -> None:
    """Which blocks lift the bound at the best prices: each block's proven MIP value
    less its LP value there, the largest first, and how many blocks hold most of it."""
    lifts = []
    for block in model.blocks:
        lifts.append(block.solve(prices, seconds, whole=True)[0]
                     - block.solve(prices, seconds, whole=False)[0])
    lifts = np.sort(np.maximum(np.array(lifts), 0.0))[::-1]
    total = lifts.sum()
    held = np.cumsum(lifts) / max(total, 1e-9)
    print(f"whole replicas lift the blocks ${total:,.2f} at these prices; "
          + ", ".join(f"{share:.0%} of it in {int(np.searchsorted(held, share)) + 1} blocks"
                      for share in (0.5, 0.8, 0.95))
          + f" of {len(lifts)}; blocks lifted by over $1: {int((lifts > 1).sum())}")


if __name__ == "__main__":
    main()
