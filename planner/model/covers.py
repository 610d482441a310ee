"""Cover cuts: rows every plan in whole replicas satisfies, which the LP relaxation lacks.

In the LP relaxation a replica may carry a fraction: 15 units of demand on replicas of
10 units cost 1.5 replicas there, 2 in any plan. Where the demand of one site (a
workload's, in a month and segment) needs a fraction of the largest replica in its
reach, every plan pays for the rest of that replica, or for smaller ones that cover it,
or leaves units unmet. Mixed-integer rounding (MIR) of the row that says so,

    Σ_j ρ_j · replicas_j + unmet / c ≥ R,     ρ_j = c_j / c,  R = level / c

(c_j: units of the workload one replica at source j in its reach delivers; the pool's
replicas there, which its other workloads may fill too; whole replicas_j; c > 0 any
divisor), gives, with f = frac(R) > 0,

    Σ_j (⌊ρ_j⌋ + min(frac ρ_j, f) / f) · replicas_j + unmet / (c · f) ≥ ⌈R⌉.

Each replica size in reach is a divisor, the largest first. A smaller one sees what the
largest's cut does not: 15 units on replicas of A (10 units, $100) or B (4, $45), the
largest's cut A + 0.8 B ≥ 2 leaves the LP at A = 1, B = 1.25 ($156.25); B's (R = 3.75,
f = 0.75, ρ_A = 2.5) 8/3 A + B ≥ 4 cuts that point off: A = 18/17, B = 20/17,
$2,700 / 17 = $158.82 (the optimum $180).

A single-region workload runs on the one (region, GPU type) pair it chooses; per pair,
the same cut over that pair's sources holds where the pair is chosen, so its right-hand
side is multiplied by the pair's choice (0 or 1):

    Σ_{j on the pair} (…) · replicas_j + unmet / (c · f) ≥ ⌈R⌉ · choose_pair

In the LP relaxation the choice splits over pairs, each part still paying whole
replicas: what the decomposition's lift per pair (planner.solve.decompose.replicas) sees
at one price, in the LP itself.

With these rows the LP relaxation of the default scenario rises 0.645 % (13,938 rows;
0.571 % with the largest divisor alone, 5,127 rows); HiGHS's own cuts at its root node,
some 0.7 % in 170 s; a generated 24×12×12 market's 1.87 % (1.67 %), near the 2.0 %
HiGHS proves in 20 minutes of branch and bound (benchmarks/README.md,
benchmarks/cover_cuts.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator

# A site whose level is within this share of a whole number of replicas gets no row:
# its lift is at most that share of a replica, and its coefficients (1 / f) would make
# the LP ill-conditioned.
LEAST_FRACTION = 0.01


def cover_cuts(builder, model) -> Iterator[tuple[list, float]]:
    """Every cover cut of `model` (built by `builder`): (terms [(variable, coefficient)],
    right-hand side) of a ≥ row."""
    yield from site_cuts(builder, model)
    yield from pair_cuts(builder, model)


def site_cuts(builder, model) -> Iterator[tuple[list, float]]:
    """One cut per demand cell whose level is a fraction of the largest replica in its
    reach."""
    sources = defaultdict(list)  # (workload, month, segment) → its sources (r, g, src)
    for (w, r, g, src, m, k) in model.supply:
        sources[(w, m, k)].append((r, g, src))
    for pool, w, m, k, level, unmet, near in _demand_cells(builder, model):
        reach = [j for j in sources[(w, m, k)] if near is None or j[0] in near]
        if reach:
            yield from _cut(builder, model, pool, w, level, unmet, reach, m, k)


def pair_cuts(builder, model) -> Iterator[tuple[list, float]]:
    """A single-region workload's demand cell: one cut per (region, GPU type) pair in its
    reach, its right-hand side times the pair's choice."""
    pairs = defaultdict(lambda: defaultdict(list))  # (w, m, k) → (r, g) → its sources
    for (w, r, g, src, m, k) in model.supply:
        if (w, r, g) in model.choose:
            pairs[(w, m, k)][(r, g)].append((r, g, src))
    for pool, w, m, k, level, unmet, near in _demand_cells(builder, model):
        for (r, g), reach in pairs.get((w, m, k), {}).items():
            if near is None or r in near:
                yield from _cut(builder, model, pool, w, level, unmet, reach, m, k,
                                choose=model.choose[(w, r, g)])


def _demand_cells(builder, model):
    """Each demand cell with demand and an unmet variable: (pool, workload, month,
    segment, level, unmet variable, regions within its SLO (None: any))."""
    pool_of = {w.workload: w.pool_name for w in builder.s.workloads}
    for (w, site, m, k), level in builder.level.items():
        unmet = model.unmet.get((w, site, m, k))
        if level > 0 and unmet is not None:
            yield (pool_of[w], w, m, k, level, unmet,
                   builder.c.regions_for_site.get((w, site)))


def _cut(builder, model, pool, w, level, unmet, reach, m, k, choose=None):
    """The cover cuts of `level` units of `w` served from sources `reach` ((r, g, src)),
    one per distinct replica size c in reach, the largest first, each but where the
    level is within LEAST_FRACTION of whole replicas of c; with `choose`, their
    right-hand sides times that variable."""
    size = {j: float(builder.per_replica(w, j[1], j[2])) for j in reach}  # not numpy's
    replicas = {j: model.replicas[(pool, *j, m, k)] for j in reach}
    for c in sorted(set(size.values()), reverse=True):
        need = float(level) / c
        f = need - math.floor(need)
        if not LEAST_FRACTION <= f <= 1.0 - LEAST_FRACTION:
            continue
        terms = []
        for j in reach:
            rho = size[j] / c
            whole = math.floor(rho + 1e-12)
            terms.append((replicas[j], whole + min(rho - whole, f) / f))
        terms.append((unmet, 1.0 / (c * f)))
        if choose is None:
            yield terms, float(math.ceil(need))
        else:
            yield terms + [(choose, -float(math.ceil(need)))], 0.0
