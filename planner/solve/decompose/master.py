"""The restricted master LP and the Lagrangian bound.

The master is the model's LP relaxation over the columns generated so far, with replicas
continuous (a pool's replicas then carry exactly its loads, so they need no columns):

    arc  x[w,s,j,m,k] ≥ 0   units of workload w at site s served by source j
    unmet u[w,s,m,k] ≥ 0    at the penalty;  commit[n] in [lower, upper]
    block α[w,i] ≥ 0        plan i of a single-region workload w over the horizon

    demand       Σ_j x[w,s,j,m,k] + u[w,s,m,k] = level                 per w, s, m, k
    spot share   Σ_spot (1 − σ) x − Σ_other σ x ≤ 0                    per w, m, k
    capacity     Σ GPUs per unit · x + Σ GPUs · α ≤ max_gpus           capped offer, m, k
    committed    Σ GPUs per unit · x + Σ GPUs · α − Σ_active commit ≤ existing   (r, g), m, k
    commitments  Σ_{starts active in m} commit ≤ max_gpus              capped offer, m
    convexity    Σ_i α[w,i] = 1                                       single-region w

A single-region workload is one block over the whole horizon (its plans choose one
region and GPU type, which arcs could not express); every other workload is priced arc
by arc. Capacity rows join when a column first uses them; arcs that stay out of the
basis leave (`Master.drop_idle`).

For any prices y ≥ 0 on the capacity rows — the master's duals or any other — the
Lagrangian function

    L(y) = constant + Σ_blocks min (cost + y · GPUs) + min_commit Σ (cost_n − Σ y) commit_n
           − Σ y · max_gpus − Σ y · existing

is a lower bound on every plan (weak duality): each block's minimum is its LP, in closed
form (planner.solve.decompose.pricing), so the bound is valid after any round; at the master's
optimal duals, once no column prices out, it equals the LP relaxation.
"""

from __future__ import annotations

import numpy as np

from planner.solve.decompose.blocks import Blocks
from planner.solve.decompose.pricing import Priced, Rows
from planner.solve.highs import new_highs

# An arc out of the basis in IDLE_ROUNDS optimal master solves in a row leaves the master
# (Master.drop_idle): the primal simplex prices every column at every iteration (at
# 200x40x24 1.1 ms an iteration with 770 k arcs), and most arcs generated in the first
# rounds never enter. Most of them sit at a reduced cost of 0 (the master is highly
# dual degenerate), so none is kept for its reduced cost. 200x40x24, column generation
# to a bound of 251.3-251.8 M: all kept 42 s (round 7); out after 2 solves 27 s (round
# 9); after 3, 34 s (round 9); after 1, the bound stalls at 249.6 M (arcs leave and
# come back).
IDLE_ROUNDS = 2
# Columns added since the last solve enter at 0: the basis stays primal feasible, and the
# primal simplex pivots in those that price out - some pivots per new column, each
# pricing every column of the master. With MANY_NEW new columns or more the dual simplex
# from the same basis gets there sooner (its iterations are cheaper on a large master).
# 200x40x24, solve seconds primal / dual: 200 k new 4.3 / 3.6; 82 k 2.6 / 2.1; 44 k
# 1.9 / 1.8; 31 k 1.3 / 1.5; 13 k 0.8 / 1.2. 1000x100x36's second round (300 k joining
# 1.6 M): primal 50 k iterations in 110-256 s, dual 315 k in 91 s. 50x40x24, a few
# single-region plans joining 400 k arcs: primal 0.8 s, dual 3.7 s.
MANY_NEW = 50_000


