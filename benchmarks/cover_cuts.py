"""Measurement: the whole model's LP relaxation with cover cuts on whole replicas.

    python benchmarks/cover_cuts.py SCENARIO [--families site,envelope] [--mip SECONDS]

Replicas are whole; the LP relaxation lets them carry fractions, and at its optimum
the sources that could fill a fractional replica tie, so a Lagrangian lift taken at the
LP's duals sees little of the integrality gap (benchmarks/README.md, stops 46-49). A
cut is another road: a valid inequality of whole replicas added to the LP moves its
optimum and its duals at once, without rounds. Two families, both mixed-integer
rounding (MIR) of rows every plan satisfies:

* site and pair: the cover cuts of planner.model.covers, which the decomposition's last
  bound round adds on small models: a demand cell's replicas in reach at least its
  level rounded up, in the largest replica in reach, or unmet demand; for a
  single-region workload, the same on each (region, GPU type) pair, times its choice;
* envelope: a pool's replicas at one source in a month and segment, whose load can be at
  most Lj replicas (its demand in reach), k = ⌊Lj⌋: replicas ≥ k + (load − k) / (Lj − k),
  the convex hull of replicas ≥ ⌈load⌉ on [0, Lj] (k = 0: the small-load rows the
  decomposition already counts, planner.solve.decompose.replicas).

It prints the LP relaxation, the LP with each family and with both, and with --mip
HiGHS's branch and bound on the whole model (its proven bound and best plan), to check
LP ≤ LP with cuts ≤ optimum. A measuring tool, run by hand: it builds the whole model,
as planner solve --export-model does (the default scenario: some 40 s in all).
"""

from __future__ import annotations

import argparse
import math
import time
from collections import defaultdict

import highspy

from planner.io.validate import load_scenario
from planner.model.builder import ModelBuilder
from planner.model.candidates import find_candidates
from planner.model.covers import LEAST_FRACTION, pair_cuts, site_cuts
from planner.model.graph import Transit
from planner.solve.decompose.covered import add_cuts, relaxed_highs
from planner.solve.highs import BulkHiGHS


def envelope_cuts(builder, model):
    """The envelope family: one cut per pool's replicas at a source in a month and
    segment whose most load is a fraction over whole replicas."""
    s = builder.s
    members = defaultdict(list)
    for w in s.workloads:
        members[w.pool_name].append(w.workload)
    levels = defaultdict(list)  # (w, m, k) -> [(site, level)]
    for (w, site, m, k), level in builder.level.items():
        if level > 0:
            levels[(w, m, k)].append((site, level))
    for (pool, r, g, src, m, k), n in model.replicas.items():
        load, most = [], 0.0
        for w in members[pool]:
            x = model.supply.get((w, r, g, src, m, k))
            if x is None:
                continue
            size = builder.per_replica(w, g, src)
            load.append((x, 1.0 / size))
            for site, level in levels[(w, m, k)]:
                near = builder.c.regions_for_site.get((w, site))
                if near is None or r in near:
                    most += level / size
        k_ = math.floor(most)
        d = most - k_
        if d < LEAST_FRACTION or d > 1 - LEAST_FRACTION:
            continue
        yield [(n, 1.0)] + [(x, -a / d) for x, a in load], k_ - k_ / d


def _solve(h) -> tuple[float, float, int]:
    t = time.perf_counter()
    h.run()
    info = h.getInfo()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal, h.getModelStatus()
    return info.objective_function_value, time.perf_counter() - t, \
        info.simplex_iteration_count


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("scenario")
    p.add_argument("--families", default="site,pair,envelope")
    p.add_argument("--mip", type=float, default=0.0,
                   help="then branch and bound on the whole model for this many seconds")
    a = p.parse_args()
    families = a.families.split(",")
    t = time.perf_counter()
    s = load_scenario(a.scenario)
    builder = ModelBuilder(s, find_candidates(s, Transit(s)), None)
    model = builder.build()
    prob = model.prob
    constant = prob.objective.constant
    h = relaxed_highs(prob)
    print(f"{a.scenario}: {builder.cell_count:,} supply cells, {len(model.replicas):,} "
          f"replica counts; built in {time.perf_counter() - t:.1f} s", flush=True)
    lp, secs, its = _solve(h)
    lp += constant
    print(f"LP relaxation                   {lp:,.0f}  ({secs:.1f} s, {its:,} iterations)",
          flush=True)
    found = {"site": site_cuts, "envelope": envelope_cuts, "pair": pair_cuts}
    basis = h.getBasis()
    for name in families + (["+".join(families)] if len(families) > 1 else []):
        h = relaxed_highs(prob)
        h.setBasis(basis)
        count = sum(add_cuts(h, found[f](builder, model)) for f in name.split("+"))
        value, secs, its = _solve(h)
        value += constant
        print(f"LP with {name + ' cuts':<26}{value:,.0f}  ({value / lp - 1:+.3%}; "
              f"{count:,} cuts; {secs:.1f} s from the LP's basis)", flush=True)
    if a.mip > 0:
        mip = ModelBuilder(s, builder.c, None).build()
        cmd = BulkHiGHS(msg=False, threads=1, timeLimit=a.mip, gapRel=1e-9,
                        random_seed=0)
        mip.prob.solve(cmd)
        info = mip.prob.solverModel.getInfo()
        mc = mip.prob.objective.constant
        print(f"branch and bound, {a.mip:g} s: bound {info.mip_dual_bound + mc:,.0f}, "
              f"best plan {info.objective_function_value + mc:,.0f} "
              f"(gap {info.mip_gap:.4%})")


if __name__ == "__main__":
    main()
