"""Benchmark: `planner solve --stochastic` (issue #20).

    python benchmarks/stochastic.py                  # every case
    python benchmarks/stochastic.py default-50

Each case runs the whole command in a fresh process and prints wall-clock seconds,
expected cost, CVaR, the proven bound (L-shaped over Lagrangian cuts, at least wait and
see's) with its gap and rounds of cuts, VSS and EVPI, and which
candidate schedule won. Generated scenarios come from `planner generate` (seed 1). Run it
by hand; tests never time anything. benchmarks/README.md keeps the latest figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import scenario_path  # the same scenarios as the solve benchmark (seed 1)

# case: (scenario, samples, time limit s, workers)
CASES = {
    "default-50-j1": ("default", 50, 300, 1),
    "default-50-j2": ("default", 50, 300, 2),
    "default-50-j4": ("default", 50, 300, 4),
    "200x40x24-20": ("200x40x24", 20, 600, 2),
}


def run_case(case: str, workdir: Path) -> dict:
    name, samples, budget, jobs = CASES[case]
    cmd = [sys.executable, "-m", "planner", "solve", str(scenario_path(name, workdir)),
           "--stochastic", "--samples", str(samples), "--demand-spread", "0.2",
           "--seed", "1", "--jobs", str(jobs), "--time-limit", str(budget), "--json",
           "-o", str(workdir / f"{case}.xlsx")]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    row = {"case": case, "budget_s": budget, "wall_s": round(wall, 1),
           "exit": proc.returncode}
    if proc.returncode == 0:
        st = json.loads(proc.stdout)["stochastic"]
        row.update({k: st[k] for k in ("expected_cost_usd", "cvar_usd", "bound_usd",
                                       "mip_gap", "cut_rounds", "vss_usd", "evpi_usd",
                                       "schedule")})
    else:
        row["error"] = proc.stderr.strip().splitlines()[-1:]
    return row


def main(argv: list[str]) -> None:
    cases = argv or list(CASES)
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            print(json.dumps(run_case(case, Path(tmp))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