class Master:
    def __init__(self, blocks: Blocks, rows: Rows):
        import highspy

        self.inf = highspy.kHighsInf
        self.blocks, self.rows = blocks, rows
        self.h = h = new_highs()
        h.setOptionValue("random_seed", 0)
        # one thread: HiGHS's path through a degenerate LP, and so the plan, may change
        # with the thread count (`--threads` is for models solved whole)
        h.setOptionValue("threads", 1)
        cm = blocks.commitments
        self.n_commit = len(cm.offer)
        self.of_pair: dict[int, np.ndarray] = {}  # (region, GPU type) → its commitments
        for row in np.unique(cm.committed_row).tolist():
            self.of_pair[row] = np.flatnonzero(cm.committed_row == row)
        self.n_cols = 0
        self._add_cols(cm.cost, cm.lower, cm.upper, [[] for _ in range(self.n_commit)])
        self.n_rows = 0
        self.row_key: list[int] = []  # capacity row key of each master row (−1: other)
        # master row of each capacity row key (−1: not yet in the master)
        self.row_of = np.full(rows.count, -1, dtype=np.int64)
        for cap, active in cm.cap_rows(blocks.months):
            if len(active) > 1 or cm.upper[active[0]] > cap:  # else the bound holds it
                self._add_row(-self.inf, cap, active, np.ones(len(active)))
        # demand rows with their unmet columns; spot-share rows; convexity rows
        self.demand_row: dict[int, np.ndarray] = {}  # workload → [S, M, K] row or −1
        self.spot_row: dict[int, np.ndarray] = {}  # workload → [M, K] row or −1
        self.block_row: dict[int, int] = {}  # single-region workload → its convexity row
        hd = blocks.hd
        for w, wb in enumerate(blocks.workloads):
            if wb.single_region:
                self.block_row[w] = self._add_row(1.0, 1.0, [], [])
                unmet = float((wb.level * (wb.penalty * hd)[None]).sum())
                self._add_cols([unmet], [0.0], [self.inf], [[(self.block_row[w], 1.0)]])
                continue
            rows_of = np.full(wb.level.shape, -1, dtype=np.int64)
            cells = np.nonzero(wb.level > 0)
            levels = wb.level[cells]
            n = len(levels)
            rows = self._add_rows(levels, levels)
            rows_of[cells] = rows
            self.demand_row[w] = rows_of
            # each demand row's unmet column, at the penalty
            self.h.addCols(n, wb.penalty * hd[cells[1], cells[2]], np.zeros(n),
                           np.full(n, self.inf), n, np.arange(n, dtype=np.int32),
                           rows.astype(np.int32), np.ones(n))
            self.n_cols += n
            if wb.limited_spot:
                spot = np.full(wb.level.shape[1:], -1, dtype=np.int64)
                cells = np.nonzero(wb.level.sum(axis=0) > 0)
                n = len(cells[0])
                spot[cells] = self._add_rows(np.full(n, -self.inf), np.zeros(n))
                self.spot_row[w] = spot
        # the arcs and single-region plans in the master, in column order after the above
        self.first_generated = self.n_cols
        self.arcs: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]] = []
        self.plans: list[tuple[int, Priced, int]] = []  # (workload, plan, column)
        self.solution = None
        self.basis = None  # (column statuses, row statuses) of the last optimal solve
        # per column: the optimal solves in a row that left it out of the basis; and the
        # columns of arcs that left once and came back (they stay), those of the
        # latest rounds still in parts (gathered when the basis is next read)
        self.idle = np.zeros(0, dtype=np.int32)
        self.stay_cols = np.zeros(0, dtype=np.int64)
        self._came_back: list[np.ndarray] = []
        self.gone: dict[int, np.ndarray] = {}  # workload → keys of arcs that left (sorted)

    # -- building ----------------------------------------------------------------------------
    def _add_row(self, lower, upper, cols, values, key: int = -1) -> int:
        self.h.addRow(lower, upper, len(cols), np.asarray(cols, dtype=np.int32),
                      np.asarray(values, dtype=float))
        self.row_key.append(key)
        self.n_rows += 1
        return self.n_rows - 1

    def _add_rows(self, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """Empty rows (their entries come with the columns); returns their indexes."""
        n = len(lower)
        self.h.addRows(n, np.asarray(lower, dtype=float), np.asarray(upper, dtype=float), 0,
                       np.zeros(n, dtype=np.int32), np.zeros(0, dtype=np.int32),
                       np.zeros(0))
        self.row_key.extend([-1] * n)
        self.n_rows += n
        return np.arange(self.n_rows - n, self.n_rows)

    def _add_cols(self, cost, lower, upper, entries: list[list[tuple[int, float]]]) -> None:
        starts, index, value = [], [], []
        for col in entries:
            starts.append(len(index))
            for row, a in col:
                index.append(row)
                value.append(a)
        n = len(entries)
        self.h.addCols(n, np.asarray(cost, dtype=float), np.asarray(lower, dtype=float),
                       np.asarray(upper, dtype=float), len(index),
                       np.array(starts, dtype=np.int32), np.array(index, dtype=np.int32),
                       np.array(value, dtype=float))
        self.n_cols += n

    def capacity_rows(self, keys: np.ndarray) -> np.ndarray:
        """The master rows of capacity row `keys`, adding those not yet there."""
        missing = np.unique(keys[self.row_of[keys] < 0])
        b, rows = self.blocks, self.rows
        per = rows.months * rows.segments
        cm = b.commitments
        payg = missing[missing < rows.payg]  # capped offers' rows: no entries of their own
        if len(payg):
            self.row_of[payg] = self._add_rows(np.full(len(payg), -self.inf),
                                               b.payg_cap[payg // per])
            self.row_key[-len(payg):] = payg.tolist()
        committed = missing[missing >= rows.payg]
        if len(committed):
            # a committed row holds its (region, GPU type)'s commitments active that
            # month; all added in one call (one at a time, 1.8 s a round at 200x40x24)
            upper, starts, index, count = [], [], [], 0
            for key in committed.tolist():
                pair, cell = divmod(key - rows.payg, per)
                month = cell // rows.segments
                mine = self.of_pair.get(pair, np.zeros(0, dtype=np.int64))
                active = mine[(cm.start[mine] <= month)
                              & (month < cm.start[mine] + cm.months[mine])]
                upper.append(float(b.existing[pair, month]))
                starts.append(count)
                index.append(active)
                count += len(active)
            index = np.concatenate(index).astype(np.int32)
            n = len(committed)
            self.h.addRows(n, np.full(n, -self.inf), np.array(upper), len(index),
                           np.array(starts, dtype=np.int32), index, -np.ones(len(index)))
            self.row_of[committed] = np.arange(self.n_rows, self.n_rows + n)
            self.row_key.extend(committed.tolist())
            self.n_rows += n
        return self.row_of[keys]

    def add_arcs(self, w: int, site, source, month, segment) -> int:
        """Arc columns of workload `w` (arrays of the same length)."""
        n = len(site)
        if not n:
            return 0
        b = self.blocks
        wb = b.workloads[w]
        gpus = wb.gpus(source, month, segment)
        true = (wb.price[source] * gpus + wb.egress[source]) * b.hd[month, segment]
        key = self.rows.key(wb.payg_row[source], wb.committed_row[source], month, segment)
        cap = np.full(n, -1, dtype=np.int64)
        has = key >= 0
        cap[has] = self.capacity_rows(key[has])
        demand = self.demand_row[w][site, month, segment]
        spot = self.spot_row.get(w)
        # every column: its demand row, its capacity row (if any), its spot-share row (if
        # the workload has one), in that order
        parts_row = [demand, cap]
        parts_value = [np.ones(n), gpus]
        if spot is not None:
            parts_row.append(spot[month, segment])
            parts_value.append(np.where(wb.spot[source], 1.0 - wb.spot_share, -wb.spot_share))
        rows = np.stack(parts_row, axis=1)  # [n, entries]
        values = np.stack(parts_value, axis=1)
        keep = rows >= 0
        counts = keep.sum(axis=1)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)
        self.arcs.append((w, site, source, month, segment, self.n_cols))
        if w in self.gone:
            back = np.isin(arc_key(wb, b, site, source, month, segment), self.gone[w])
            if back.any():
                self._came_back.append(self.n_cols + np.flatnonzero(back))
        self.h.addCols(n, true.astype(float), np.zeros(n), np.full(n, self.inf),
                       int(counts.sum()), starts, rows[keep].astype(np.int32),
                       values[keep].astype(float))
        self.n_cols += n
        return n

    def add_plan(self, w: int, plan: Priced) -> None:
        """A single-region workload's plan (one block column)."""
        rows = self.capacity_rows(plan.entry_row) if len(plan.entry_row) else []
        col = [(self.block_row[w], 1.0)] + [(int(r), float(g))
                                            for r, g in zip(rows, plan.entry_gpus)]
        self.plans.append((w, plan, self.n_cols))
        self._add_cols([float(plan.cost[0])], [0.0], [self.inf], [col])

    # -- solving -----------------------------------------------------------------------------
    def solve(self, seconds: float | None = None, wall: float | None = None) -> bool:
        """Solve the master LP (from the last basis); False if HiGHS stopped short: at
        the simplex iterations `seconds` of work hold (planner.solve.work.lp_s), or at
        `wall` seconds on the wall clock (a safety stop), or far past its reckoning
        (planner.solve.work.wall_stop_s). `work_s`: its reckoning; stopped either way,
        all it was given (the same on every run, unless a faster machine would have
        ended it)."""
        import highspy

        from planner.solve.work import lp_iterations_within, lp_s, wall_stop_s

        h = self.h
        primal = self._primal()
        h.setOptionValue("simplex_strategy", 4 if primal else 1)
        nonzeros, columns, rows = h.getNumNz(), h.getNumCol(), h.getNumRow()
        h.setOptionValue("simplex_iteration_limit", 2**31 - 1 if seconds is None else
                         lp_iterations_within(seconds, nonzeros, columns, rows, primal))
        if seconds is not None:  # an LP far slower than reckoned stops all the same
            wall = min(wall if wall is not None else float("inf"), wall_stop_s(seconds))
        # HiGHS's clock runs on across runs of one instance: the limit is on its total
        h.setOptionValue("time_limit", h.getRunTime() + max(0.1, wall)
                         if wall is not None else float("inf"))
        h.run()
        self.work_s = lp_s(h.getInfo().simplex_iteration_count, nonzeros, columns, rows,
                           primal)
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            if seconds is not None:
                self.work_s = seconds
            self.restart()
            return False
        basis = h.getBasis()
        self.basis = (list(basis.col_status), list(basis.row_status))
        sol = h.getSolution()
        self.solution = sol
        self.objective = h.getInfo().objective_function_value + self.blocks.constant
        self.duals = np.asarray(sol.row_dual)
        self.values = np.asarray(sol.col_value)
        self._count_idle()
        y = np.zeros(self.rows.count)
        keys = np.asarray(self.row_key)
        cap = keys >= 0
        y[keys[cap]] = np.maximum(-self.duals[cap], 0.0)
        shape = (-1, self.rows.months, self.rows.segments)
        self.y_payg = y[:self.rows.payg].reshape(shape)
        self.y_committed = y[self.rows.payg:].reshape(shape)
        return True

    def _primal(self) -> bool:
        """Whether the next solve goes on from the last basis with the primal simplex,
        else with the dual simplex (MANY_NEW; from the basis, if there is one)."""
        return self.basis is not None and self.n_cols - len(self.basis[0]) < MANY_NEW

    def _count_idle(self) -> None:
        """Count, per arc, the optimal solves in a row that left it out of the basis."""
        import highspy

        basic = highspy.HighsBasisStatus.kBasic
        out = np.array([x != basic for x in self.basis[0]])
        out[:self.first_generated] = False  # commitments and unmet demand stay
        for _, _, col in self.plans:
            out[col] = False
        out[self._stays()] = False
        idle = np.zeros(self.n_cols, dtype=np.int32)
        idle[:len(self.idle)] = self.idle
        self.idle = np.where(out, idle + 1, 0).astype(np.int32)

    def _stays(self) -> np.ndarray:
        """The columns of arcs that came back (they stay), sorted."""
        if self._came_back:
            self.stay_cols = np.concatenate([self.stay_cols, *self._came_back])
            self._came_back = []
        return self.stay_cols

    def drop_idle(self) -> int:
        """Arcs out of the basis in IDLE_ROUNDS optimal solves in a row leave the master
        (how many). One that prices out again later comes back as a new column, and
        stays (arcs leaving and coming back round after round kept 200x40x24's master
        from converging); the Lagrangian bound does not depend on which columns the
        master holds."""
        drop = self.idle >= IDLE_ROUNDS
        if not drop.any():
            return 0
        cols = np.flatnonzero(drop)
        self.h.deleteCols(len(cols), cols.astype(np.int32))
        before = np.cumsum(drop) - drop  # columns dropped before each column
        arcs = []
        b = self.blocks
        for w, site, source, month, segment, col in self.arcs:
            keep = ~drop[col:col + len(site)]
            if not keep.all():
                key = arc_key(b.workloads[w], b, site[~keep], source[~keep], month[~keep],
                              segment[~keep])
                self.gone[w] = np.union1d(self.gone.get(w, key[:0]), key)
            if keep.any():
                arcs.append((w, site[keep], source[keep], month[keep], segment[keep],
                             int(col - before[col])))
        self.arcs = arcs
        self.plans = [(w, plan, int(col - before[col])) for w, plan, col in self.plans]
        keep = ~drop
        self.values = self.values[keep]
        self.idle = self.idle[keep]
        stays = self._stays()  # never idle, so never dropped: only renumbered
        self.stay_cols = stays - before[stays]
        if self.basis is not None:
            statuses, rows = self.basis
            self.basis = ([x for x, k in zip(statuses, keep.tolist()) if k], rows)
        self.n_cols -= len(cols)
        return len(cols)

    def restart(self) -> None:
        """The next solve starts from the last optimal basis (columns added since at
        their lower bound, rows added since basic) and nothing else HiGHS kept. Called
        after a solve the clock stopped and at the end of every step of the method, so
        that a run's rounds replayed without a clock give the same LP solutions (a solve
        goes on from HiGHS's last state within a step: 35 % faster at 50x40x24)."""
        import highspy

        if self.basis is None:
            self.h.clearSolver()
            return
        cols, rows = self.basis
        basis = highspy.HighsBasis()
        basis.col_status = cols + [highspy.HighsBasisStatus.kLower] * (self.n_cols - len(cols))
        basis.row_status = rows + [highspy.HighsBasisStatus.kBasic] * (self.n_rows - len(rows))
        basis.valid = True
        self.h.setBasis(basis)

    def column_values(self, col: int, n: int = 1) -> np.ndarray:
        """The last solve's values of columns col … col + n − 1 (0 for columns added
        since: they were not in that LP)."""
        out = np.zeros(n)
        have = self.values[col:col + n]
        out[:len(have)] = have
        return out

    def demand_duals(self, w: int) -> np.ndarray:
        rows = self.demand_row[w]
        return np.where(rows >= 0, self.duals[np.maximum(rows, 0)], 0.0)

    def spot_duals(self, w: int) -> np.ndarray | None:
        rows = self.spot_row.get(w)
        return None if rows is None else np.where(rows >= 0, self.duals[np.maximum(rows, 0)],
                                                  0.0)

    def plan_reduced_cost(self, w: int, plan: Priced) -> float:
        y = np.concatenate([self.y_payg.ravel(), self.y_committed.ravel()])
        return (float(plan.cost[0]) + float((y[plan.entry_row] * plan.entry_gpus).sum())
                - float(self.duals[self.block_row[w]]))


def arc_key(wb, blocks: Blocks, site, source, month, segment) -> np.ndarray:
    """One integer per arc of workload `wb`, the same for the same arc."""
    return ((site.astype(np.int64) * len(wb.sources) + source) * blocks.months + month) \
        * blocks.segments + segment


class CommitmentPart:
    """min Σ (cost_n − Σ_{m active, k} y[r,g,m,k]) · commit_n over the commitments'
    bounds and their offers' monthly max_gpus: the commitments' share of L(y)."""

    def __init__(self, blocks: Blocks):
        cm = self.cm = blocks.commitments
        self.active = cm.active_months(blocks.months)  # [n, m]
        self.capped = np.flatnonzero(cm.cap_row >= 0)
        self.lp = None
        if len(self.capped):
            import highspy

            h = self.lp = new_highs()
            h.setOptionValue("random_seed", 0)
            h.setOptionValue("threads", 1)
            idx = self.capped
            h.addCols(len(idx), np.zeros(len(idx)), cm.lower[idx], cm.upper[idx], 0,
                      np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
            for cap, cols in cm.cap_rows(blocks.months, idx):
                h.addRow(-highspy.kHighsInf, cap, len(cols), cols.astype(np.int32),
                         np.ones(len(cols)))

    def cost_gain(self, y_committed: np.ndarray) -> np.ndarray:
        per_month = y_committed.sum(axis=2)  # a committed GPU is there in every segment
        return (self.active * per_month[self.cm.committed_row]).sum(axis=1)

    def reduced_costs(self, y_committed: np.ndarray) -> np.ndarray:
        return self.cm.cost - self.cost_gain(y_committed)

    def optimum(self, y_committed: np.ndarray) -> tuple[float, np.ndarray]:
        """The commitments' share of L(y) and the GPUs it signs on each commitment."""
        cm = self.cm
        rc = self.reduced_costs(y_committed)
        q = np.where(rc < 0, cm.upper, cm.lower).astype(float)
        if self.lp is not None:
            idx = self.capped
            self.lp.changeColsCost(len(idx), np.arange(len(idx), dtype=np.int32), rc[idx])
            self.lp.run()
            q[idx] = np.asarray(self.lp.getSolution().col_value)
        return float((rc * q).sum()), q

    def supply(self, q: np.ndarray, existing: np.ndarray) -> np.ndarray:
        """[pairs, M] committed GPUs of each (region, GPU type) and month: the existing
        ones and `q` signed on each commitment."""
        out = existing.copy()
        np.add.at(out, self.cm.committed_row, self.active * q[:, None])
        return out
