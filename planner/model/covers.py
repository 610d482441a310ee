"""Cover cuts: rows every plan in whole replicas satisfies, which the LP relaxation lacks.

In the LP relaxation a replica may carry a fraction: 15 units of demand on replicas of
10 units cost 1.5 replicas there, 2 in any plan. Where the demand of one site (a
workload's, in a month and segment) needs a fraction of the largest replica in its
reach, every plan pays for the rest of that replica, or for smaller ones that cover it,
or leaves units unmet. Mixed-integer rounding (MIR) of the row that says so,

    Σ_j ρ_j · replicas_j + unmet / c ≥ R,     c = max_j c_j,  ρ_j = c_j / c,  R = level / c

(c_j: units of the workload one replica at source j in its reach delivers; the pool's
replicas there, which its other workloads may fill too; whole replicas_j), gives, with
f = frac(R) > 0,

    Σ_j (⌊ρ_j⌋ + min(frac ρ_j, f) / f) · replicas_j + unmet / (c · f) ≥ ⌈R⌉.

With these rows the LP relaxation of the default scenario rises 0.41 % (1,323 rows);
HiGHS's own cuts at its root node, some 0.7 % in 170 s (benchmarks/README.md,
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


def site_cuts(builder, model) -> Iterator[tuple[list, float]]:
    """One cover cut per demand cell of `model` (built by `builder`) whose level is a
    fraction of the largest replica in its reach: (terms [(variable, coefficient)],
    right-hand side) of a ≥ row."""
    pool_of = {w.workload: w.pool_name for w in builder.s.workloads}
    sources = defaultdict(list)  # (workload, month, segment) → its sources (r, g, src)
    for (w, r, g, src, m, k) in model.supply:
        sources[(w, m, k)].append((r, g, src))
    for (w, site, m, k), level in builder.level.items():
        unmet = model.unmet.get((w, site, m, k))
        near = builder.c.regions_for_site.get((w, site))
        reach = [j for j in sources[(w, m, k)] if near is None or j[0] in near]
        if level <= 0 or unmet is None or not reach:
            continue
        size = {j: builder.per_replica(w, j[1], j[2]) for j in reach}
        largest = max(size.values())
        need = level / largest
        f = need - math.floor(need)
        if not LEAST_FRACTION <= f <= 1.0 - LEAST_FRACTION:
            continue
        terms = []
        for j in reach:
            rho = size[j] / largest
            whole = math.floor(rho + 1e-12)
            terms.append((model.replicas[(pool_of[w], *j, m, k)],
                          whole + min(rho - whole, f) / f))
        terms.append((unmet, 1.0 / (largest * f)))
        yield terms, float(math.ceil(need))
