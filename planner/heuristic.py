"""An LP-guided start for large models: a good plan fast, and a valid bound.

Large plans have tens of thousands of integer replica counts, each a few hundred GPUs; the
LP relaxation is then tight, but a MIP solver spends long minutes finding its first good
plan. We build one from the relaxation, on the same PuLP model:

1. solve the LP relaxation: its objective is a valid lower bound on every plan;
2. fix the decisions that couple months: each single-region workload's (region, GPU type)
   (largest LP use), and commitments (LP value rounded to the nearest whole GPU, raised to
   min_gpus or dropped, then cut back to offer capacity);
3. round the LP's replicas up, cut back where an offer's or commitment's capacity would
   be exceeded, and solve what is left (supply, flows, unmet) as an LP: a whole plan, fast
   at any size; where it leaves demand unmet, add replicas where capacity has room (or,
   failing that, commit a little more) and solve again;
4. the months are now independent: as long as time allows, solve one small MIP per month
   from that plan, over the (workload, region, GPU type, source) columns the LP uses.

The result is feasible for the full model (unmet demand absorbs anything not served). It
is deterministic as long as no month's MIP reaches its share of the time limit (the
default scenario's months finish in well under a second). `solve` stops here when the plan
is within the gap of the LP bound, else hands it to the full MIP as a warm start.
"""

from __future__ import annotations

import math
import re
import time
from collections import defaultdict
from dataclasses import dataclass

import pulp
from pulp import LpAffineExpression

from planner.model import COMMITTED, PlanningModel

_MONTH = re.compile(r"_m(\d+)(?:_|$)")
MONTH_GAP = 0.01
REPAIRS = 3  # rounds of replicas added where the rounded plan leaves demand unmet


@dataclass(frozen=True)
class Start:
    lp_bound: float  # objective of the LP relaxation (a lower bound)
    objective: float  # objective of the plan built


def _month_of(name: str) -> int | None:
    m = _MONTH.search(name)
    return int(m.group(1)) if m else None


