"""Demand scenarios of a stochastic plan: drawn samples, a scenario's demand as one
scales it, the probability-weighted mean forecast, and CVaR over them."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from planner.io.scenario import DemandScenario, Scenario


def sample_scenarios(scenario: Scenario, samples: int, spread: float, seed: int,
                     correlation: float = 0.5) -> tuple[DemandScenario, ...]:
    """`samples` equally likely scenarios: each workload's demand × max(0, 1 + spread ·
    (√ρ·Z + √(1−ρ)·Z_w)), Z common to all workloads of a sample (correlation ρ), Z_w its
    own; seeded, so the same arguments give the same samples."""
    rng = np.random.default_rng(seed)
    names = sorted({d.workload for d in scenario.demand})
    width = len(str(samples))
    out = []
    for i in range(samples):
        common = rng.standard_normal()
        own = rng.standard_normal(len(names))
        factors = np.maximum(0.0, 1.0 + spread * (math.sqrt(correlation) * common
                                                   + math.sqrt(1 - correlation) * own))
        out.append(DemandScenario(
            f"sample-{i + 1:0{width}d}", 1.0 / samples,
            tuple(((w, None), round(float(f), 6)) for w, f in zip(names, factors))))
    return tuple(out)


def apply(scenario: Scenario, ds: DemandScenario) -> Scenario:
    """The scenario with its demand as `ds` scales it."""
    demand = tuple(dataclasses.replace(d, amount=d.amount * ds.multiplier(d.workload, d.month))
                   for d in scenario.demand)
    return dataclasses.replace(scenario, demand=demand, name=f"{scenario.name} [{ds.name}]")


def mean_forecast(scenario: Scenario, scenarios) -> Scenario:
    """The probability-weighted mean forecast."""
    demand = tuple(dataclasses.replace(d, amount=d.amount * sum(
        s.probability * s.multiplier(d.workload, d.month) for s in scenarios))
        for d in scenario.demand)
    return dataclasses.replace(scenario, demand=demand)


def cvar(costs, probabilities, alpha: float) -> float:
    """CVaR_α of a discrete distribution: the expected cost in its worst (1 − α) tail."""
    if alpha <= 0:
        return float(np.dot(costs, probabilities))
    order = np.argsort(costs)[::-1]
    tail, total = 1.0 - alpha, 0.0
    left = tail
    for i in order:
        take = min(probabilities[i], left)
        total += take * costs[i]
        left -= take
        if left <= 1e-12:
            break
    return total / tail
