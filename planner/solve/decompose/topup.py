"""Commitments topped up to the plan's whole replicas (fix and optimize over commitments).

The commitments come from the master LP, which packs fractional replicas onto committed
GPUs. A plan in whole replicas needs more room there: a replica a pool fills in part
takes its GPUs all the same (200x40x24's off-peak segment: 3 % of its committed
replicas' room empty), and the load that no longer fits is served pay-as-you-go at the
same region and GPU type. Where a commitment's price is below the pay-as-you-go it would
displace over its term, signing more of it pays. The plan at first prices signs none
where pay-as-you-go can serve (`_Run.greedy`): there the top-up is what signs them.

For each (region, GPU type) whose plan pays for pay-as-you-go GPUs beside its
commitments, a small LP says how many GPUs each of its commitments could add:

    min  Σ_n cost[n] · x[n] − Σ_{m,k,t} price[t] · hours[m,k] · z[m,k,t]
    s.t. Σ_t z[m,k,t] ≤ idle[m,k] + Σ_{n active in m} x[n]      (the room it leaves)
         0 ≤ z[m,k,t] ≤ the plan's pay-as-you-go GPUs at price t in (m, k)
         0 ≤ x[n] ≤ upper[n] − signed[n]

(the dearest pay-as-you-go GPUs displaced first), and for an offer with a monthly
max_gpus, Σ of its commitments active in each month ≤ the cap less what it holds. Its
x, in whole instances
(rounded down; below an offer's minimum, none), is a proposal only: it is signed, the
pools' pay-as-you-go replicas there move onto the committed room it makes (`onto_committed`:
the dearest sources first, as much of each as fits), and it stays only if the plan is then
cheaper (`sign_if_cheaper`; run by planner.solve.decompose.method, `_Run.top_up`).

Measured on 200x40x24's plan after 45 s (stop 47): the LP offered $0.63 M at one pair;
planned again by the pools' MIPs (over 30 sources a site: 2,076 of them, 40 s) the top-up
saved $0.26 M; with 6 sources a site, the MIPs left the new room unused and it cost $0.15 M.
Moving the replicas directly takes no MIP.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from planner.model.builder import COMMITTED
from planner.solve.decompose.construct import EPS, Draft, PoolPlan, cheaper
from planner.solve.highs import new_highs


def payg_beside_commitments(draft: Draft) -> dict[int, tuple[dict, dict]]:
    """Per committed pair (row) where the plan pays for pay-as-you-go GPUs of the same
    region and GPU type: those GPUs, (month, segment, price per GPU-hour) → GPUs, and
    the pools that pay for them, (month, segment) → pools."""
    b = draft.b
    gpus: dict[int, dict] = defaultdict(lambda: defaultdict(float))
    payers: dict[int, dict] = defaultdict(lambda: defaultdict(set))
    for (m, k, pool), plan in draft.pools.items():
        for (r, g, src), n in plan.replicas.items():
            row = b.committed_index.get((r, g))
            if src == COMMITTED or n <= 0 or row is None:
                continue
            price = b.builder.payg_offer[src].usd_per_gpu_hour
            gpus[row][(m, k, price)] += n * b.builder.gpus_per_replica[(pool, g)]
            payers[row][(m, k)].add(pool)
    return {row: (dict(gpus[row]), dict(payers[row])) for row in sorted(gpus)}


def proposed_top_up(draft: Draft, row: int,
                    payg: dict[tuple, float]) -> dict[int, float]:
    """Commitment n → GPUs to add at committed pair `row` (whole instances), from the LP
    above over the plan's pay-as-you-go GPUs `payg` there ((month, segment, price) →
    GPUs); empty where adding pays nothing."""
    b = draft.b
    cm = b.commitments
    options = [n for n in np.flatnonzero(cm.committed_row == row).tolist()
               if cm.upper[n] - draft.commit[n] >= cm.step[n]]
    if not options or not payg:
        return {}
    tiers = sorted(payg)
    cells = sorted({(m, k) for m, k, _ in tiers})
    at = {cell: i for i, cell in enumerate(cells)}
    nx = len(options)
    cost = [float(cm.cost[n]) for n in options] + [-p * float(b.hd[m, k]) for m, k, p in tiers]
    upper = [float(cm.upper[n] - draft.commit[n]) for n in options] + [payg[t] for t in tiers]
    rows = [[] for _ in cells]  # per cell: (column, coefficient)
    for j, n in enumerate(options):
        start, end = int(cm.start[n]), int(cm.start[n] + cm.months[n])
        for (m, k), i in at.items():
            if start <= m < end:
                rows[i].append((j, -1.0))
    for t, (m, k, _) in enumerate(tiers):
        rows[at[(m, k)]].append((nx + t, 1.0))
    idle = [max(0.0, float(draft.committed[row, m] - draft.used_committed[row, m, k]))
            for m, k in cells]
    capped, room = _cap_rows(draft, options)
    x = _solve(cost, upper, rows + capped, idle + room)[:nx]
    adds = {}
    for n, gpus in zip(options, x):
        step = float(cm.step[n])
        add = math.floor(gpus / step + 1e-6) * step
        if draft.commit[n] == 0 and add < cm.min_gpus[n]:
            add = 0.0
        if add > 0:
            adds[n] = add
    return adds


def _cap_rows(draft: Draft, options: list[int]) -> tuple[list[list], list[float]]:
    """The rows that keep GPUs added to `options` (commitments) within their offers'
    monthly max_gpus: per capped offer and month, Σ of its options active then ≤ the
    cap less what the plan's commitments of that offer hold then ((column,
    coefficient) lists, and their right-hand sides)."""
    cm = draft.b.commitments
    offers = sorted({int(cm.cap_row[n]) for n in options if cm.cap_row[n] >= 0})
    rows, room = [], []
    if not offers:
        return rows, room
    among = np.flatnonzero(np.isin(cm.cap_row, offers))
    column = {n: j for j, n in enumerate(options)}
    for cap, on in cm.cap_rows(draft.b.months, among):
        active = among[on]
        columns = [column[n] for n in active.tolist() if n in column]
        if columns:
            rows.append([(j, 1.0) for j in columns])
            room.append(max(0.0, cap - float(draft.commit[active].sum())))
    return rows, room


def _solve(cost: list[float], upper: list[float], rows: list[list[tuple[int, float]]],
           rhs: list[float]) -> np.ndarray:
    """min cost · v over 0 ≤ v ≤ upper, each row Σ coefficient · v ≤ rhs (HiGHS, one
    thread, from scratch: the same answer on every run)."""
    import highspy

    h = new_highs()  # prints nothing
    h.setOptionValue("threads", 1)
    n = len(cost)
    h.addVars(n, np.zeros(n), np.asarray(upper, dtype=float))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), np.asarray(cost, dtype=float))
    for row, bound in zip(rows, rhs):
        index = np.array([c for c, _ in row], dtype=np.int32)
        value = np.array([v for _, v in row], dtype=float)
        h.addRow(-highspy.kHighsInf, bound, len(index), index, value)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return np.zeros(n)
    return np.asarray(h.getSolution().col_value)


def sign_if_cheaper(draft: Draft, row: int, adds: dict[int, float], payers: dict) -> int:
    """Sign `adds` (commitment n → GPUs, `proposed_top_up`) at committed pair `row`,
    move the pay-as-you-go replicas of the months they cover onto them
    (`onto_committed`), and keep all that only if the plan is then cheaper; else the
    commitments and every pool's plan there are put back. `payers`: (month, segment) →
    the pools paying for pay-as-you-go GPUs there. Returns the moves tried (as
    `onto_committed`)."""
    cm = draft.b.commitments
    active = cm.active_months(draft.b.months, np.array(sorted(adds), dtype=int))
    months = set(np.flatnonzero(active.any(axis=0)).tolist())
    cells = sorted(cell for cell in payers if cell[0] in months)
    before = draft.running_cost()
    kept = {(m, k, pool): draft.pools[(m, k, pool)] for m, k in cells
            for pool in sorted(payers[(m, k)]) if (m, k, pool) in draft.pools}
    for n, gpus in adds.items():
        draft.add_commit(n, gpus)
    moves = onto_committed(draft, row, cells, payers)
    if not cheaper(draft.running_cost(), before):
        for n, gpus in adds.items():
            draft.add_commit(n, -gpus)
        for (m, k, pool), plan in kept.items():
            draft.set(pool, m, k, plan)
    return moves


def onto_committed(draft: Draft, row: int, cells, payers: dict) -> int:
    """Pay-as-you-go replicas at committed pair `row`'s region and GPU type moved onto its
    committed GPUs left idle, in each (month, segment) of `cells`: a pool's source at a
    time, the dearest first, as much of its load as the committed replicas that room
    holds (with the spare room of those the pool runs there) can carry (`_moved`); kept
    where the plan gets cheaper. `payers`: (month, segment) → the pools paying for
    pay-as-you-go GPUs there. Returns the moves tried (what its time goes by)."""
    b = draft.b
    r, g = b.committed_pairs[row]
    tried = 0
    for m, k in cells:
        moves = []
        for pool in sorted(payers.get((m, k), ())):
            plan = draft.pools.get((m, k, pool))
            if plan is None:
                continue
            for key, n in sorted(plan.replicas.items()):
                if key[:2] == (r, g) and key[2] != COMMITTED and n > 0:
                    price = b.builder.payg_offer[key[2]].usd_per_gpu_hour
                    moves.append((-price, pool, key))
        tried += len(moves)
        for _, pool, key in sorted(moves):
            room = max(0.0, draft.committed[row, m] - draft.used_committed[row, m, k])
            old = draft.pools[(m, k, pool)]
            new = _moved(draft, old, key, room)
            if new is None:
                continue
            new.cost = draft.pool_cost(pool, m, k, new)
            before = draft.running_cost()
            draft.set(pool, m, k, new)
            if not cheaper(draft.running_cost(), before):
                draft.set(pool, m, k, old)
    return tried


def _moved(draft: Draft, plan, key: tuple, room: float):
    """A copy of pool `plan` with the units its replicas at pay-as-you-go source `key`
    serve moved, as far as they fit, to the committed source of the same region and GPU
    type: into the spare room of the committed replicas the pool runs there and the
    whole replicas `room` idle GPUs hold (at the committed source's GPUs per unit); what
    does not fit stays at `key`, in the replicas it still needs. None where a workload
    may not use the committed source, or nothing moves."""
    b = draft.b
    r, g, _ = key
    committed = (r, g, COMMITTED)
    at_key = []  # (w, site, j at key, j committed, units)
    load = 0.0  # the pool's committed load there, in replicas
    gpr = None
    for (w, site, j), units in sorted(plan.served.items()):
        wb = b.workloads[w]
        if wb.sources[j] not in (key, committed):
            continue
        c = wb.index_of.get(committed)
        if c is None or not draft.allowed[w][c]:
            return None
        gpr = int(wb.gpus_per_replica[c])
        if wb.sources[j] == committed:
            load += units * wb.gpus_per_unit[c] / gpr
        else:
            at_key.append((w, site, j, c, units))
    if not at_key:
        return None
    have = plan.replicas.get(committed, 0)
    free = have + math.floor(room / gpr + 1e-9) - load  # committed replicas' room left
    served = dict(plan.served)
    left = 0.0  # the load left at `key`, in its replicas
    moved = 0.0
    for w, site, j, c, units in at_key:
        wb = b.workloads[w]
        per = wb.gpus_per_unit[c] / gpr  # committed replicas a unit takes
        take = min(units, max(0.0, free) / per)
        free -= take * per
        if take > EPS:
            moved += take
            load += take * per
            served[(w, site, c)] = served.get((w, site, c), 0.0) + take
            if units - take > EPS:
                served[(w, site, j)] = units - take
            else:
                del served[(w, site, j)]
        left += max(0.0, units - take) * wb.gpus_per_unit[j] / gpr
    if moved <= EPS:
        return None
    replicas = {s: n for s, n in plan.replicas.items() if s != key}
    replicas[committed] = max(have, math.ceil(load - 1e-9))
    if math.ceil(left - 1e-9) > 0:
        replicas[key] = math.ceil(left - 1e-9)
    return PoolPlan(replicas=replicas, served=served, unmet=dict(plan.unmet))
