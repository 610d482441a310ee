"""The solves of a stochastic plan, run on the cluster (planner.cluster): module-level,
picklable, each returning plain data - a scenario planned alone (wait and see), its
Lagrangian cut at a schedule, its recourse under fixed commitments. A solve's safety
stop comes by the command's own (`stop_by`, a time.time(): planner.solve.budget)."""

from __future__ import annotations

from planner.model.builder import ModelBuilder, Restrictions
from planner.model.candidates import find_candidates
from planner.solve.budget import Budget
from planner.solve.decompose.cuts import Cut, commitment_space, cut_at, cut_with
from planner.solve.pipeline import plan_scenario
from planner.solve.work import model_index_s


def _summary(run, budget: Budget) -> dict:
    plan = run.plan
    if plan is None:
        return {"status": "no_plan"}
    t = plan.totals
    return {
        "status": plan.result.status,
        "objective_usd": t["objective_usd"],
        "bound_usd": plan.result.bound,
        "total_cost_usd": t["total_cost_usd"],
        "unmet_unit_hours": t["unmet_unit_hours"],
        # the penalty of demand no offer can serve, in the objective whatever the plan
        "unservable_usd": plan.result.unservable_usd,
        # committed payments inside the horizon this scenario leaves idle (those after
        # it are not idle: the forecast's last month is assumed to go on)
        "stranded_usd": t["idle_committed_usd"],
        "commitments": plan.signed(),
        "least_s": run.least_s,
        # the seconds of work the solve is reckoned to have taken, index to tables
        # (planner.solve.work: the same on every run, whatever the worker)
        "seconds": run.work_s,
        # the wall clock, not the reckoned work, stopped it short of its gap: another
        # run may stop it elsewhere
        "clock_stopped": budget.stopped_short(plan.result.status),
    }


def solve_task(args) -> dict:
    """One scenario planned alone (wait and see), with the commitments its model may
    sign ((offer key, start) -> (upper, cost))."""
    scenario, solver, time_limit, gap, stop_by = args
    budget = Budget.of_work(time_limit, stop_by)
    run = plan_scenario(scenario, solver, gap=gap, budget=budget)
    out = {**_summary(run, budget), "space": commitment_space(run.builder),
           "prices": run.prices}
    out["task_s"] = run.work_s  # all of it, the cut included (reckoned)
    if run.plan is not None:
        # its first cut: at the decomposition's prices (a small model solved whole: its
        # LP's, found by column generation with its own commitments held)
        own = out["commitments"]
        out["cut"] = (cut_with(run.builder, run.prices, own) if run.prices is not None
                      else cut_at(run.builder, own, max(1.0, time_limit)))
        out["task_s"] += out["cut"].work_s
    return out


def cut_task(args) -> Cut:
    """One scenario's Lagrangian cut at a schedule (planner.solve.decompose.cuts), by
    column generation from the prices of its wait-and-see solve."""
    scenario, schedule, seconds, prices = args
    builder = ModelBuilder(scenario, find_candidates(scenario))
    cut = cut_at(builder, dict(schedule), seconds, prices)
    cut.work_s += model_index_s(builder.cell_count)
    return cut


def evaluate_task(args) -> dict:
    """One scenario's recourse under fixed commitments."""
    scenario, commitments, solver, time_limit, gap, stop_by = args
    budget = Budget.of_work(time_limit, stop_by)
    return _summary(plan_scenario(scenario, solver, gap=gap,
                                  restrictions=Restrictions(fixed_commitments=dict(commitments)),
                                  budget=budget), budget)


def work_of(result) -> float:
    """The seconds of work a task's result is reckoned to have taken (a solve's, with its
    cut; a cut's)."""
    if isinstance(result, Cut):
        return result.work_s
    return result.get("task_s", result.get("seconds", 0.0)) if result else 0.0
