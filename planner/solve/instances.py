"""Offers sold in whole instances (SPEC §2 v2: gpus_per_instance) in a decomposed plan.

The decomposition's bound prices GPUs one by one (a relaxation of whole instances, so it
stays valid); its plan signs commitments in whole instances and pays pay-as-you-go GPUs
in whole instances, its fix and optimize filling what one pool leaves idle of an
instance with another's replicas (planner.solve.decompose). Here the plan is checked
whole (commitments rounded up to instances, should any not be), each partly used
pay-as-you-go instance weighed against moving its last replicas to a single-GPU source
(`drop_part_instances`), and, on models small enough for it, branch and bound run over
the cells the plan used. The cheapest plan is kept.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Callable

from planner.model.builder import COMMITTED, ModelBuilder
from planner.model.solution import Solution
from planner.report.plan import extract_plan
from planner.solve.budget import Budget
from planner.solve.whole import SolveResult, solve_after_plan
from planner.solve.work import build_s

EPS = 1e-9
# Where offers are sold in whole instances on a model of up to REPAIR_CELLS supply cells,
# the decomposition gets INSTANCE_SHARE of the budget and branch and bound the rest (at
# the default scenario's 40 k cells, 12 s of it found nothing near the decomposition's
# plan).
INSTANCE_SHARE = 0.75
REPAIR_CELLS = 30_000


def whole_instances(builder: ModelBuilder, solution: Solution, solver: str,
                     budget: Budget, threads: int | None, repair: bool,
                     enough: Callable[[float], bool] = lambda objective: False
                     ) -> tuple[Solution, float]:
    """`solution` (the decomposition's) made whole and improved where it can be, the
    cheapest of: it with commitments rounded up to whole instances; that with part-used
    pay-as-you-go instances emptied where single GPUs cost less; and — where `repair`
    (a model of up to REPAIR_CELLS cells) and the cheaper of those two is not `enough`
    (proven within the gap asked) — branch and bound over the cells it used, with every
    source of the workloads on instances reopened. Returns the plan and its
    objective."""
    found: list[Solution] = []
    rounded = rounded_up(builder, solution)
    if rounded is not None:
        found.append(rounded)
        found.append(drop_part_instances(builder, rounded))
        if repair and enough(cheapest(builder, found)[1]):
            repair = False  # as the decomposition, ended at the gap asked
    if (repair and budget.left() >= 2.0) or not found:
        cells = {key for key, x in solution.supply.items() if x > EPS}
        on_instances = {w for (w, r, g, src, m, k) in cells
                        if src in builder.payg_offer
                        and builder.payg_offer[src].gpus_per_instance > 1}
        on_instances |= {w for (w, r, g, src, m, k) in cells if src == COMMITTED
                         and any(o.gpus_per_instance > 1
                                 for o in builder.commit_offers.get((r, g), []))}
        for w in sorted(on_instances):
            cells.update(builder.cells_of(w, builder.sources.get(w, {})))
        model = builder.build(cells=cells)
        budget.spend(build_s(len(cells)))
        raw = solve_after_plan(model, solver, max(budget.left(), 1.0), budget, 1e-4,
                               threads, only_way=not found)
        if raw.has_solution:
            found.append(Solution.of_model(model))
    if not found:
        raise RuntimeError("no plan in whole instances")
    return cheapest(builder, found)


def rounded_up(builder: ModelBuilder, solution: Solution) -> Solution | None:
    """`solution` with every commitment on an offer sold in instances rounded up to whole
    instances; None where that, or paying pay-as-you-go GPUs in whole instances, would
    exceed an offer's max_gpus."""
    s = builder.s
    commit = dict(solution.commit)
    for (key, t), q in solution.commit.items():
        n = s.offer_by_key[key].gpus_per_instance
        if n > 1 and q % n:
            commit[(key, t)] = -(-int(q) // n) * n
    active: dict[tuple, float] = {}
    for (key, t), q in commit.items():
        o = s.offer_by_key[key]
        for m in range(t, t + o.commit_months):
            active[(key, m)] = active.get((key, m), 0) + q
    for (key, m), q in active.items():
        o = s.offer_by_key[key]
        if o.max_gpus is not None and q > o.max_gpus:
            return None
    used: dict[tuple, float] = {}
    for (p, r, g, src, m, k), n_rep in solution.replicas.items():
        o = builder.payg_offer.get(src)
        if o is not None and o.gpus_per_instance > 1 and o.max_gpus is not None:
            used[(src, m, k)] = used.get((src, m, k), 0) + n_rep * builder.gpus_per_replica[
                (p, g)]
    for (src, m, k), gpus in used.items():
        o = builder.payg_offer[src]
        if -(-int(round(gpus)) // o.gpus_per_instance) * o.gpus_per_instance > o.max_gpus:
            return None
    return dataclasses.replace(solution, commit=commit)


def drop_part_instances(builder: ModelBuilder, solution: Solution) -> Solution:
    """Where a pay-as-you-go instance is only partly used in a month and segment, move
    a workload's replicas out of it to the cheapest single-GPU, non-spot pay-as-you-go
    source with room, where that costs less than the instances it frees. Only workloads
    alone in their pool, with one demand site and not bound to one region, move (their
    supply serves their one site directly, from any region in reach)."""
    s = builder.s
    out = dataclasses.replace(solution, supply=dict(solution.supply),
                              replicas=dict(solution.replicas))
    used: dict[tuple, float] = defaultdict(float)  # (src, month, segment) -> GPUs
    for (p, r, g, src, m, k), n in out.replicas.items():
        if src != COMMITTED:
            used[(src, m, k)] += n * builder.gpus_per_replica[(p, g)]
    alone = {w.pool_name: w.workload for w in s.workloads
             if w.pool is None and not w.single_region
             and len(builder.sites_of.get(w.workload, ())) == 1}
    by_cell: dict[tuple, list] = defaultdict(list)
    for key, n in out.replicas.items():
        p, r, g, src, m, k = key
        o = builder.payg_offer.get(src)
        if n > 0 and o is not None and o.gpus_per_instance > 1 and p in alone:
            by_cell[(src, m, k)].append(key)
    for (src, m, k), keys in sorted(by_cell.items(), key=str):
        o = builder.payg_offer[src]
        size = o.gpus_per_instance
        instance = size * builder.hours[k] * o.usd_per_gpu_hour * builder.settings.discount(m)
        for key in sorted(keys, key=lambda x: out.replicas.get(x, 0)):
            if used[(src, m, k)] % size <= EPS:
                break  # no part instance left here
            p, r, g, _, _, _ = key
            w = alone[p]
            n = out.replicas[key]
            gpus_here = n * builder.gpus_per_replica[(p, g)]
            units = out.supply.get((w, r, g, src, m, k), 0.0)
            freed = (math.ceil(used[(src, m, k)] / size - EPS)
                     - math.ceil((used[(src, m, k)] - gpus_here) / size - EPS))
            if freed <= 0 or units <= EPS:
                continue
            saving = freed * instance + builder.supply_cost(w, r, m, k) * units
            best = None
            for (r2, g2, src2), first in builder.sources.get(w, {}).items():
                o2 = builder.payg_offer.get(src2)
                if o2 is None or first > m or o2.gpus_per_instance > 1 or o2.term == "spot":
                    continue
                need = math.ceil(units / builder.per_replica(w, g2, src2) - 1e-9)
                gpus = need * builder.gpus_per_replica[(p, g2)]
                if o2.max_gpus is not None and used[(src2, m, k)] + gpus > o2.max_gpus:
                    continue
                cost = (builder.replica_cost(p, g2, src2, m, k) * need
                        + builder.supply_cost(w, r2, m, k) * units)
                if best is None or (cost, src2) < best[:2]:
                    best = (cost, src2, r2, g2, need, gpus)
            if best is None or best[0] >= saving - 1e-6:
                continue
            _, src2, r2, g2, need, gpus = best
            del out.replicas[key]
            out.supply.pop((w, r, g, src, m, k))
            replicas, supply = (p, r2, g2, src2, m, k), (w, r2, g2, src2, m, k)
            out.replicas[replicas] = out.replicas.get(replicas, 0) + need
            out.supply[supply] = out.supply.get(supply, 0.0) + units
            used[(src, m, k)] -= gpus_here
            used[(src2, m, k)] += gpus
    return out


def cheapest(builder: ModelBuilder, solutions: list[Solution],
             passes=None, strict: bool = False) -> tuple[Solution, float] | None:
    """The plan of least objective among `solutions` (among those whose plan
    `passes(plan)` accepts, where any does; `strict`: None where none does), with its
    objective."""
    provisional = SolveResult(solver="highs", status="feasible", termination="",
                              has_solution=True, objective=None, bound=None, gap=None,
                              seconds=0.0, unservable_usd=builder.unservable_usd)
    plans = sorted(((extract_plan(builder, x, provisional), i) for i, x in enumerate(solutions)),
                   key=lambda p: (p[0].totals["objective_usd"], p[1]))
    plan, i = next((p for p in plans if passes is None or passes(p[0])),
                   (None, None) if strict else plans[0])
    if plan is None:
        return None
    return solutions[i], plan.totals["objective_usd"]
