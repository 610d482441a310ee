"""The stochastic plan's steps within one budget (the method: planner.stochastic)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from planner.io.scenario import DemandScenario, Scenario
from planner.solve.budget import LEAST_LIMIT_S, Budget
from planner.solve.decompose.cuts import CutMaster
from planner.solve.pipeline import short_of_lp
from planner.solve.whole import honest_gap, status_of
from planner.stochastic.result import StochasticResult
from planner.stochastic.scenarios import apply, cvar, mean_forecast
from planner.stochastic.schedules import (
    Candidate,
    consensus_schedule,
    offer_caps,
    same_schedule,
    stepped_schedule,
    whole_schedule,
)
from planner.stochastic.tasks import cut_task, evaluate_task, solve_task, work_of

# Schedules evaluated at most (step 3): those the method makes (the mean forecast's, the
# consensus, the cuts' master's) and the scenarios' own at spread quantiles of total
# demand to make up the rest: three, the least, middle and most, the fewest that show
# both tails and the middle. Each costs a solve per scenario; where the time holds
# fewer, the list is cut from its end (`evaluate`), the method's own first.
MAX_CANDIDATES = 6
# Shares of the budget: the wait-and-see solves, the cuts, the evaluations, the final
# plan. The cuts' rounds stop early when the master comes back to a schedule it has cut
# at already (its cuts there are what they were: nothing more to learn).
WAIT_SHARE, CUT_SHARE, EVALUATE_SHARE = 0.35, 0.3, 0.85  # each of what is left
# The cuts' next schedule stays within this share of each commitment's GPUs (at least
# one) around the best schedule so far (a trust region; see CutMaster.solve).
TRUST_RADIUS = 0.25
MIN_SOLVE_S = 2.0  # the least time limit worth giving an evaluation
# The least time limit worth giving a cut whose model needs more (a small model's cut
# takes a few hundredths of a second: its round runs on less).
MIN_CUT_S = 1.0
# The least a solve is taken to need: a model solved whole needs what its solve took
# (with NEED_MARGIN), which on a small one is a fraction of a second; reckoning such
# solves at MIN_SOLVE_S left a 10-s command on a 2-scenario market no time for the cuts
# and one schedule to evaluate (the mean forecast's, 5 % dearer than the cuts' optimum);
# at 0.5 s the same befell a 6-s command on a market whose solves take 0.03 s (it ended
# at 1.4 s, its schedule 7 % dearer than the optimum it proves at 0.1 s, in 1.7 s)
MIN_NEED_S = 0.1
# A solve given less time than its master's first round needs stands on its plan at
# first prices (200x40x24, 20 samples in 600 s: evaluations of ~5 s each, expected costs
# $275-321 M from run to run where a 20-s solve alone plans $260 M). The least limit
# the wait-and-see solves would have needed for their plan from the LP, with this
# margin for the spread between solves run side by side, is what a later solve gets:
# fewer candidates and fresh samples instead of solves too short to plan.
NEED_MARGIN = 1.25
# The cuts' rounds leave the evaluation time for this many candidates at that limit (the
# mean forecast's schedule and one other: else there is nothing to choose between).
LEAST_CANDIDATES = 2
# Drawn samples (--samples) the time cannot hold are left out, down to LEAST_SAMPLES: a
# sample's wait-and-see solve and its evaluation take ~25 ms each on a small market, and
# 300 samples at --time-limit 5 had taken 18 s (SPEC §4: S + 10 %).
LEAST_SAMPLES = 2
# A solve that made no plan from its LP in `limit` needed more, how much more unknown:
# taken as this many times the limit. Taken as limit / BOUND_SHARE (its master's first
# round given all the time the solve had), the default scenario's mean forecast, which
# missed at 2 s on a machine whose reckoning ran long, set the need at 2.9 s where it was
# 3.1-3.9 s: 4 of the 5 solves given it missed again (8 samples at --time-limit 60:
# 45.6 %).
MISSED_GROWTH = 2.0


def _need(results: list[dict], limit: float) -> tuple[float, int]:
    """The least time limit a solve of these scenarios needs to make its plan from the
    master's LP, and how many of `results` (solves given `limit`) made none: NEED_MARGIN
    over the slowest one's least limit (`Run.least_s`); one that made none needed more
    than `limit`, taken as MISSED_GROWTH × limit. A model solved whole needs the seconds
    its solve took; any solve at least MIN_NEED_S."""
    times = [r["least_s"] if r.get("least_s") is not None else r.get("seconds", limit)
             for r in results if r.get("status") != "no_plan"]
    missed = sum(map(_short, results))
    slowest = max([t for t in times if math.isfinite(t)]
                  + [MISSED_GROWTH * limit] * bool(missed), default=0.0)
    return max(MIN_NEED_S, NEED_MARGIN * slowest), missed


def _short(result: dict) -> bool:
    """Whether a solve (its `_summary`) ran out of time before its master's first round."""
    return short_of_lp(result.get("least_s"))


