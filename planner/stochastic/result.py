"""What a stochastic plan found (`StochasticResult`), its check on fresh samples and
its JSON block (SPEC §4 v2)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner.io.scenario import DemandScenario, Scenario
from planner.solve.budget import Budget
from planner.stochastic.scenarios import apply, cvar
from planner.stochastic.schedules import Candidate
from planner.stochastic.tasks import evaluate_task, work_of


@dataclass
class StochasticResult:
    scenarios: tuple[DemandScenario, ...]
    chosen: Candidate
    mean_plan: Candidate  # the mean forecast's schedule (VSS)
    candidates: list[Candidate]
    wait_and_see: list[dict]
    risk_aversion: float
    alpha: float
    expected_cost_usd: float
    cvar_usd: float
    objective_usd: float
    bound_usd: float
    gap: float
    vss_usd: float
    evpi_usd: float | None  # None: not known (wait-and-see solves cut short)
    # per scenario, the cheapest plan known for it alone (its own or a candidate's)
    foresight: list
    out_of_sample: dict | None = None  # the schedule on fresh samples (out_of_sample)
    overhead_s: float = 0.0  # seconds a solve took beyond its time limit
    need_s: float = 0.0  # the least time limit a solve needs to plan (method._need)
    missed: int = 0  # wait-and-see solves that got no plan from their LP in their time
    dropped: int = 0  # drawn samples the time could not hold, left out
    untried: int = 0  # candidate schedules the time could not evaluate
    overrun_s: float = 0.0  # seconds a table's scenarios were foreseen to take past it
    cut_rounds: int = 0  # rounds of Lagrangian cuts behind the bound
    bound_from: str = "wait and see"  # what proved the bound
    # optimal: the gap is within the requested one (SPEC §4); the mean forecast's plan
    # under the schedule, which the JSON's top level describes, has its own status
    status: str = "feasible"

    def scenario_rows(self) -> list[dict]:
        return [dict(name=s.name, probability=s.probability,
                     total_cost_usd=r.get("total_cost_usd"),
                     objective_usd=r.get("objective_usd"),
                     unmet_unit_hours=r.get("unmet_unit_hours"),
                     stranded_usd=r.get("stranded_usd"),
                     wait_and_see_usd=known, status=r.get("status"))
                for s, r, known in zip(self.scenarios, self.chosen.results, self.foresight)]


# the least time limit of a fresh sample's evaluation
EVALUATION_S = 1.0


def out_of_sample(result: StochasticResult, scenario: Scenario,
                  fresh: tuple[DemandScenario, ...], budget: Budget, runner,
                  solver: str | None = None, gap: float | None = None) -> dict | None:
    """The chosen schedule evaluated on `fresh` scenarios it was not chosen on: their
    expected objective, and how far it lies from the in-sample one (sample average
    approximation's check that the samples were enough). None where the time left holds
    not one such solve (--time-limit 1 ran one past the limit, to 10 s)."""
    # as many fresh samples as fit at the limit a solve needs (equally likely: the
    # first k are a sample too)
    room = budget.left()  # reckoned for one worker, as every solve of the command
    # each at least EVALUATION_S: the count had been taken at the need, the limit then
    # raised to EVALUATION_S, and three evaluations spent 3 s of a 1.8-s room, leaving
    # the plan in the workbook too little to reach its master LP (a 43.6 % gap)
    least = max(result.need_s, EVALUATION_S)
    fits = int(room // (least + result.overhead_s))
    if fits < 1:
        return None
    fresh = fresh[:fits]
    limit = room / len(fresh) - result.overhead_s
    commitments = tuple(sorted(result.chosen.commitments.items()))
    stop_by = budget.wall_end_epoch()
    results = runner.map(evaluate_task, [(apply(scenario, s), commitments, solver, limit, gap,
                                          stop_by) for s in fresh])
    budget.spend(sum(map(work_of, results)))
    costs = np.array([r.get("objective_usd", math.inf) for r in results])
    probabilities = np.array([s.probability for s in fresh])
    probabilities /= probabilities.sum()
    expected = float(np.dot(costs, probabilities))
    return {"samples": len(fresh), "expected_cost_usd": expected,
            "cvar_usd": cvar(costs, probabilities, result.alpha),
            "difference_usd": expected - result.expected_cost_usd}


def stochastic_json(result: StochasticResult) -> dict:
    """The `stochastic` block of `solve --stochastic --json` (SPEC §4 v2)."""
    def r(x, digits=2):
        return None if x is None or not math.isfinite(x) else round(float(x), digits)

    return {
        "status": result.status,
        "expected_cost_usd": r(result.expected_cost_usd),
        "cvar_usd": r(result.cvar_usd),
        "cvar_alpha": result.alpha,
        "risk_aversion": result.risk_aversion,
        # to 1e-6, as the plan's own (planner.report.json_out): cents could state a gap
        # past the one asked beside "optimal"
        "objective_usd": r(result.objective_usd, 6),
        "bound_usd": r(result.bound_usd, 6),
        "mip_gap": r(result.gap, 8),
        "cut_rounds": result.cut_rounds,
        "bound_from": result.bound_from,
        "vss_usd": r(result.vss_usd),
        "evpi_usd": r(result.evpi_usd),
        "schedule": result.chosen.name,
        "candidates_untried": result.untried,
        "out_of_sample": None if result.out_of_sample is None else {
            k: (r(v) if isinstance(v, float) else v) for k, v in result.out_of_sample.items()},
        "candidates": [{"name": c.name,
                        "expected_cost_usd": r(float(np.dot(
                            c.costs(), [s.probability for s in result.scenarios])))}
                       for c in result.candidates],
        "scenarios": [{k: (r(v) if isinstance(v, float) and k != "probability" else v)
                       for k, v in row.items()} for row in result.scenario_rows()],
    }