def lp_guided_start(model: PlanningModel, solve_problem, gap: float,
                    time_limit: float, lp=None, quick: bool = False,
                    bound: float | None = None) -> Start | None:
    """Set every variable of `model` to a feasible plan; None if an LP fails within
    `time_limit` (seconds from this call). The relaxations are solved in column
    generation's LP when the model has one, else in `lp` (an empty
    `highs.IncrementalLP`), handed to HiGHS once and changed by bounds; without either,
    each from scratch by `solve_problem`.
    `solve_problem(problem, seconds, gap, start=False)` returns the objective or None
    (`start`: from the variables' current values). `quick`: no LP between rounding the
    commitments and rounding the replicas (the repair moves the load instead) — a part of
    a plan in parts, where that LP took half the start's time. `bound`: a valid lower
    bound, given when there is no time for the LP relaxation: then no LP guides the
    start — every variable starts at zero, single-region workloads take their cheapest
    (region, GPU type) that can hold them, and the repair adds replicas for all demand (a
    part whose LP did not finish in its share)."""
    deadline = time.perf_counter() + time_limit
    prob = model.prob
    s = model.scenario
    integers = model.integer_variables()

    warm = model.warm_lp or lp
    model.warm_lp = None

    def solve_relaxed(changed=(), fresh=False) -> float | None:
        """The LP relaxation; `changed`: variables whose bounds changed since the last;
        `fresh`: so many that a large LP is better solved from scratch."""
        if warm is not None:
            warm.deadline = deadline
            warm.change_bounds(changed)
            return warm.solve(prob, fresh=fresh)
        for v in integers:
            v.cat = pulp.LpContinuous
        try:
            return solve_problem(prob, max(1.0, deadline - time.perf_counter()), gap)
        finally:
            for v in integers:
                v.cat = pulp.LpInteger

    if bound is not None:  # no LP: nothing used yet, so the repair serves all demand
        for v in [*model.flow.values(), *model.supply.values(), *integers]:
            v.varValue = 0.0
        for key, v in model.unmet.items():
            v.varValue = model.candidates.level[key]
        lp_bound = bound
    elif model.lp_objective is not None:  # the variables hold it (column generation)
        lp_bound, model.lp_objective = model.lp_objective, None
    else:
        lp_bound = solve_relaxed()
    if lp_bound is None:
        return None
    if model.full_bound is not None:  # a restriction: only the full model's bound counts
        lp_bound = min(lp_bound, model.full_bound)

    # -- decisions that couple months -------------------------------------------------------
    fixed: dict[str, tuple] = {}  # variable name -> (variable, lowBound, upBound) before

    def fix(v: pulp.LpVariable, value: float):
        fixed.setdefault(v.name, (v, v.lowBound, v.upBound))
        v.lowBound = v.upBound = value
        v.varValue = value

    try:
        best = _single_region_choice(model)
        for (w, r, g), v in model.choose.items():
            fix(v, 1.0 if best.get(w) == (r, g) else 0.0)
        if best and bound is None and solve_relaxed(model.choose.values()) is None:
            # (commitments and the rest now follow the choice)
            return None

        quantity: dict[tuple[str, int], int] = {}
        for (key, t), v in sorted(model.commit.items()):
            o = s.offer_by_key[key]
            x = v.varValue or 0.0
            q = int(math.floor(x + 0.5))
            if 0 < q < o.min_gpus:
                q = o.min_gpus if x >= o.min_gpus / 2 else 0
            quantity[(key, t)] = min(q, int(v.upBound)) if v.upBound is not None else q
        _fit_offer_capacity(model, quantity)
        for (key, t), v in model.commit.items():
            fix(v, float(quantity[(key, t)]))
            if (key, t) in model.commit_on:
                fix(model.commit_on[(key, t)], 1.0 if quantity[(key, t)] > 0 else 0.0)
        # replicas follow the rounded commitments (load moves where GPUs were rounded away)
        signed = [*model.commit.values(), *model.commit_on.values()]
        if not quick and bound is None and solve_relaxed(signed, fresh=True) is None:
            return None

        # -- restrict to the columns the LP uses ----------------------------------------------
        active = {(w, r, g, src) for (w, r, g, src, m, k), v in model.supply.items()
                  if (v.varValue or 0.0) > 1e-7}
        active |= {(w, r, g, src) for (w, r, g, src, m, k) in model.supply if (w, r, g) in
                   {(ww, *rg) for ww, rg in best.items()}}
        kept_cells = set()
        pool_of = {w.workload: w.pool_name for w in s.workloads}
        for (w, r, g, src, m, k), v in model.supply.items():
            if (w, r, g, src) in active:
                kept_cells.add((pool_of[w], r, g, src, m, k))
            else:
                fix(v, 0.0)
        for key, v in model.replicas.items():
            if key not in kept_cells:
                fix(v, 0.0)

        # -- a whole plan at once: the LP's replicas rounded up within capacity ------------
        # Single-region workloads left unmet move region only in models from column
        # generation: there the month MIPs rarely get their time (200x40x24, 600 s: gap
        # 90 % -> 46 %); on a full model they make room better, month by month (20x10x12:
        # moving cost 1.7 %).
        moves = model.full_bound is not None
        agreed = {v.name: (v.lowBound, v.upBound, v.varValue) for v in signed}
        rounded = _round_replicas(model)
        saved = {key: (v.lowBound, v.upBound) for key, v in model.replicas.items()}
        changed = [v for v, _, _ in fixed.values()]
        original = {name: up for name, (_, _, up) in fixed.items()}
        try:
            objective = None  # of the values, once they hold a whole plan
            repaired_since = False  # the values changed since `objective`
            for repair in range(REPAIRS + 1):
                for key, v in model.replicas.items():
                    v.lowBound = v.upBound = rounded[key]
                if repair or bound is None:  # (without an LP nothing is served yet)
                    if warm is not None:
                        found = solve_relaxed([*changed, *model.replicas.values()],
                                              fresh=True)
                    else:
                        found = solve_problem(prob, max(1.0, deadline - time.perf_counter()),
                                              gap)
                    if found is None:  # out of time: the last repair's plan (values) stands
                        break
                    objective, repaired_since = found, False
                # demand left unmet by replicas cut back: more replicas where there is room
                # (and single-region workloads moved where their own region has none)
                if repair == REPAIRS:
                    break
                unserved: set[str] = set()
                added = _add_replicas_for_unmet(model, rounded, saved, original, unserved)
                moved = moves and _move_single_region(model, rounded, saved, original,
                                                      unserved)
                repaired_since |= added
                if not added and not moved:
                    break
        finally:
            for key, v in model.replicas.items():
                v.lowBound, v.upBound = saved[key]
        if repaired_since:  # the repair's replicas serve what they were added for
            objective = pulp.value(prob.objective)
        if objective is None:
            return None
        plan = {v: v.varValue for v in prob.variables()}
        # the rounded plan may have committed more where replicas had no room; the month
        # MIPs below do better with the commitments as rounded, and pay-as-you-go
        repaired = {v.name: (v.lowBound, v.upBound, v.varValue) for v in signed}
        raised = repaired != agreed
        for v in signed:
            v.lowBound, v.upBound, v.varValue = agreed[v.name]

        # -- then one MIP per month, from that plan, as long as time allows ----------------
        by_month: dict[int, list] = defaultdict(list)
        for name, c in prob.constraints.items():
            m = _month_of(name)
            if m is not None:
                by_month[m].append(c)
        vars_of_month: dict[int, list] = defaultdict(list)
        for v, a in prob.objective.items():
            m = _month_of(v.name)
            if m is not None:
                vars_of_month[m].append((v, a))
        months = sorted(by_month)
        whole = True  # every month solved, or kept from the rounded plan
        for i, m in enumerate(months):
            # a fair share of what is left, so early months cannot starve later ones; a
            # month stopped at its share keeps its best plan so far (at worst the rounded one)
            share = (deadline - time.perf_counter()) / (len(months) - i)
            if share < 1.0:
                whole = not raised  # later months keep the rounded plan's values
                break
            sub = pulp.LpProblem(f"{prob.name}_m{m}", pulp.LpMinimize)
            sub.setObjective(LpAffineExpression(vars_of_month.get(m, [])))
            for c in by_month[m]:
                sub.addConstraint(c, name=c.name)
            before = pulp.value(sub.objective)
            # months are small: solve them tightly, so the plan's gap is the LP's, not theirs
            found = solve_problem(sub, share, min(gap, MONTH_GAP), start=True)
            if found is not None and (raised or found <= before + 1e-6 * max(1.0, abs(before))):
                continue
            if raised:  # the month cannot go back to the rounded plan alone: all do
                whole = False
                break
            for v in sub.variables():
                v.varValue = plan[v]
        # months that stopped at their share may have done worse than the rounded plan
        if whole and (not raised or pulp.value(prob.objective) <= objective):
            return Start(lp_bound=lp_bound, objective=pulp.value(prob.objective))
        for v in signed:
            v.lowBound, v.upBound, v.varValue = repaired[v.name]
        for v, x in plan.items():
            v.varValue = x
        return Start(lp_bound=lp_bound, objective=pulp.value(prob.objective))
    finally:  # whatever happened, the model keeps its own bounds
        for v, low, up in fixed.values():
            v.lowBound, v.upBound = low, up


