"""Solve a scenario written as tables, and pass every plan through the independent checker."""

from __future__ import annotations

import itertools
from pathlib import Path

from scenarios import write_csv

from planner.check import check_plan
from planner.io.validate import load_scenario
from planner.model.builder import Restrictions
from planner.solve.pipeline import plan_scenario

_count = itertools.count()


def solve_tables(tmp_path: Path, tables: dict, solver: str = "highs",
                 restrictions: Restrictions | None = None, time_limit: float = 60,
                 gap: float = 1e-9):
    """Write, load, solve, check; return the plan (asserting the checker accepts it)."""
    folder = write_csv(tmp_path / f"scenario{next(_count)}", tables)
    scenario = load_scenario(folder)
    run = plan_scenario(scenario, solver=solver, time_limit=time_limit, gap=gap,
                        restrictions=restrictions)
    assert run.plan is not None, f"no plan: {run}"
    problems = check_plan(scenario, run.plan, restricted=restrictions is not None)
    assert problems == [], "\n".join(problems)
    return run.plan


def cost(plan) -> float:
    return plan.totals["total_cost_usd"]


def gpus_by(plan, *keys) -> dict:
    """Sum of assignment GPUs grouped by the given columns."""
    grouped = plan.assignments.groupby(list(keys))["gpus"].sum()
    return {k: round(float(v), 6) for k, v in grouped.items() if v > 1e-9}