def _limits(count: int, pot: float, need: float, limit: float,
            overhead: float) -> list[float]:
    """Time limits for `count` solves sharing `pot` seconds (each also taking
    `overhead` beyond its limit): all max(`limit`, `need`) when they fit; else as many as
    fit get `need` (the first always) and the others MIN_SOLVE_S (or the need, if less;
    where even that does not fit, the pot is shared out), since a solve stopped before its
    master's first round plans no better for the time short of the need (the plan and
    bound at first prices)."""
    if count * (max(limit, need) + overhead) <= pot:
        return [max(limit, need)] * count
    # a small model needs less than MIN_SOLVE_S: its others had been given more than the
    # need (4 × 2 s of an 8-s command's 3)
    low = min(MIN_SOLVE_S, need)
    if need - low < 1e-9:  # not even the need fits: the pot shared out
        return [max(LEAST_LIMIT_S, pot / count - overhead)] * count
    fits = int((pot - count * (low + overhead)) // (need - low))
    fits = min(count, max(1, fits))
    return [need] * fits + [low] * (count - fits)


def _cut_seconds(left: float, count: int, overhead: float, took: float) -> float | None:
    """Each cut's time limit in a round of `count` cuts that fits in `left` seconds (each
    taking `overhead` beyond its limit), or None where such a round is not worth running:
    its cuts would get less than MIN_CUT_S and than a cut took (`took`: the last round's
    longest, or what a solve needs). A round started on what a single cut needed had
    overrun its share: the default scenario, 8 samples at --time-limit 120, a second
    round at 1 s a cut in the 2.9 s left took 8.5 s, and the evaluation had room for
    the mean forecast's schedule alone."""
    each = left / count - overhead
    return each if each > 0 and each >= min(MIN_CUT_S, took) else None


def solve_stochastic(scenario: Scenario, scenarios: tuple[DemandScenario, ...],
                     budget: Budget, runner, solver: str | None = None,
                     gap: float | None = None, risk_aversion: float = 0.0,
                     alpha: float = 0.9,
                     progress: Callable[[str], None] | None = None,
                     drawn: bool = False) -> StochasticResult:
    """The schedule of least expected cost (+ λ·CVaR_α) among the candidates, with the
    wait-and-see bound raised by Lagrangian cuts (module docstring). `drawn`: the
    scenarios are equally likely samples, of which those the time cannot hold may be
    left out (LEAST_SAMPLES)."""
    run = _Stochastic(scenario, scenarios, budget, runner, solver, gap, risk_aversion,
                      alpha, progress or (lambda text: None), drawn)
    mean_result, wait = run.wait_and_see()
    cut_bound, best, rounds = run.cut_rounds(mean_result, wait)
    candidates = run.evaluate(run.candidates(mean_result, wait, best))
    candidates = run.steps(candidates)
    return run.choose(candidates, wait, cut_bound, rounds)


class _Stochastic:
    """One stochastic solve's steps and what they share: the scenarios, the clock and
    what a solve takes beyond its time limit. Time limits are reckoned as if the solves
    ran one after another, whatever the runner has: the results do not depend on --jobs
    or --scheduler (SPEC §4), and more workers end sooner (limits in worker-seconds had
    given another expected cost at --jobs 2)."""

    def __init__(self, scenario: Scenario, scenarios: tuple[DemandScenario, ...],
                 budget: Budget, runner, solver, gap, risk_aversion: float, alpha: float,
                 say: Callable[[str], None], drawn: bool = False):
        self.scenario, self.scenarios, self.total, self.runner = (scenario, scenarios,
                                                                  budget, runner)
        self.solver, self.gap, self.risk_aversion, self.alpha = (solver, gap, risk_aversion,
                                                                 alpha)
        self.say = say
        self.probabilities = np.array([s.probability for s in scenarios])
        self.apart = [apply(scenario, s) for s in scenarios]
        self.overhead = 0.0  # seconds a solve takes beyond its time limit (build, tables)
        self.need = MIN_SOLVE_S  # the least time limit a solve needs to plan (`_need`)
        self.missed = 0  # wait-and-see solves that got no plan from their LP
        self.measured = False  # whether `need` and `overhead` are measured yet
        self.drawn = drawn  # equally likely samples: those the time cannot hold left out
        self.dropped = 0  # samples left out
        self.untried = 0  # candidate schedules the time could not evaluate
        # seconds a table's scenarios will take past the budget at the least (their
        # solves end before their limits: they cannot be given less), or 0
        self.overrun_s = 0.0
        self.master: CutMaster | None = None  # the cuts' master (step 2)
        self.cuts_run = 0  # its rounds of cuts at its own schedules

    def _map(self, fn, tasks: list) -> list:
        """runner.map(fn, tasks), their reckoned work counted on the command's work clock
        as if they ran one after another: what follows is reckoned the same whatever the
        workers (SPEC §4)."""
        results = self.runner.map(fn, tasks)
        self.total.spend(sum(work_of(r) for r in results))
        return results

    @property
    def stop_by(self) -> float:
        """When every solve stops, whatever its own limit: the steps' end on the wall
        clock, as a time.time() (a worker's clock may be another)."""
        return self.total.wall_end_epoch()

    @property
    def budget(self) -> Budget:
        """What the steps have: the whole budget less one solve at the need once it is
        measured, kept for the plan of the mean forecast under the schedule (the command
        had kept 2 s for it whatever the solves took: on a market whose solves take a
        tenth of a second, a 3-s command then had no time for the cuts, and stood on the
        mean forecast's schedule, 6 % dearer than the optimum it proves at 5 s)."""
        return self.total.share(1.0, self.need + self.overhead if self.measured else 0.0)

    def each(self, count: int, share: float) -> float:
        """The time limit of each of `count` solves sharing `share` of what is left."""
        slot = self.budget.share(share).left() / max(count, 1)
        return max(LEAST_LIMIT_S, slot - self.overhead)

    def wait_and_see(self) -> tuple[dict, list[dict]]:
        """1. The mean forecast's own plan and every scenario planned alone. A first wave
        (the mean forecast alone) measures what a solve needs to plan (`_need`) and takes
        beyond its limit;
        the rest, and any of the first wave that made no plan from its LP, get at least
        that while it leaves the evaluation one schedule (`_limits`: where not all fit,
        as many as fit, the mean forecast first; the others a plan at first prices)."""
        n = len(self.scenarios)
        self.say(f"planning the mean forecast and {n} scenarios alone")
        # the first wave (the mean forecast first: its schedule is the first candidate)
        # gets up to MIN_SOLVE_S where the even share is less, so that it plans from its
        # LP and measures the need (a miss only says the need is above its limit)
        limit = self.each(n + 1, WAIT_SHARE)
        measure = max(limit, min(MIN_SOLVE_S, self.budget.share(WAIT_SHARE).left()
                                 - self.overhead))
        tasks = [mean_forecast(self.scenario, self.scenarios), *self.apart]
        first = [0]  # the mean forecast
        solved = dict(zip(first, self._map(
            solve_task, [(tasks[i], self.solver, measure, self.gap, self.stop_by)
                         for i in first])))
        # each task's own time beyond its limit (a fresh worker's imports are not a
        # solve's: they would make the limits depend on --jobs)
        self.overhead = max(0.0, max(solved[i]["task_s"] for i in first) - measure)
        self.need, _ = _need(list(solved.values()), measure)
        self.measured = True
        rest = [i for i in range(n + 1) if i not in solved or _short(solved[i])]
        # a solve that ends before its limit takes what it takes however little it is
        # given (a small market's: ~25 ms); one the clock stopped is worth running only
        # at the need (a solve given less plans at first prices: a generated 10x6x6
        # market's 8 samples at --time-limit 20 on a machine whose reckoning ran long
        # had 0.5 s each, under their 1.2-s need, and stated a 33 % gap). Where the
        # samples' solves do not fit at that, samples are left out
        one = solved[0]["task_s"]
        ended = one < measure
        if ended:
            fits = self._samples_that_fit(one)
        elif solved[0].get("least_s") is not None:  # the clock stopped a decomposition
            fits = self._samples_that_fit(self.need + self.overhead)
        else:  # a model solved whole plans at any limit; each of its solves takes at
            # least what the first took (40 samples of a 1-workload market had all been
            # kept at --time-limit 5 and the command took 7-10 s; 2 of them at 10 s)
            fits = self._samples_that_fit(one)
        kept = fits if self.drawn else n
        if fits < n and ended and not self.drawn:  # a table's are all planned: late
            self.overrun_s = (2 * n + 1) * one - self.budget.left()
        if kept < n:  # the first `kept` samples, equally likely: a sample too
            self.dropped, n = n - kept, kept
            self.scenarios = tuple(dataclasses.replace(s, probability=1.0 / kept)
                                   for s in self.scenarios[:kept])
            self.apart = self.apart[:kept]
            self.probabilities = np.full(kept, 1.0 / kept)
            self.say(f"the time holds {kept} of {kept + self.dropped} samples")
            # the mean forecast of the samples kept, planned again
            tasks = [mean_forecast(self.scenario, self.scenarios), *self.apart]
            solved, rest = {}, list(range(n + 1))
            limit = self.each(n + 1, WAIT_SHARE)
        limits = []
        if rest:
            # what the rest may take (seconds): the wait-and-see share, or all
            # that leaves the evaluation one schedule if that is more
            pot = max(len(rest) * (limit + self.overhead),
                      self.budget.left() - self.evaluation_room(1))
            limits = _limits(len(rest), pot, self.need, limit, self.overhead)
            solved.update(zip(rest, self._map(
                solve_task, [(tasks[i], self.solver, t, self.gap, self.stop_by)
                             for i, t in zip(rest, limits)])))
            # each task's own time beyond its limit (the wall clock's would shrink with
            # the workers, and the limits after it grow with them)
            beyond = [solved[i]["task_s"] - t for i, t in zip(rest, limits)]
            self.overhead = max(self.overhead, sum(beyond) / len(rest))
        results = [solved[i] for i in range(n + 1)]
        # what a solve needs, from those given the need (or the first wave's limit)
        fair = [solved[i] for i in first] + [
            solved[i] for i, t in zip(rest, limits) if t >= self.need]
        self.need = max(self.need, _need(fair, max([measure, *limits]))[0])
        self.missed = sum(map(_short, results))
        if self.missed:
            self.say(f"{self.missed} of {n + 1} solves got no plan from their LP; later "
                     f"solves get {self.need:.1f} s each")
        return results[0], results[1:]

    def _samples_that_fit(self, one: float) -> int:
        """How many of the samples the time holds, each a wait-and-see solve and an
        evaluation (and the mean forecast planned again), each solve taking `one`
        seconds (what the first took where it ended before its limit, else the need);
        at least LEAST_SAMPLES."""
        fits = int((self.budget.left() - one) // (2 * one)) if one > 0 else len(self.scenarios)
        return min(len(self.scenarios), max(LEAST_SAMPLES, fits))

    def evaluation_room(self, candidates: int) -> float:
        """Seconds of the budget the evaluation of `candidates` schedules needs."""
        solves = candidates * len(self.scenarios)
        return solves * (self.need + self.overhead) / EVALUATE_SHARE

    def cut_rounds(self, mean_result: dict, wait: list[dict]) -> tuple[float, tuple | None, int]:
        """2. The bound: an L-shaped master over Lagrangian cuts, a round of cuts (one
        per scenario, at the master's schedule) at a time. Returns the bound, the best
        schedule the cuts found with their estimate of its cost ((estimate, schedule), or
        None) and the rounds run."""
        floors = [w.get("bound_usd") for w in wait]
        space: dict = {}
        for w in [mean_result, *wait]:
            for key, (upper, cost) in w.get("space", {}).items():
                space[key] = (max(upper, space.get(key, (0.0, 0.0))[0]), cost)
        master = self.master = CutMaster(self.probabilities, space, floors,
                                         self.risk_aversion, self.alpha,
                                         offer_caps(space, self.scenario))
        for i, w in enumerate(wait):
            if "cut" in w:
                master.add(i, w["cut"])
        cut_bound, _ = master.solve()
        # the first round at the scenarios' mean schedule (where each scenario's own
        # prices are nearly right: its column generation converges fast), then at the
        # master's
        schedule: dict = {}
        for sc, w in zip(self.scenarios, wait):
            for key, q in w.get("commitments", {}).items():
                schedule[key] = schedule.get(key, 0.0) + sc.probability * q
        rounds, seen, best = 0, [], None
        # the cuts leave the evaluation its least candidates at the limit solves need
        left = self.budget.left()
        cut_budget = Budget(min(CUT_SHARE * left,
                                max(0.0, left - self.evaluation_room(LEAST_CANDIDATES))),
                            work=self.total.work, wall_end=self.total.wall_end)
        n = len(self.scenarios)
        took = self.need  # what a cut takes: before the first, what a solve needs
        while not any(same_schedule(schedule, x) for x in seen):
            seconds = _cut_seconds(cut_budget.left(), n, self.overhead, took)
            if seconds is None:
                break
            self.say(f"bound: cuts round {rounds + 1} ({n} scenarios), "
                     f"bound {cut_bound:,.0f}")
            cuts = self._map(cut_task, [(s, tuple(sorted(schedule.items())), seconds,
                                         w.get("prices"))
                                        for s, w in zip(self.apart, wait)])
            for i, cut in enumerate(cuts):
                master.add(i, cut)
            took = max(c.work_s for c in cuts) - self.overhead
            rounds += 1
            seen.append(schedule)
            # the schedule whose cuts say it costs least so far is the trust region's
            # centre
            estimate = float(np.dot([max(c.value, f if f is not None else -math.inf)
                                     for c, f in zip(cuts, floors)], self.probabilities))
            if best is None or estimate < best[0]:
                best = (estimate, schedule)
            cut_bound = max(cut_bound, master.solve()[0])
            schedule = master.solve(best[1], TRUST_RADIUS)[1]
        self.cuts_run = rounds
        return cut_bound, best, rounds

    def candidates(self, mean_result: dict, wait: list[dict], best) -> list[Candidate]:
        """3. The schedules worth trying, each once, the mean forecast's first."""
        scenarios, offers = self.scenarios, self.scenario.offer_by_key
        candidates = [Candidate("mean forecast", mean_result.get("commitments", {})),
                      Candidate("consensus", consensus_schedule(scenarios, wait, offers))]
        if best is not None:
            candidates.append(Candidate("L-shaped master", whole_schedule(best[1], offers)))
        totals = [sum(d.amount for d in s.demand) for s in self.apart]
        order = sorted(range(len(scenarios)), key=lambda i: (totals[i], scenarios[i].name))
        picks = min(max(0, MAX_CANDIDATES - len(candidates)), len(order))
        spread = [order[len(order) // 2]] if picks == 1 else [
            order[round(j * (len(order) - 1) / (picks - 1))] for j in range(picks)]
        for i in spread:
            candidates.append(Candidate(f"scenario {scenarios[i].name}",
                                        wait[i].get("commitments", {})))
        unique: list[Candidate] = []
        for c in candidates:
            if all(c.commitments != u.commitments for u in unique):
                unique.append(c)
        # the mean forecast's first (its VSS), then the cheapest by the cuts first: where
        # the time holds few, those it holds are the likeliest (30 scenarios of a
        # 1-workload market at --time-limit 30 had evaluated the mean forecast's schedule
        # alone, $2,800, the L-shaped master's $2,700 untried)
        return unique[:1] + sorted(unique[1:], key=lambda c: self._estimate(c.commitments))

    def _estimate(self, schedule: dict) -> float:
        """What the cuts say `schedule` costs; 0 (the order kept) before a round of cuts
        at the master's schedules: the wait-and-see solves' cuts, each at its scenario's
        own schedule, say little of steps from the best (ranked by them, the first step
        of a 10-scenario market at --time-limit 20 was $70 dearer than the fixed order's,
        which was cheaper)."""
        if self.master is None or not self.cuts_run:
            return 0.0
        return self.weighed(self.master.scenario_costs(schedule))[0]

    def evaluate(self, candidates: list[Candidate]) -> list[Candidate]:
        """4. Every candidate in every scenario: as many candidates as the time holds,
        each solve given at least what a solve needs to plan (`_need`)."""
        n = len(self.scenarios)
        room = self.budget.share(EVALUATE_SHARE).left()
        fits = int(room // (n * (self.overhead + self.need)))
        self.untried = max(0, len(candidates) - max(1, fits))
        candidates = candidates[:max(1, fits)]
        self.say(f"evaluating {len(candidates)} commitment schedules in {n} scenarios")
        limit = self.each(len(candidates) * n, EVALUATE_SHARE)
        results = self._map(evaluate_task, [
            task for c in candidates for task in self._evaluations(c, limit)])
        for i, c in enumerate(candidates):
            c.results = results[i * n:(i + 1) * n]
        return candidates

    def _evaluations(self, c: Candidate, limit: float) -> list[tuple]:
        """evaluate_task's tasks for `c`: its commitments fixed, in every scenario."""
        commitments = tuple(sorted(c.commitments.items()))
        return [(s, commitments, self.solver, limit, self.gap, self.stop_by)
                for s in self.apart]

    def steps(self, candidates: list[Candidate]) -> list[Candidate]:
        """5. Steps from the best schedule while the time holds: each commitment of any
        candidate one instance more or one less (`stepped_schedule`), evaluated in every
        scenario at the need; the first cheaper one is the next to step from, until none
        is. The cuts' master stops where a schedule repeats, its bound short of that
        schedule's cost; on a 3-month, 2-region market with 8 samples the best candidate
        was then $37.50 over the optimum, one GPU too many in each month of a monthly
        term."""
        keys = sorted({k for c in candidates for k in c.commitments}, key=str)
        best = min(candidates, key=lambda c: (self.value(c)[0], candidates.index(c)))
        least = self.value(best)[0]
        seen = [c.commitments for c in candidates]
        while True:
            # one step each way on each commitment, those the cuts say cost least first
            # (a step down the cuts proved optimal had been left untried when the time
            # ran out: $2,570 where $2,560)
            steps = [x for x in self._neighbours(best.commitments, keys)
                     if not any(x == s for s in seen)]
            steps.sort(key=self._estimate)
            for i, schedule in enumerate(steps):
                if self.budget.left() < len(self.scenarios) * (self.need + self.overhead):
                    self.untried += len(steps) - i
                    return candidates
                seen.append(schedule)
                c = best.step(schedule, self.scenario.settings.month)
                self.say(f"trying a step from the best schedule ({len(seen)} tried)")
                c.results = self._map(evaluate_task, self._evaluations(c, self.need))
                candidates.append(c)
                if self.value(c)[0] < least * (1 - 1e-9):
                    best, least = c, self.value(c)[0]
                    break
            else:  # no step from the best is cheaper
                return candidates

    def _neighbours(self, schedule: dict, keys: list):
        """Schedules one step from `schedule`: each commitment one instance more, then
        one less."""
        for key in keys:
            for sign in (1, -1):
                step = stepped_schedule(schedule, key, sign, self.scenario.offer_by_key,
                             self.scenario.settings.horizon_months)
                if step is not None:
                    yield step

    def value(self, c: Candidate) -> tuple[float, float, float]:
        """A candidate's expected cost + λ·CVaR_α, expected cost and CVaR_α."""
        return self.weighed(c.costs())

    def weighed(self, costs) -> tuple[float, float, float]:
        """Costs by scenario as the objective weighs them: expected cost + λ·CVaR_α,
        expected cost and CVaR_α."""
        expected = float(np.dot(costs, self.probabilities))
        tail = cvar(costs, self.probabilities, self.alpha)
        return expected + self.risk_aversion * tail, expected, tail

    def choose(self, candidates: list[Candidate], wait: list[dict], cut_bound: float,
               rounds: int) -> StochasticResult:
        """6. The candidate of least expected cost + λ·CVaR_α, its bound, VSS and EVPI."""
        p = self.probabilities
        # ties to the cent go to the lower CVaR: as cheap on average, less exposed (an
        # outside audit saw the dearer tail chosen at λ = 0)
        chosen = min(candidates, key=lambda c: (round(self.value(c)[0], 2),
                                                round(self.value(c)[2], 2),
                                                candidates.index(c)))
        objective, expected, tail = self.value(chosen)
        mean_candidate = candidates[0]  # the mean forecast's schedule is always the first
        # each scenario's cheapest plan known alone: its own, or a candidate schedule's
        # re-planned there where that is cheaper (its own solve may have been stopped
        # short: EVPI then stays what perfect information is worth over what was found)
        foresight = [min([w.get("objective_usd", math.inf)]
                         + [c.results[i].get("objective_usd", math.inf) for c in candidates])
                     for i, w in enumerate(wait)]
        ws_value = float(np.dot(foresight, p))
        ws_bound = float(np.dot([w.get("bound_usd") if w.get("bound_usd") is not None
                                 else -math.inf for w in wait], p))
        bound = (1 + self.risk_aversion) * ws_bound if math.isfinite(ws_bound) else 0.0
        bound_from = "wait and see"
        if cut_bound > bound:  # (no round: the cuts the wait-and-see solves' prices gave)
            bound, bound_from = cut_bound, (f"Lagrangian cuts, {rounds} round(s)" if rounds
                                            else "Lagrangian cuts at the wait-and-see prices")
        bound = min(bound, objective)
        # on what the schedule can change (SPEC §4 v2): the penalty of demand no offer
        # can serve, weighed as the objective weighs it, left out (an outside audit: a
        # $1.85 B objective of such penalty had stated 0.0002 % where 0.55 % is due)
        unservable = self.weighed([r.get("unservable_usd", 0.0) for r in chosen.results])[0]
        gap = honest_gap(objective, bound, min(unservable, objective))
        wanted = self.gap if self.gap is not None else self.scenario.settings.mip_gap
        return StochasticResult(
            scenarios=self.scenarios, chosen=chosen, mean_plan=mean_candidate,
            candidates=candidates, wait_and_see=wait, risk_aversion=self.risk_aversion,
            alpha=self.alpha, expected_cost_usd=expected, cvar_usd=tail,
            objective_usd=objective, bound_usd=bound,
            gap=gap, vss_usd=self.value(mean_candidate)[1] - expected,
            # not known where scenarios' own solves were cut short of their LP: their
            # plans at first prices are dearer than the schedule's, and perfect
            # information looked worth $0
            evpi_usd=None if self.missed else expected - ws_value,
            foresight=foresight, overhead_s=self.overhead,
            need_s=self.need, missed=self.missed, cut_rounds=rounds, bound_from=bound_from,
            dropped=self.dropped, untried=self.untried, overrun_s=self.overrun_s,
            status=status_of(gap, wanted))