def _single_region_choice(model: PlanningModel) -> dict[str, tuple[str, str]]:
    """For each single-region workload, the (region, GPU type) to keep: one whose offers can
    hold its busiest segment beside the runs that chose before it and what earlier parts
    of a plan in parts hold (an LP that splits runs may favour a small one, or put several
    where only one fits), then the one the LP used most, then the cheapest unit from
    pay-as-you-go (what decides without an LP), then by name. The busiest runs choose
    first."""
    s = model.scenario
    use: dict[tuple, float] = defaultdict(float)
    price: dict[tuple, float] = defaultdict(lambda: math.inf)
    peak: dict[str, float] = defaultdict(float)
    pool_of = {w.workload: w.pool_name for w in s.workloads}
    objective = model.prob.objective
    for (w, r, g, src, m, k), v in model.supply.items():
        use[(w, r, g)] += v.varValue or 0.0
        replicas = model.replicas.get((pool_of[w], r, g, src, m, k))
        if (w, r, g) in model.choose and src != COMMITTED and replicas is not None:
            # a replica's price × the share of it one unit takes
            unit = objective.get(replicas, 0.0) * model.rows["replicas"][
                (pool_of[w], r, g, src, m, k)].expr[v]
            price[(w, r, g)] = min(price[(w, r, g)], unit)
    months_of: dict[str, set[int]] = defaultdict(set)
    for (w, _site, m, k), level in model.candidates.level.items():
        peak[w] = max(peak[w], level)
        months_of[w].add(m)
    sources: dict[tuple, set[str]] = defaultdict(set)
    for (w, r, g, src, m, k) in model.supply:
        sources[(w, r, g)].add(src)
    committed_offers: dict[tuple[str, str], list] = defaultdict(list)
    for (key, _t) in model.commit:
        o = s.offer_by_key[key]
        if o not in committed_offers[(o.region, o.gpu)]:
            committed_offers[(o.region, o.gpu)].append(o)
    taken = model.taken
    # what earlier parts of a plan in parts left, in each month's busiest segment:
    # committed GPUs free (signed but idle, less existing GPUs in use), offers' GPUs in use
    free: dict[tuple, float] = {}
    in_use: dict[tuple, float] = defaultdict(float)
    if taken is not None:
        for (r, g, m, _k), spare in taken.committed.items():
            free[(r, g, m)] = min(free.get((r, g, m), math.inf), spare)
        for (src, m, _k), gpus in taken.offer.items():
            in_use[(src, m)] = max(in_use[(src, m)], gpus)

    def capacity(w, r, g) -> float:
        """GPUs at (r, g) the run could use in each of its months: existing contracts,
        commitments it could still sign and those signed but idle, pay-as-you-go offers'
        room — the least over its months."""
        least = math.inf
        for m in months_of[w]:
            total = 0.0
            for src in sources[(w, r, g)]:
                if src == COMMITTED:
                    total += model.existing_gpus.get((r, g, m), 0) + free.get((r, g, m), 0.0)
                    total += sum(model.commitment_room(o, m) for o in committed_offers[(r, g)]
                                 if o.first_month <= m)
                else:
                    o = s.offer_by_key[src]
                    total += math.inf if o.max_gpus is None else o.max_gpus - in_use[(src, m)]
            least = min(least, total)
        return least

    # GPUs at (r, g) held by each run chosen here at its busiest
    held: dict[tuple[str, str], float] = defaultdict(float)
    choices: dict[str, list] = defaultdict(list)
    for (w, r, g) in sorted(model.choose):
        choices[w].append((r, g))
    best: dict[str, tuple[str, str]] = {}
    for w in sorted(choices, key=lambda w: (-peak[w], w)):
        top = None
        for r, g in choices[w]:
            gpus = peak[w] / s.throughput_by_pair[(w, g)].units_per_gpu
            fits = capacity(w, r, g) - held[(r, g)] >= gpus - 1e-9
            score = (fits, use[(w, r, g)], -price[(w, r, g)])
            if top is None or score > top[0]:
                top = (score, (r, g), gpus)
        _, best[w], gpus = top
        held[best[w]] += gpus
    return best


