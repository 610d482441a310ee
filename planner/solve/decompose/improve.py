"""Fix and optimize: one pool in one month and segment planned again, exactly.

With everything else in the plan fixed — commitments, and every other pool's GPUs —
a pool's plan for one month and segment is a small MIP: its workloads' demand at each
site, served from the sources in reach (in the room the others left), in whole replicas
the pool's workloads share, spot within its share, or left unmet:

    min  Σ payg replicas · GPUs · price · hours + Σ units · egress + Σ unmet · penalty
    s.t. Σ_j x[w,s,j] + u[w,s] = level[w,s]                              demand
         Σ_{w,s} x[w,s,j] · GPUs per unit[j] / GPUs per replica ≤ n[src]   replicas
         n[src] ≤ room[src] / GPUs per replica                            capacity
         Σ_spot (1 − σ) x − Σ_other σ x ≤ 0                              spot share
         GPUs per replica · n[src] − size · i[src] ≤ −others' GPUs    whole instances
         n, i integer

(offers sold in instances of several GPUs: their price on the instances i, so a pool
fills what others left idle of an instance for nothing).

HiGHS solves it in milliseconds from the current plan; the pool keeps the new plan only
when it costs less. A node limit, not the clock, bounds each MIP, so the same rounds give
the same plan on any machine.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from planner.solve.decompose.construct import Draft, PoolPlan, cheaper
from planner.solve.highs import new_highs
from planner.solve.work import pool_mip_s

NODES = 1000  # branch-and-bound nodes per pool's MIP (they rarely need ten)
# A pool's MIP stops within the first of these gaps of its optimum until a pass at the
# widest choice finds nothing, then within the next: a loose gap makes passes quick
# (pool plans improve each other from pass to pass), a tight one finds what the loose
# ones leave. Default scenario, decomposition alone for 14 s / 45 s: 1e-3 alone $26.968 M
# / $26.782 M; 1e-2 $26.855 M / $26.788 M; 2e-2 $26.832 M, then nothing more (its
# passes find nothing by 14 s); 5e-2 $27.026 M (its MIPs stop before they beat the
# plan). Proving the last 0.1 % of each took a third of the time at 1e-7.
POOL_GAPS = (2e-2, 1e-3)
# Sources per demand site in a pool's MIP, pass after pass: those its plan uses and the
# cheapest others at the LP's prices. A wide choice finds more but costs more: the
# default scenario's largest pool (5 workloads, 24 sites, ~100 sources each) took
# 0.04 s a MIP with 6, 0.4 s with all; passes of 6, 12 and 30 ended 2.2 %, 2.0 % and
# 1.7 % over the LP bound (each alone, with the time it wanted). With the loose gap first
# (POOL_GAPS) the middle pass of 12 no longer pays: default scenario 14 s / 45 s, 6-12-30
# $26.832 M / $26.786 M, 6-30 $26.828 M / $26.775 M, 30 alone $26.810 M / $26.777 M;
# 50x40x24 at 40 s $55.993 M, $55.965 M, $55.967 M. A narrow first pass stays for
# large pools, whose MIPs over 30 sources a site take longest.
CHOICES = (6, 30)


class Tried:
    """Pools whose MIP found nothing, and what their slice looked like then. Such a MIP,
    over no more sources and within no tighter gap than HiGHS proved, would find nothing
    again while no pool of its (month, segment) slice changed (the room the others leave
    it) and no commitment was cut: 50x40x24's repeated widest passes solved ~3,500 of
    them in its 60 s."""

    def __init__(self):
        self.slices: dict[tuple[int, int], int] = defaultdict(int)  # changes per slice
        self.commitments = 0  # passes that cut commitments
        # (month, segment, pool) → (sources a site, gap proved, state) of its last MIP
        self.found_nothing: dict[tuple[int, int, str], tuple[int, float, tuple]] = {}

    def _state(self, m: int, k: int) -> tuple[int, int]:
        return self.slices[(m, k)], self.commitments

    def pointless(self, m: int, k: int, pool: str, choices: int, gap: float) -> bool:
        """Whether a MIP of `pool` in (m, k) would find nothing again."""
        seen = self.found_nothing.get((m, k, pool))
        return (seen is not None and seen[0] >= choices and seen[1] <= gap
                and seen[2] == self._state(m, k))

    def solved(self, m: int, k: int, pool: str, choices: int, cheaper: bool,
               proved: float) -> None:
        """`pool`'s MIP in (m, k) ran: its plan got `cheaper` (its slice changed), or
        found nothing within the gap `proved`."""
        if cheaper:
            self.slice_changed(m, k)
            self.found_nothing.pop((m, k, pool), None)
        else:
            self.found_nothing[(m, k, pool)] = (choices, proved, self._state(m, k))

    def slice_changed(self, m: int, k: int) -> None:
        self.slices[(m, k)] += 1

    def commitments_cut(self) -> None:
        self.commitments += 1


def replan_pool(draft: Draft, pool: str, m: int, k: int, choices: int = CHOICES[0],
                gap: float = POOL_GAPS[-1]) -> tuple[bool, float, float]:
    """Plan `pool` in (m, k) again, exactly (to within `gap` of its optimum), each site
    choosing among `choices` sources beside its own: whether its plan got cheaper, the
    gap HiGHS proved (inf: none), and the seconds its MIP is reckoned to have taken
    (planner.solve.work)."""
    current = draft.pools.get((m, k, pool))
    if current is None:
        return False, math.inf, 0.0
    mip = _PoolMip(draft, current, m, k)
    mip.demand(pool, choices)
    mip.replicas()
    solved = mip.solve(gap)
    if solved is None:
        return False, math.inf, mip.work_s
    plan, proved = solved
    plan.cost = draft.pool_cost(pool, m, k, plan)
    # the idle GPUs of part-used instances change with the pool's plan
    touched = sorted({row for row, _ in mip.instances.values()})
    before = current.cost + draft.idle_instances(touched, m, k)
    draft.set(pool, m, k, plan)
    if not cheaper(plan.cost + draft.idle_instances(touched, m, k), before):
        draft.set(pool, m, k, current)
        return False, proved, mip.work_s
    return True, proved, mip.work_s


class _PoolMip:
    """The MIP of one pool in one month and segment (the module's docstring), built
    row group by row group, solved from the pool's current plan."""

    def __init__(self, draft: Draft, current: PoolPlan, m: int, k: int):
        import highspy

        self.draft, self.current, self.m, self.k = draft, current, m, k
        self.hd = float(draft.b.hd[m, k])
        self.inf = highspy.kHighsInf
        self.cost: list[float] = []
        self.upper: list[float] = []
        self.integer: list[bool] = []
        self.rows: list[tuple[float, float, list]] = []  # (lower, upper, [(column, coef)])
        self.arcs: dict[int, tuple[int, int, int]] = {}  # column → (w, site, j)
        self.unmet: dict[int, tuple[int, int]] = {}  # column → (w, site)
        self.loads: dict[tuple, list] = {}  # source key → [(column, replicas a unit, level)]
        self.sample: dict[tuple, tuple[int, int]] = {}  # source key → a (w, j) using it
        self.spot: dict[int, list] = {}  # workload → its spot-share row's terms
        self.replica_cols: dict[int, tuple] = {}  # column → source key
        self.instances: dict[int, tuple[int, float]] = {}  # column → (row, start value)

    def _column(self, cost: float, upper: float, integer: bool = False) -> int:
        self.cost.append(cost)
        self.upper.append(upper)
        self.integer.append(integer)
        return len(self.cost) - 1

    def demand(self, pool: str, choices: int) -> None:
        """Each site's demand row: units from its sources (those its plan uses and the
        `choices` cheapest others), or unmet at the penalty."""
        d, m, k, hd = self.draft, self.m, self.k, self.hd
        for w in d.members[pool]:
            wb = d.b.workloads[w]
            for site in np.flatnonzero(wb.level[:, m, k] > 0).tolist():
                level = float(wb.level[site, m, k])
                terms = []
                usable = wb.reach[site] & d.allowed[w] & (wb.first <= m)
                for j in _choices(d, self.current, w, site, m, k, usable, choices):
                    c = self._column(float(wb.egress[j]) * hd, self.inf)
                    self.arcs[c] = (w, site, j)
                    terms.append((c, 1.0))
                    key = wb.sources[j]
                    per = float(wb.gpus_per_unit[j]) / float(wb.gpus_per_replica[j])
                    self.loads.setdefault(key, []).append((c, per, level))
                    self.sample.setdefault(key, (w, j))
                    if wb.limited_spot:
                        self.spot.setdefault(w, []).append(
                            (c, 1.0 - wb.spot_share if wb.spot[j] else -wb.spot_share))
                c = self._column(float(wb.penalty) * hd, self.inf)
                self.unmet[c] = (w, site)
                terms.append((c, 1.0))
                self.rows.append((level, level, terms))

    def replicas(self) -> None:
        """Per source the pool uses: whole replicas carrying its units, within the room
        the other pools left (and, for offers sold in instances, whole instances holding
        its GPUs and the others'); then the spot-share rows."""
        d, m, k, hd, inf = self.draft, self.m, self.k, self.hd, self.inf
        b = d.b
        for key, terms in self.loads.items():
            w, j = self.sample[key]
            wb = b.workloads[w]
            gpr = int(wb.gpus_per_replica[j])
            mine = self.current.replicas.get(key, 0) * gpr
            room = d.room(wb, j, m, k) + mine
            need = math.ceil(sum(per * level for _, per, level in terms) - 1e-9)
            upper = need if math.isinf(room) else min(need, int(math.floor(room + 1e-9)) // gpr)
            price = 0.0 if wb.committed_row[j] >= 0 else float(wb.price[j]) * gpr * hd
            row = b.instance_index.get(key[2])
            if row is not None:
                price = 0.0  # paid by the instances below
            c = self._column(price, float(max(upper, 0)), True)
            self.replica_cols[c] = key
            self.rows.append((-inf, 0.0, [(col, per) for col, per, _ in terms] + [(c, -1.0)]))
            if row is not None:
                # whole instances: the pool's GPUs and the other pools' in n · instances
                size = float(b.instance_size[row])
                others = float(d.used_instances[row, m, k]) - mine
                most = math.ceil((others + max(upper, 0) * gpr) / size - 1e-9)
                i = self._column(float(b.instance_rate[row]) * size * hd, float(most), True)
                self.instances[i] = (row, math.ceil((others + mine) / size - 1e-9))
                self.rows.append((-inf, -others, [(c, float(gpr)), (i, -size)]))
        for terms in self.spot.values():
            self.rows.append((-inf, 0.0, terms))

    def solve(self, gap: float) -> tuple[PoolPlan, float] | None:
        """HiGHS on the MIP from the current plan: the plan it ends with and the gap it
        proved (None: no feasible plan)."""
        import highspy

        h = new_highs()
        for option, value in (("random_seed", 0), ("threads", 1), ("mip_rel_gap", gap),
                              ("mip_max_nodes", NODES)):
            h.setOptionValue(option, value)
        n = len(self.cost)
        h.addCols(n, np.array(self.cost), np.zeros(n), np.array(self.upper), 0,
                  np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        ints = np.flatnonzero(self.integer).astype(np.int32)
        if len(ints):
            h.changeColsIntegrality(len(ints), ints,
                                    np.full(len(ints), highspy.HighsVarType.kInteger))
        starts, index, value = [], [], []
        for _, _, terms in self.rows:
            starts.append(len(index))
            for c, a in terms:
                index.append(c)
                value.append(a)
        h.addRows(len(self.rows), np.array([r[0] for r in self.rows]),
                  np.array([r[1] for r in self.rows]), len(index),
                  np.array(starts, dtype=np.int32), np.array(index, dtype=np.int32),
                  np.array(value))
        solution = highspy.HighsSolution()
        solution.col_value = self._start()
        h.setSolution(solution)
        h.run()
        self.work_s = pool_mip_s(n, h.getInfo().simplex_iteration_count)
        if h.getInfo().primal_solution_status != 2:
            return None
        x = np.asarray(h.getSolution().col_value)
        plan = PoolPlan(
            replicas={key: int(round(x[c])) for c, key in self.replica_cols.items()
                      if round(x[c]) > 0},
            served={key: float(x[c]) for c, key in self.arcs.items() if x[c] > 1e-9},
            unmet={key: float(x[c]) for c, key in self.unmet.items() if x[c] > 1e-9})
        return plan, float(h.getInfo().mip_gap)

    def _start(self) -> np.ndarray:
        """The current plan as the MIP's columns."""
        cur = self.current
        start = np.zeros(len(self.cost))
        for c, key in self.arcs.items():
            start[c] = cur.served.get(key, 0.0)
        for c, key in self.unmet.items():
            start[c] = cur.unmet.get(key, 0.0)
        for c, key in self.replica_cols.items():
            start[c] = cur.replicas.get(key, 0)
        for c, (_, value) in self.instances.items():
            start[c] = value
        return start


def _choices(draft: Draft, current: PoolPlan, w: int, site: int, m: int, k: int,
             usable: np.ndarray, choices: int) -> list[int]:
    """The sources a site's demand may use in its pool's MIP: those the current plan
    uses, and the `choices` cheapest others at the prices."""
    used = {j for (ww, s, j) in current.served if ww == w and s == site}
    cost = np.where(usable, draft.priced[w][:, m, k], np.inf)
    order = np.argsort(cost, kind="stable")[:choices]
    return sorted(used | {int(j) for j in order if np.isfinite(cost[j])})
