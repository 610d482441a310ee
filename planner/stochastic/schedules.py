"""Commitment schedules a stochastic plan tries: candidates and their results in every
scenario, the scenarios' consensus, the cuts' master's schedule in whole instances, and
steps of one instance more or less within capped offers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from planner.io.scenario import Scenario


@dataclass
class Candidate:
    name: str
    commitments: dict
    results: list[dict] = field(default_factory=list)
    origin: str = ""  # a schedule stepped to: the candidate the steps started from
    steps: int = 0  # ... and how many steps from it

    def step(self, commitments: dict, month=str) -> "Candidate":
        """The schedule `commitments`, one step from this one, named by the step (an
        outside audit: two schedules a step from the same one, at $22,776 and $23,944,
        had one name); `month`: a month's label."""
        origin = self.origin or self.name
        moves = [f"{key[0]} from {month(key[1])} {new - self.commitments.get(key, 0):+g} GPUs"
                 for key in sorted({*self.commitments, *commitments})
                 if (new := commitments.get(key, 0)) != self.commitments.get(key, 0)]
        return Candidate(f"{origin} + {self.steps + 1} step(s), the last "
                         + ("; ".join(moves) or "no change"), commitments,
                         origin=origin, steps=self.steps + 1)

    def costs(self) -> np.ndarray:
        return np.array([r.get("objective_usd", math.inf) for r in self.results])


def consensus_schedule(scenarios, results: list[dict], offers) -> dict:
    """Probability-weighted average of the scenarios' commitments, rounded down to whole
    instances; below an offer's minimum: none."""
    mean: dict = {}
    for s, r in zip(scenarios, results):
        for key, q in r.get("commitments", {}).items():
            mean[key] = mean.get(key, 0.0) + s.probability * q
    out = {}
    for key, q in sorted(mean.items()):
        o = offers[key[0]]
        n = o.gpus_per_instance
        gpus = int(math.floor(q / n + 1e-9)) * n
        if gpus >= max(o.min_gpus, 1):
            out[key] = gpus
    return out


def whole_schedule(schedule: dict, offers) -> dict:
    """The master's fractional schedule in whole instances: half up (capped offers: down,
    so their overlapping terms stay within max_gpus); below an uncapped offer's minimum:
    the minimum from half of it, else none."""
    out = {}
    for key, q in sorted(schedule.items()):
        o = offers[key[0]]
        n = o.gpus_per_instance
        # capped offers round down: the master kept their overlapping terms within it
        whole = math.floor(q / n + 1e-9) if o.max_gpus is not None else math.floor(q / n + 0.5)
        gpus = int(whole) * n
        if 0 < gpus < o.min_gpus:
            gpus = o.min_gpus if q >= o.min_gpus / 2 and o.max_gpus is None else 0
        if gpus > 0:
            out[key] = gpus
    return out


def same_schedule(a: dict, b: dict, tolerance: float = 1e-6) -> bool:
    return all(abs(a.get(k, 0.0) - b.get(k, 0.0)) <= tolerance for k in set(a) | set(b))


def stepped_schedule(schedule: dict, key: tuple, sign: int, offers,
                     months: int) -> dict | None:
    """`schedule` with the commitment `key` (offer key, start) one instance more (`sign`
    1) or less (-1): below the offer's minimum, none; None where it would leave nothing
    to change or overfill a capped offer in a month."""
    o = offers[key[0]]
    n = o.gpus_per_instance
    now = schedule.get(key, 0)
    gpus = now + sign * n
    if 0 < gpus < o.min_gpus:
        gpus = max(o.min_gpus, n) if sign > 0 else 0
    if gpus < 0 or gpus == now:
        return None
    out = {k: q for k, q in schedule.items() if k != key}
    if gpus > 0:
        out[key] = gpus
    if o.max_gpus is not None and any(
            sum(q for (name, start), q in out.items()
                if name == o.key and start <= m < start + o.commit_months) > o.max_gpus
            for m in range(months)):
        return None
    return out


def offer_caps(space: dict, scenario: Scenario) -> list:
    """[(commitments, max_gpus)]: those of one capped offer active in one month."""
    out = []
    by_offer: dict = {}
    for key in space:
        by_offer.setdefault(key[0], []).append(key)
    for name, keys in sorted(by_offer.items()):
        o = scenario.offer_by_key[name]
        if o.max_gpus is None:
            continue
        for m in range(scenario.settings.horizon_months):
            active = [k for k in keys if k[1] <= m < k[1] + o.commit_months]
            if len(active) > 1:
                out.append((active, o.max_gpus // o.gpus_per_instance * o.gpus_per_instance))
    return out