def _fit_offer_capacity(model: PlanningModel, quantity: dict[tuple[str, int], int]) -> None:
    """Cut rounded commitments back (latest start first) until every month fits max_gpus
    (less what earlier parts signed)."""
    s = model.scenario
    by_offer: dict[str, list[int]] = defaultdict(list)
    for (key, t) in quantity:
        by_offer[key].append(t)
    for key, starts in by_offer.items():
        o = s.offer_by_key[key]
        if o.max_gpus is None:
            continue
        for m in s.settings.months:
            active = sorted((t for t in starts if t <= m < t + o.commit_months), reverse=True)
            excess = sum(quantity[(key, t)] for t in active) - model.commitment_room(o, m)
            for t in active:
                if excess <= 0:
                    break
                cut = min(excess, quantity[(key, t)])
                left = quantity[(key, t)] - cut
                if 0 < left < o.min_gpus:
                    cut, left = quantity[(key, t)], 0
                quantity[(key, t)] = left
                excess -= cut


def _round_replicas(model: PlanningModel) -> dict[tuple, int]:
    """The LP's replicas rounded up, then cut back one at a time wherever a capacity row
    — an offer's max_gpus, or the active commitments and existing contracts at (region,
    GPU type) — would be exceeded. Commitments are fixed by now, so every other variable
    in such a row is a replica count."""
    value = {key: v.varValue or 0.0 for key, v in model.replicas.items()}
    rounded = {key: max(0, math.ceil(x - 1e-6)) for key, x in value.items()}
    key_of = {v.name: key for key, v in model.replicas.items()}
    for rule in ("committed_capacity", "offer_capacity"):
        for row in model.rows[rule].values():
            used, terms = 0.0, []
            for v, a in row.expr.items():
                key = key_of.get(v.name)
                if key is None:
                    used += a * (v.varValue or 0.0)  # a fixed commitment
                else:
                    used += a * rounded[key]
                    terms.append((key, a))
            excess = used + row.constant  # row: Σ a·x + constant ≤ 0
            if excess <= 1e-9:
                continue
            # cells of several replicas first (one fewer loses a small share of their
            # load, which the LP then moves), the most rounded-up first
            terms.sort(key=lambda t: (rounded[t[0]] <= 1, -(rounded[t[0]] - value[t[0]]),
                                      -rounded[t[0]], str(t[0])))
            while excess > 1e-9:
                cut = False
                for key, a in terms:
                    if rounded[key] > 0 and excess > 1e-9:
                        rounded[key] -= 1
                        excess -= a
                        cut = True
                if not cut:
                    break
    return rounded


