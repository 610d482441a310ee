"""Benchmark: generated scenarios from small to enterprise scale, stage by stage.

    python benchmarks/bench.py                 # the standard sizes
    python benchmarks/bench.py 200x40x24       # one size: workloads x regions x months

For each size, in a fresh process (so peak memory is its own): candidates, variables,
integer variables, constraints, nonzeros; seconds in load, validate, graph, candidates,
build, hand-off to HiGHS, HiGHS itself, extract, workbook; peak memory; status and gap.
Then the same model exported as MPS and solved by HiGHS alone with the same limits, so
the overhead of everything around the solver is a ratio. Sizes above GENERATE_ABOVE supply
cells go through column generation, or are planned in parts when they hold more than one
part's worth for the time limit (`pipeline.in_parts`), as `planner solve` does; sizes
whose model would exceed MAX_VARIABLES are measured up to the candidate stage and their size estimated.
Figures go to stdout; benchmarks/README.md keeps the latest with the machine they came from.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = ["20x10x12", "50x20x24", "200x40x24", "1000x100x36"]
# 1000x100x36: 500 s (as generated), so that with load, the workbook (~1 min) and parts
# running past their shares the run ends within the 10 minutes issue #7 asks for
TIME_LIMIT = {"20x10x12": 60, "50x20x24": 60, "200x40x24": 60, "1000x100x36": 500}
GAP = 0.005
# Above this many (estimated) cells not even column generation is attempted (1000x100x36
# has ~73 M; pricing them takes numpy arrays per workload, never a list of cells).
MAX_VARIABLES = 200_000_000


def measure(size: str, workdir: Path) -> dict:
    from planner.solution import Solution
from planner import highs
    from planner.candidates import find_candidates
    from planner.generate import generate
    from planner.graph import Transit
    from planner.load import load_raw
    from planner.columns import generate_columns
    from planner.model import ModelBuilder
    from planner.pipeline import GENERATE_ABOVE, GENERATE_SHARE, in_parts, plan_builder
    from planner.plan import extract_plan
    from planner.report import write_workbook
    from planner.solve import solve
    from planner.validate import validate

    w, r, m = (int(x) for x in size.split("x"))
    folder = workdir / size
    generate(folder, w, r, m, seed=1)
    out: dict = {"size": size, "seconds": {}}
    sec = out["seconds"]

    def stage(name, fn):
        t = time.perf_counter()
        value = fn()
        sec[name] = round(time.perf_counter() - t, 3)
        return value

    raw = stage("load", lambda: load_raw(folder))
    scenario, issues = stage("validate", lambda: validate(raw))
    assert scenario is not None, issues
    transit = stage("graph", lambda: Transit(scenario))
    cands = stage("candidates", lambda: find_candidates(scenario, transit))
    counts = cands.counts()
    out["candidates"] = counts["candidate pairs"]
    out["segments"] = counts["segments per month"]
    estimate = out["candidates"] * m * out["segments"]
    out["estimated_variables"] = estimate
    if estimate > MAX_VARIABLES:
        out["skipped"] = f"model of ~{estimate:,} variables not built (> {MAX_VARIABLES:,})"
        out["peak_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        return out
    limit = TIME_LIMIT.get(size, 60)
    highs.TIMES.update(handoff=0.0, run=0.0)
    builder = ModelBuilder(scenario, cands)
    out["cells"] = builder.cell_count
    strategy = "auto"
    if in_parts(out["cells"], limit):  # as planner solve does: in parts
        t = time.perf_counter()
        model, result = plan_builder(builder, "highs", limit, GAP)
        total_solve = time.perf_counter() - t
        out["parts"] = result.termination
    elif out["cells"] > GENERATE_ABOVE:  # as planner solve does: column generation
        t = time.perf_counter()
        generated = generate_columns(builder, GENERATE_SHARE * limit, stop_gap=GAP / 2)
        sec["columns"] = round(time.perf_counter() - t - highs.TIMES["handoff"]
                               - highs.TIMES["run"], 3)
        if generated is None:
            out["skipped"] = "column generation: no LP optimum within its time share"
            out["peak_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
            return out
        model = generated.model
        out["column_rounds"] = generated.rounds
        out["converged"] = generated.converged
        limit = max(1.0, limit - (time.perf_counter() - t))
        strategy = "lp-guided"
    else:
        model = stage("build", lambda: builder.build())
    if "parts" in out:  # parts: their builds, pricing, rounding and the merge
        sec["parts"] = round(total_solve - highs.TIMES["handoff"] - highs.TIMES["run"], 3)
    else:
        before = highs.TIMES["handoff"] + highs.TIMES["run"]  # column generation's
        t = time.perf_counter()
        result = solve(model, "highs", limit, GAP, strategy=strategy)
        inside = highs.TIMES["handoff"] + highs.TIMES["run"] - before
        sec["solve other"] = round(time.perf_counter() - t - inside, 3)
    out.update(model.stats())
    sec["handoff"] = round(highs.TIMES["handoff"], 3)
    sec["highs"] = round(highs.TIMES["run"], 3)
    out.update(status=result.status, termination=result.termination, gap=result.gap)
    if result.has_solution:
        plan = stage("extract", lambda: extract_plan(model, Solution.of_model(model), result))
        stage("workbook", lambda: write_workbook(plan, workdir / f"{size}.xlsx"))
    out["peak_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    around = sum(v for k, v in sec.items() if k != "highs")
    out["total_seconds"] = round(sum(sec.values()), 2)
    out["around_solver_ratio"] = round(around / sec["highs"], 3) if sec["highs"] else None
    if "parts" in out:  # no one model was solved: nothing to hand HiGHS alone
        out["highs_alone"] = "n/a (planned in parts)"
        return out
    # the same model, HiGHS alone from the exported MPS
    mps = workdir / f"{size}.mps"
    model.prob.writeMPS(str(mps))
    from planner.highs import new_highs

    h = new_highs()
    h.setOptionValue("time_limit", float(limit))
    h.setOptionValue("mip_rel_gap", GAP)
    h.setOptionValue("threads", 1)
    h.readModel(str(mps))
    t = time.perf_counter()
    h.run()
    info = h.getInfo()
    out["highs_alone"] = {"seconds": round(time.perf_counter() - t, 2),
                          "status": h.modelStatusToString(h.getModelStatus()),
                          "gap": info.mip_gap if info.mip_gap < 1e300 else None}
    return out


def main(argv: list[str]) -> None:
    if argv and argv[0] == "--one":
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(measure(argv[1], Path(tmp))))
        return
    sizes = argv or SIZES
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    for size in sizes:
        done = subprocess.run([sys.executable, __file__, "--one", size], capture_output=True,
                              text=True)
        if done.returncode != 0:
            print(f"{size}: failed\n{done.stderr[-2000:]}")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"\n== {size} (workloads x regions x months)")
        print(f"  candidates {r['candidates']:,}, segments/month {r['segments']}")
        if "skipped" in r:
            print(f"  {r['skipped']}; peak {r['peak_mib']} MiB")
            print(f"  seconds: {r['seconds']}")
            continue
        print(f"  variables {r['variables']:,} (integer {r['integer variables']:,}), "
              f"constraints {r['constraints']:,}, nonzeros {r['nonzeros']:,}")
        print(f"  seconds: {r['seconds']}  total {r['total_seconds']}")
        gap = "n/a" if r["gap"] is None else f"{r['gap']:.4f}"
        print(f"  status {r['status']} ({r['termination']}), gap {gap}, "
              f"peak {r['peak_mib']} MiB")
        print(f"  everything around HiGHS / HiGHS: {r['around_solver_ratio']}")
        print(f"  HiGHS alone on the MPS: {r['highs_alone']}")


if __name__ == "__main__":
    main(sys.argv[1:])