def _add_replicas_for_unmet(model: PlanningModel, rounded: dict[tuple, int],
                            bounds: dict[tuple, tuple], original: dict[str, float],
                            unserved: set[str] | None = None) -> bool:
    """Where the rounded plan leaves demand unmet, add replicas to columns that can reach
    the site — committed GPUs first, then the cheapest per unit; columns the LP did not use
    are opened again — within capacity and each count's bound, and committing more where
    nothing else has room. The variables' values move with them (`_Served`): the added
    replicas serve what they were added for, so the values stay a whole plan without an
    LP. `bounds`: replica bounds before rounding; `original`: upper bounds of variables
    before the start fixed them; `unserved` collects the workloads with demand no replica
    could be added for. False: nothing to add."""
    reach_of = model.candidates.regions_for_site
    unmet: dict[tuple, float] = {}
    # the sites with the fewest regions in reach first: others can go elsewhere
    for key, v in sorted(model.unmet.items(),
                         key=lambda x: (len(reach_of.get(x[0][:2], ())), str(x[0]))):
        if (v.varValue or 0.0) > 1e-6:
            unmet[key] = v.varValue
    if not unmet:
        return False
    s = model.scenario
    pool_of = {w.workload: w.pool_name for w in s.workloads}
    supply_of: dict[tuple, list] = defaultdict(list)
    for key, v in model.supply.items():
        if v.upBound != 0 or original.get(v.name, 0) != 0:  # in use, or closed by the start
            supply_of[(key[0], key[4], key[5])].append((key, v))
    value = _replica_counts(model, rounded)
    left: dict[str, float] = {}  # a capacity row's room, summed once, then kept current

    def room(row) -> float:
        if row.name not in left:
            left[row.name] = _room(row, value)
        return left[row.name]

    added = False
    served = _Served(model)
    commitments = _commitments_at(model)
    # (w, m, k) -> spot units its spot-share row still allows: its slack, plus the share
    # of each unmet amount taken up (served in full, it raises what spot may carry)
    spot_left: dict[tuple, float] = {}
    for (w, site, month, k), amount in unmet.items():
        tried: set[tuple] = set()  # options tried once (the second time: commit more)
        spot_row = model.rows["spot_share"].get((w, month, k))
        if spot_row is not None:
            if (w, month, k) not in spot_left:
                spot_left[(w, month, k)] = _room(spot_row, {})
            spot_left[(w, month, k)] += s.workload_by_name[w].max_spot_share * amount
        reach = set(reach_of.get((w, site), ()))
        options = []
        for key, v in supply_of[(w, month, k)]:
            _, r, g, src, _, _ = key
            rk = (pool_of[w], r, g, src, month, k)
            if r not in reach or rk not in model.replicas:
                continue
            flow = model.flow.get((w, site, r, month, k))
            if flow is None and served.through_flows(w):
                continue  # no flow from r to the site built (a restricted model)
            choose = model.choose.get((w, r, g))
            if choose is not None and (choose.varValue or 0.0) < 0.5:
                continue  # not the single region chosen
            replicas = model.replicas[rk]
            per = 1.0 / model.rows["replicas"][rk].expr[v]  # units one replica carries
            options.append((model.prob.objective.get(replicas, 0.0) / per, str(rk), rk, per,
                            v, flow))
        # committing more only where nothing else has room: it lasts the whole term
        options.sort(key=lambda o: o[:2])
        for _, _, rk, per, supply, flow in options + [o for o in options
                                                      if o[2][3] == COMMITTED]:
            if amount <= 1e-9:
                break
            raising = rk in tried
            tried.add(rk)
            p, r, g, src, _, _ = rk
            replicas = model.replicas[rk]
            up = original.get(replicas.name, bounds[rk][1])
            # spot carries no more than its share lets it (the rest needs other sources)
            spot = spot_row is not None and src != COMMITTED and \
                s.offer_by_key[src].term == "spot"
            carries = min(amount, max(spot_left[(w, month, k)], 0.0)) if spot else amount
            n = math.ceil(carries / per - 1e-9)
            if up is not None:
                n = min(n, int(up) - rounded[rk])
            row = _capacity_row(model, r, g, src, month, k)
            if row is not None:
                gpus = row.expr[replicas]
                short = n * gpus - room(row)
                if raising and short > 1e-9:
                    _commit_more(model, original, r, g, month, math.ceil(short - 1e-9),
                                 commitments)
                    left.clear()  # committed rows have more room now
                n = min(n, math.floor(room(row) / gpus + 1e-9))
            if n <= 0:
                continue
            rounded[rk] += n
            value[replicas.name] = rounded[rk]
            replicas.varValue = (replicas.varValue or 0.0) + n
            if row is not None:
                left[row.name] -= n * gpus
            if supply.upBound == 0:  # open the column again
                supply.lowBound, supply.upBound = 0, original[supply.name]
            carried = min(n * per, carries)
            served.serve((w, site, month, k), supply, flow, carried, spot)
            amount -= carried
            if spot:
                spot_left[(w, month, k)] -= carried
            added = True
        if amount > 1e-9 and unserved is not None:
            unserved.add(w)
    served.serve_spot_held_back()
    return added


class _Served:
    """Moves the values of the variables as the repair adds replicas: units from unmet to
    the supply (and flow) of the replicas added for them — spot within its share of what
    is served by then, the rest once the whole pass has served what it could."""

    def __init__(self, model: PlanningModel):
        self.model = model
        sites: dict[str, set] = defaultdict(set)
        for (w, site, _m, _k) in model.candidates.level:
            sites[w].add(site)
        self.several = {w for w, at in sites.items() if len(at) > 1}
        self.spot_room: dict[tuple, float] = {}  # (w, m, k) -> room in its spot-share row
        self.held_back: list[tuple] = []

    def through_flows(self, w: str) -> bool:
        """Whether `w` reaches its sites through flows (several demand sites)."""
        return w in self.several

    def serve(self, cell: tuple, supply, flow, units: float, spot: bool) -> None:
        w, _site, month, k = cell
        if (w, month, k) in self.model.rows["spot_share"]:
            if spot:
                now = self._spot_allowed(cell, units)
                if units - now > 1e-9:
                    self.held_back.append((cell, supply, flow, units - now))
                units = now
            else:
                share = self.model.scenario.workload_by_name[w].max_spot_share
                self.spot_room[(w, month, k)] = self._spot_room(cell) + share * units
        self._move(cell, supply, flow, units)

    def serve_spot_held_back(self) -> None:
        for cell, supply, flow, units in self.held_back:
            self._move(cell, supply, flow, self._spot_allowed(cell, units))
        self.held_back.clear()

    def _spot_room(self, cell: tuple) -> float:
        w, _site, month, k = cell
        if (w, month, k) not in self.spot_room:
            self.spot_room[(w, month, k)] = _room(self.model.rows["spot_share"][(w, month, k)],
                                                  {})
        return self.spot_room[(w, month, k)]

    def _spot_allowed(self, cell: tuple, units: float) -> float:
        """Spot units of `units` the spot-share row of `cell` allows now (taken up)."""
        w, _site, month, k = cell
        share = self.model.scenario.workload_by_name[w].max_spot_share
        now = min(units, max(self._spot_room(cell), 0.0) / (1.0 - share))
        self.spot_room[(w, month, k)] -= (1.0 - share) * now
        return now

    def _move(self, cell: tuple, supply, flow, units: float) -> None:
        if units <= 0:
            return
        unmet = self.model.unmet[cell]
        units = min(units, unmet.varValue or 0.0)
        unmet.varValue = (unmet.varValue or 0.0) - units
        supply.varValue = (supply.varValue or 0.0) + units
        if flow is not None:
            flow.varValue = (flow.varValue or 0.0) + units


def _capacity_row(model: PlanningModel, r: str, g: str, src: str, month: int, k: int):
    """The capacity row a replica of (r, g, src) in (month, segment k) counts in: committed
    capacity at (r, g), or the pay-as-you-go offer's max_gpus; None where there is none."""
    if src == COMMITTED:
        return model.rows["committed_capacity"].get((r, g, month, k))
    return model.rows["offer_capacity"].get((src, month, k))


def _move_single_region(model: PlanningModel, rounded: dict[tuple, int],
                        bounds: dict[tuple, tuple], original: dict[str, float],
                        unserved: set[str]) -> bool:
    """Single-region workloads of `unserved` (demand left unmet that no replica could be
    added for), moved whole to another of their (region, GPU type) choices in the model
    whose offers have room for all their replicas in every month and segment (the
    cheapest such, if it costs less than staying: the replicas held and the unmet
    demand's penalty): the choice at the start looked at each offer's capacity alone, and
    others may have taken it since. Pools of one workload only (a shared pool's replicas
    carry others' load too). `bounds`: replica bounds before rounding; `original`: upper
    bounds of variables before the start fixed them. False: none moved."""
    s = model.scenario
    pools: dict[str, list[str]] = defaultdict(list)
    for w in s.workloads:
        pools[w.pool_name].append(w.workload)
    choices: dict[str, list] = defaultdict(list)
    for (w, r, g), v in model.choose.items():
        if w in unserved:
            choices[w].append((r, g, v))
    if not choices:
        return False
    objective = model.prob.objective
    penalty: dict[str, float] = defaultdict(float)  # what the unmet demand costs now
    for (w, _site, _m, _k), v in model.unmet.items():
        if w in choices:
            penalty[w] += objective.get(v, 0.0) * (v.varValue or 0.0)
    level: dict[str, dict] = defaultdict(lambda: defaultdict(float))  # w -> (m, k) -> level
    for (w, _site, m, k), x in model.candidates.level.items():
        if w in choices:
            level[w][(m, k)] += x
    supply_at: dict[tuple, list] = defaultdict(list)  # (w, r, g, m, k) -> [(src, supply)]
    for (w, r, g, src, m, k), v in model.supply.items():
        # open, or closed by the start (not by the model)
        if w in choices and (v.upBound != 0 or original.get(v.name, 0) != 0):
            supply_at[(w, r, g, m, k)].append((src, v))
    value = _replica_counts(model, rounded)

    moved = False
    for w in sorted(choices):
        pool = s.workload_by_name[w].pool_name
        if pools[pool] != [w]:
            continue
        best = None
        for r, g, choose in sorted(choices[w], key=lambda x: x[:2]):
            if (choose.varValue or 0.0) > 0.5:
                continue
            plan, cost, taken = [], 0.0, defaultdict(float)
            for (m, k), amount in sorted(level[w].items()):
                options = []
                for src, supply in supply_at.get((w, r, g, m, k), []):
                    rk = (pool, r, g, src, m, k)
                    if rk not in model.replicas:
                        continue
                    replicas = model.replicas[rk]
                    per = 1.0 / model.rows["replicas"][rk].expr[supply]
                    n = math.ceil(amount / per - 1e-9)
                    up = original.get(replicas.name, bounds[rk][1])
                    if up is not None and n > up:
                        continue
                    row = _capacity_row(model, r, g, src, m, k)
                    if row is not None and n * row.expr[replicas] > \
                            _room(row, value) - taken[id(row)] + 1e-9:
                        continue
                    options.append((objective.get(replicas, 0.0) * n, src, rk, n, supply,
                                    row))
                if not options:
                    break
                price, _, rk, n, supply, row = min(options, key=lambda o: o[:2])
                plan.append((rk, n, supply))
                cost += price
                if row is not None:
                    taken[id(row)] += n * row.expr[model.replicas[rk]]
            else:
                if best is None or cost < best[0]:
                    best = (cost, choose, plan)
        # moving costs the new replicas; staying, the replicas held and the penalty
        staying = penalty[w] + sum(objective.get(model.replicas[rk], 0.0) * n
                                   for rk, n in rounded.items() if rk[0] == pool)
        if best is None or best[0] >= staying:
            continue
        _, choose, plan = best
        for r0, g0, v in choices[w]:
            if (v.varValue or 0.0) > 0.5:  # the old choice: its replicas go
                v.lowBound = v.upBound = v.varValue = 0.0
                for rk in rounded:
                    if rk[:3] == (pool, r0, g0):
                        rounded[rk] = value[model.replicas[rk].name] = 0
        choose.lowBound = choose.upBound = choose.varValue = 1.0
        for rk, n, supply in plan:
            rounded[rk] = value[model.replicas[rk].name] = n
            if supply.upBound == 0:  # open the column again
                supply.lowBound, supply.upBound = 0, original[supply.name]
        moved = True
    return moved


def _replica_counts(model: PlanningModel, rounded: dict[tuple, int]) -> dict[str, int]:
    """Replica variable name -> its rounded count (what `_room` reads)."""
    return {model.replicas[key].name: x for key, x in rounded.items()}


def _room(row, value: dict[str, int]) -> float:
    """What is left in a row Σ a·x + constant ≤ 0 (GPUs in a capacity row, spot units in a
    spot-share row), variables named in `value` (replicas) at their counts there and
    every other (fixed commitments, supply) at its value."""
    used = sum(a * value.get(v.name, v.varValue or 0.0) for v, a in row.expr.items())
    return -(used + row.constant)


def _commitments_at(model: PlanningModel) -> dict[tuple[str, str], list]:
    """Per (region, GPU type), its commitments (offer key, start, variable, offer), the
    cheapest over its term per GPU first (what `_commit_more` raises first)."""
    s = model.scenario
    at: dict[tuple[str, str], list] = defaultdict(list)
    for (key, t), v in model.commit.items():
        o = s.offer_by_key[key]
        total = (o.usd_per_gpu_hour * o.commit_months
                 + o.upfront_usd_per_gpu / s.settings.hours_per_month)
        at[(o.region, o.gpu)].append((total, key, t, v, o))
    for options in at.values():
        options.sort(key=lambda x: x[:3])
    return at


def _commit_more(model: PlanningModel, original: dict[str, float], r: str, g: str,
                 month: int, gpus: int, at: dict[tuple[str, str], list]) -> None:
    """Raise one fixed commitment at (r, g) active in `month` by `gpus` (the cheapest per
    GPU over its term that stays within its bound and the offer's capacity); `at`:
    `_commitments_at(model)`."""
    options = at.get((r, g), [])
    horizon = model.scenario.settings.horizon_months
    for _, key, t, v, o in options:
        if not t <= month < t + o.commit_months:
            continue
        q = int(round(v.varValue or 0.0))
        new = max(q + gpus, o.min_gpus)
        up = original.get(v.name, v.upBound)
        if up is not None and new > up:
            continue
        if o.max_gpus is not None and any(
                sum(int(round(x.varValue or 0.0)) for _, k2, tt, x, _ in options
                    if k2 == key and tt <= mm < tt + o.commit_months) + new - q
                > model.commitment_room(o, mm)
                for mm in range(t, min(t + o.commit_months, horizon))):
            continue
        v.lowBound = v.upBound = v.varValue = new
        if (key, t) in model.commit_on:
            on = model.commit_on[(key, t)]
            on.lowBound = on.upBound = on.varValue = 1
        return
