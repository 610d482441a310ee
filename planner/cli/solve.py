"""`planner solve`, deterministic or stochastic (SPEC §4)."""

from __future__ import annotations

import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from planner import interrupt
from planner.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_ERROR,
    EXIT_NO_PLAN,
    GAP_OPTION,
    QUIET,
    QUIET_OPTION,
    SAID,
    SOLVER_OPTION,
    app,
    check_cluster,
    check_outputs,
    check_ranges,
    check_solver_options,
    check_suffixes,
    command_started,
    default_scenario,
    err,
    every_problem,
    guard,
    load_valid,
    pace_machine,
    report_seconds,
    say_warnings,
    show_stage,
    warn,
    warn_clock_stopped,
    warn_past_limit,
    warn_short_budget,
    warn_solver,
    warn_solves_stopped,
    writing_seconds,
)
from planner.report.json_text import dumps

# Share of the solve's time the plan gets when the comparison plans are solved after it
# (one core; they share the rest): they are what its savings are stated against, not the
# plan itself, and at 200x40x24 the plan's first master LP alone takes some 20 s of 60 s.
PLAN_SHARE = 0.8
# solve --stochastic --samples: the share of the time for choosing the schedule, the rest
# for evaluating it on fresh samples (drawn with the seed + FRESH_SEED)
OUT_OF_SAMPLE_SHARE, FRESH_SEED = 0.8, 1_000_003


@app.command()
@guard
def solve(
    scenario: Optional[Path] = typer.Argument(None, help="folder of CSVs or .xlsx; "
                                              "default: the scenario in data/"),
    output: Optional[Path] = typer.Option(None, "-o", "--output",
                                          help="workbook to write (default reports/plan.xlsx)"),
    as_json: bool = typer.Option(False, "--json", help="print the plan as JSON on stdout"),
    solver: Optional[str] = SOLVER_OPTION,
    time_limit: Optional[float] = typer.Option(
        None, "--time-limit", help="seconds for the whole command, comparison plans and "
                                   "workbook included (default: the scenario's setting)"),
    gap: Optional[float] = GAP_OPTION,
    export_model: Optional[Path] = typer.Option(None, "--export-model",
                                                help="write the model as MPS"),
    threads: int = typer.Option(1, "--threads",
                                help="solver threads, ≥ 0 (0: the solver's choice); each run at "
                                     "the same count gives the same plan, but with more "
                                     "than one the comparison plans come after the plan, "
                                     "in part of its time"),
    baselines: bool = typer.Option(
        True, "--baselines/--no-baselines",
        help="also solve the comparison plans (pay-as-you-go only, single GPU type, one "
             "provider on demand) for the savings, within the same time limit"),
    rounds: Optional[str] = typer.Option(
        None, "--rounds", help="rebuild a decomposition's plan round for round: the "
                               "'rounds' of an earlier run's JSON (A+B+C+I)"),
    focus: Optional[Path] = typer.Option(
        None, "--focus", help="also write the plan's costs as FinOps FOCUS 1.2 charges "
                              "(CSV); the workbook's FOCUS sheet holds the same rows"),
    stochastic: bool = typer.Option(
        False, "--stochastic", help="one commitment schedule for several demand scenarios "
                                    "(the demand_scenarios table, or --samples)"),
    samples: Optional[int] = typer.Option(None, "--samples",
                                          help="with --stochastic: draw this many scenarios "
                                               "(≥ 1)"),
    # (a spread over 10 asks for demand 30 times the forecast one sample in a hundred;
    # inf or 1e308 overflowed into an unexpected error)
    demand_spread: float = typer.Option(0.2, "--demand-spread",
                                        help="sampled demand: 1 + spread × a standard normal "
                                             "(0 to 10)"),
    seed: int = typer.Option(0, "--seed", help="seed of the samples (≥ 0)"),
    correlation: float = typer.Option(0.5, "--correlation",
                                      help="share of the samples' variation common to all "
                                           "workloads (0 to 1)"),
    # (λ over 1e6 weighs CVaR a million times the expected cost, past any use; inf gave
    # a gap of nan %)
    risk_aversion: float = typer.Option(0.0, "--risk-aversion",
                                        help="λ: minimize expected cost + λ·CVaR (0 to 1e6)"),
    cvar_alpha: float = typer.Option(0.9, "--cvar-alpha",
                                     help="α of CVaR: the worst (1 − α) of the scenarios "
                                          "(0 to 0.999)"),
    jobs: int = typer.Option(1, "--jobs", help="with --stochastic: local Dask workers "
                             "(0: one per core, as whatif's)"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler",
                                            help="with --stochastic: an existing Dask "
                                                 "cluster's scheduler address"),
    quiet: bool = QUIET_OPTION,
):
    """Solve a scenario at least cost and write the finance workbook."""
    QUIET["on"] = quiet
    from planner.report.json_out import plan_json
    from planner.solve.budget import Budget
    from planner.solve.pipeline import export_model as write_mps

    started = command_started()
    if stochastic:
        _warn_deterministic_only(export_model=export_model, rounds=rounds)
        export_model = rounds = None
    path = scenario or default_scenario()
    out = output or Path("reports/plan.xlsx")
    with show_stage(f"loading {path}"):
        solver, _, _, fixed_rounds, _, _, s = every_problem(
            lambda: check_solver_options(solver, time_limit, gap),
            lambda: check_ranges(
                ("--threads", threads, 0, None), ("--samples", samples, 1, None),
                ("--demand-spread", demand_spread, 0, 10), ("--seed", seed, 0, None),
                ("--correlation", correlation, 0, 1), ("--risk-aversion", risk_aversion, 0, 1e6),
                ("--cvar-alpha", cvar_alpha, 0, 0.999), ("--jobs", jobs, 0, None)),
            lambda: check_cluster(jobs, scheduler) if stochastic else None,
            lambda: _replayed_rounds(rounds),
            lambda: check_outputs(out, export_model, focus, scenario=path),
            lambda: check_suffixes(xlsx=out, mps=export_model, csv=focus),
            lambda: load_valid(path))
        pace_machine()
    say_warnings(s)
    budget = Budget(time_limit if time_limit is not None else s.settings.time_limit_s,
                    start=started)
    keep = report_seconds(s)
    warned = warn_short_budget(budget, keep)
    if stochastic:
        _solve_stochastic(s, budget, keep, out, as_json, focus, solver, gap, samples,
                          demand_spread, seed, correlation, risk_aversion, cvar_alpha, jobs,
                          scheduler, started)
        return
    _warn_stochastic_only(samples=samples, demand_spread=demand_spread, seed=seed,
                          correlation=correlation, risk_aversion=risk_aversion,
                          cvar_alpha=cvar_alpha, jobs=jobs, scheduler=scheduler)
    plan, compare, run = _plan_and_compare(s, budget, keep, solver, gap, threads,
                                           baselines, fixed_rounds)
    if export_model is not None:
        write_mps(run, export_model)
        err.print(f"model written to {escape(str(export_model))}")
    _write_files(plan, out, focus, seconds=run.seconds, baselines=compare)
    if not warned and fixed_rounds is None:  # a replay is not bounded by the clock
        warn_past_limit(budget, "a first plan and its files")
    _say_done(plan, started, out)
    if as_json:
        data = plan_json(plan, baselines=compare, notes=SAID)
        sys.stdout.write(dumps(data))


def _plan_and_compare(s, budget, keep: float, solver, gap, threads: int, baselines: bool,
                      fixed_rounds):
    """The plan (checked), its comparison plans' entries with their savings, and the
    run that found it: the comparison plans solved on the second core beside the plan
    where there is one and the time holds the start of their process, else after it in
    what the plan leaves (PLAN_SHARE); the cheapest comparison plan stands as the plan
    where it costs less."""
    from planner.baselines import against, can_solve_beside, solve_beside
    from planner.solve.pipeline import plan_scenario
    from planner.solve.work import load_s, process_start_s

    # what follows reads the work clock (planner.solve.budget), started at what loading
    # is reckoned to have taken: the same steps, the same plan on every run
    work = budget.reckoned(load_s(s))
    with ExitStack() as stack:
        beside = None
        # the process beside spends its start before its work: its work clock has what
        # is left after it, or its last plan met the wall clock's stop wherever the load
        # put it; where its start would take as long as its plans, they come after the
        # plan (a 5x3x2 market at --time-limit 5: no comparison plan, the command ended
        # at 3.3 s)
        start = process_start_s()
        if baselines and can_solve_beside(threads) and work.left() - keep >= 2 * start:
            beside = stack.enter_context(
                solve_beside(s, solver, gap, work.left() - keep - start, threads,
                             wall_end=work.deadline - keep))
        with show_stage("planning") as status:
            def progress(report):
                status.update(f"planning: {report}")

            share = PLAN_SHARE if baselines and beside is None else 1.0
            planning = work.share(share, keep, writing_seconds)
            run = plan_scenario(s, solver, gap=gap, threads=threads or None,
                                budget=planning, rounds=fixed_rounds, progress=progress)
        _exit_without_plan(run)
        if fixed_rounds is None:
            warn_clock_stopped(planning, run.result)
        warn_solver(solver or s.settings.solver, run.result.solver)
        _exit_if_check_fails(s, run.plan)
        with show_stage("solving the comparison plans"):
            entries, cheapest = _comparison_plans(s, run, beside, baselines, solver, gap,
                                                  work.share(1.0, keep), threads,
                                                  until=budget.last_moment - keep)
        plan = _cheapest_plan(s, run, cheapest, gap if gap is not None else
                              s.settings.mip_gap, work, keep)
        compare = against(entries, plan)
        _warn_beaten(compare, plan)
    return plan, compare, run


def _exit_without_plan(run) -> None:
    """Exit 3 where the solver itself failed (SPEC §4: a valid scenario always has a
    plan otherwise)."""
    if run.plan is None:
        err.print(f"[red]no plan: the solver failed[/] ({escape(run.result.termination)})")
        raise typer.Exit(EXIT_NO_PLAN)


def _exit_if_check_fails(s, plan, restricted: bool = False) -> None:
    """Exit 1, writing nothing, where the plan fails the independent check
    (planner.check): never seen, and never to be written as if it were sound."""
    from planner.check import check_plan

    problems = check_plan(s, plan, restricted=restricted)
    if problems:
        err.print("[red]the plan fails the independent check:[/]")
        for p in problems[:20]:
            err.print(f"  {p}", markup=False)
        raise typer.Exit(EXIT_ERROR)


def _write_files(plan, out: Path, focus: Path | None, **workbook) -> None:
    """The workbook (`workbook`: write_workbook's further arguments) and, if asked, the
    FOCUS charges."""
    from planner.report.workbook import write_workbook

    with show_stage(f"writing {out}"):
        write_workbook(plan, out, notes=SAID, **workbook)
    if focus is not None:
        from planner.report.focus import focus_rows, write_focus_csv

        write_focus_csv(focus_rows(plan), focus)
        err.print(f"FOCUS charges written to {escape(str(focus))}")


def _warn_deterministic_only(**given) -> None:
    """--export-model and --rounds given to --stochastic: one model per scenario and
    schedule, none of them the plan's alone. Said, not silently passed over (no file
    had been written, and no word)."""
    moot = [f"--{name.replace('_', '-')}" for name, value in given.items()
            if value is not None]
    if moot:
        warn(f"{' and '.join(moot)} appl"
             f"{'ies' if len(moot) == 1 else 'y'} to a deterministic solve, not "
             f"to --stochastic (a solve per scenario and schedule); ignored")


def _replayed_rounds(rounds: str | None):
    """--rounds as the decomposition's Rounds (None: not given); bad text exits 2."""
    from planner.solve.decompose.method import Rounds

    if rounds is None:
        return None
    try:
        fixed = Rounds.parse(rounds)
    except ValueError as e:
        err.print(f"[red]error:[/] --rounds: {escape(str(e))}")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    # a replay is bounded by its rounds, not the clock (SPEC's S + 10 % is the clock's)
    warn(f"--rounds {rounds} rebuilds the plan round for round, "
         f"whatever the clock: the time limit does not stop it")
    return fixed


def _say_done(plan, started: float, out: Path) -> None:
    """The closing line: status (and why not optimal, with the gap), totals, unmet
    demand, commitments, seconds, rounds and the workbook written."""
    t = plan.totals
    res = plan.result
    gap_text = "" if res.gap is None else f"; gap {res.gap:.2%} over bound ${res.bound:,.0f}"
    note = ("" if res.status == "optimal"
            else f" [yellow]({escape(res.termination)}{gap_text})[/]")
    err.print(f"{res.status}{note}: total ${t['total_cost_usd']:,.0f}, "
              f"unmet {t['unmet_unit_hours']:,.1f} unit-hours "
              f"({t['unservable_unit_hours']:,.1f} no offer can serve), "
              f"{len(plan.commitments)} commitment(s); {time.perf_counter() - started:.1f} s"
              + (f", rounds {res.rounds}" if res.rounds else "")
              + f"; wrote {escape(str(out))}")


def _warn_beaten(compare: list[dict], plan) -> None:
    """Say so when a comparison plan's objective is below the plan's (it did not stand
    as the plan: no time left to turn it into tables, or it failed the check)."""
    from planner.baselines import costs_less

    ours = plan.totals["objective_usd"]
    for b in compare:
        if b.get("objective_usd") is not None and costs_less(b["objective_usd"], ours):
            warn(f"the comparison plan '{b['name']}' costs "
                 f"${ours - b['objective_usd']:,.0f} less than the plan (objective): "
                 f"the plan is not the best found")


def _cheapest_plan(s, run, cheapest, gap: float, budget, keep: float):
    """The plan: the cheapest comparison plan where it costs less than the plan found
    (planner.baselines.cheaper_plan) and time is left to turn it into tables (as long as
    the plan's took), or, past that time, where it costs less by more than the gap asked
    (a generated market of single-region burst workloads: the plan found $786 M at 30 s,
    the pay-as-you-go comparison plan $8.5 M; its tables and check take a fraction of
    the writing kept for, within SPEC's 10 %), checked as the plan was; else the plan
    found."""
    from planner.baselines import cheaper_plan
    from planner.check import check_plan
    from planner.solve.work import plan_tables_s

    if cheapest is None:
        return run.plan
    ours = run.plan.totals["objective_usd"]
    if budget.left() < keep + plan_tables_s(run.plan) and (
            budget.out_of_time() or cheapest.objective >= ours - gap * abs(ours)):
        return run.plan
    better = cheaper_plan(run, run.plan, cheapest, gap)
    if better is None:
        return run.plan
    problems = check_plan(s, better)
    if problems:  # never seen: the plan found stands, and the warning says why
        warn(f"the comparison plan '{cheapest.name}' fails the "
             f"independent check as the plan ({problems[0]})")
        return run.plan
    err.print(f"the comparison plan '{cheapest.name}' costs "
              f"${run.plan.totals['objective_usd'] - better.totals['objective_usd']:,.0f} "
              f"less than the plan found (objective): it stands as the plan")
    return better


def _warn_stochastic_only(**given) -> None:
    """Say so when options of --stochastic are given without it (values other than their
    defaults in `solve`'s signature): they change nothing."""
    import inspect

    options = inspect.signature(solve).parameters
    moot = [f"--{name.replace('_', '-')}" for name, value in given.items()
            if value != options[name].default.default]
    if moot:
        warn(f"{', '.join(moot)} appl{'ies' if len(moot) == 1 else 'y'}"
             f" to --stochastic only; ignored")


def _comparison_plans(s, run, beside, baselines, solver, gap, budget, threads, until):
    """The comparison plans' entries (without their savings) and the cheapest of them
    (planner.baselines.Cheapest; None: none has a plan): as solved beside the plan (waited
    for until `until`, the command's last moment less the time kept for writing), or
    solved now in `budget`, or listed as not run."""
    from planner.baselines import solve_comparisons, without_plans
    from planner.beside import BesideFailed, BesideLate

    if not baselines:
        return without_plans(s, run.candidates, "not_run"), None
    if beside is None:
        # a plan stopped at first prices took about what each comparison plan's first
        # plan will take: those the time left does not hold are not run
        entries, cheapest = solve_comparisons(
            s, solver, gap, budget, threads or None, run.candidates.transit, run.candidates,
            first_plan_s=run.work_s if run.short_of_lp else 0.0)
        skipped = [e["name"] for e in entries if e["status"] == "not_run"]
        if skipped:
            warn(f"the comparison plan(s) {', '.join(repr(n) for n in skipped)} were not "
                 "run: the time limit did not hold their first plans (no saving is "
                 "stated against them); a longer --time-limit solves them")
        return entries, cheapest
    try:  # the command ends within S + 10 %
        return beside.result(timeout=max(0.0, until - time.perf_counter()))
    except BesideLate:
        warn("the comparison plans were not done within the time "
             "limit; they are listed without plans (no_plan)")
        return without_plans(s, run.candidates, "no_plan"), None
    except BesideFailed as e:
        err.print(f"[yellow]the comparison plans failed: {escape(str(e))}[/]")
        return without_plans(s, run.candidates, "no_plan"), None


def _last_solve_budget(work, keep: float):
    """The budget of the stochastic command's last solve (the mean forecast under the
    schedule): what the work clock has left but `keep`, with a safety stop of its own
    from now (planner.solve.budget.Budget.of_work), not the command's deadline. The
    scenarios' solves spend the same work whatever --jobs, but a local cluster's start
    (2-3 s) puts the wall clock past that deadline at short limits: at the deadline this
    solve had no time and planned at first prices (a 16x10x4 market at --time-limit 15:
    bound $3.79 M, gap 1.2 % with --jobs 1; $2.05 M, 46.6 % with --jobs 2)."""
    from planner.solve.budget import Budget

    return Budget.of_work(max(0.0, work.work_left() - keep))


def _solve_stochastic(s, budget, keep, out, as_json, focus, solver, gap, samples, spread,
                      seed, correlation, risk_aversion, alpha, jobs, scheduler, started):
    """`solve --stochastic`: the schedule for every scenario (planner.stochastic), the
    plan of the mean forecast under it in the workbook, with a Risk sheet."""
    from planner.cluster import Runner
    from planner.model.builder import Restrictions
    from planner.report.json_out import plan_json
    from planner.solve.pipeline import plan_scenario
    from planner.solve.work import load_s
    from planner.stochastic import (
        mean_forecast,
        out_of_sample,
        sample_scenarios,
        solve_stochastic,
        stochastic_json,
    )

    scenarios = _demand_scenarios(s, samples, spread, seed, correlation)
    # the solves' limits, samples kept and schedules tried are reckoned on the work clock
    # (planner.solve.budget): the same on every run, whatever --jobs (SPEC §4)
    work = budget.reckoned(load_s(s))
    # the mean forecast's plan under the schedule (more: solve_stochastic keeps one solve
    # at the need it measures) and the workbook
    final = keep + 0.1 * work.left()
    with show_stage(f"planning {len(scenarios)} demand scenarios") as status:
        # the cluster's tasks end within the command's time, or it says why not (a worker
        # lost, none left)
        with Runner(jobs or os.cpu_count() or 1, scheduler, until=budget.last_moment) \
                as runner:
            say = lambda text: (status.update(text), interrupt.set_stage(text))  # noqa: E731
            result = solve_stochastic(
                s, scenarios, work.share(OUT_OF_SAMPLE_SHARE if samples else 1.0, final),
                runner, solver, gap, risk_aversion, alpha, progress=say,
                drawn=samples is not None)
            _warn_stochastic(result, budget, samples)
            scenarios = result.scenarios  # those planned on
            if samples is not None:  # the schedule on samples it was not chosen on
                say(f"evaluating the schedule on {samples} fresh samples")
                fresh = sample_scenarios(s, samples, spread, seed + FRESH_SEED, correlation)
                result.out_of_sample = out_of_sample(
                    result, s, fresh,
                    work.share(1.0, final + result.need_s + result.overhead_s), runner,
                    solver, gap)
                if result.out_of_sample is None:
                    warn("no time left to evaluate the schedule on "
                         "fresh samples (out_of_sample is null)")
    fixed = Restrictions(fixed_commitments=dict(result.chosen.commitments))
    with show_stage("planning the mean forecast under the schedule"):
        run = plan_scenario(mean_forecast(s, scenarios), solver, gap=gap,
                            budget=_last_solve_budget(work, keep), restrictions=fixed)
    _exit_without_plan(run)
    plan = run.plan
    _exit_if_check_fails(plan.scenario, plan, restricted=True)
    # (no pay-as-you-go comparison plan: VSS, on the Risk sheet, compares the schedule)
    _write_files(plan, out, focus, seconds=run.seconds,
                 baselines_skipped="--stochastic: the schedule is compared over the "
                                   "scenarios on the Risk sheet", risk=result)
    warn_past_limit(budget, f"a solve of each of the {len(scenarios)} scenarios and the "
                             f"mean forecast, the schedule's evaluation and the workbook")
    _say_stochastic_done(result, alpha, started, out)
    if as_json:
        data = plan_json(plan, notes=SAID)
        data["stochastic"] = stochastic_json(result)
        sys.stdout.write(dumps(data))


def _demand_scenarios(s, samples: int | None, spread: float, seed: int, correlation: float):
    """The scenarios of --stochastic: `samples` drawn, else the demand_scenarios table's;
    neither exits 2."""
    from planner.stochastic import sample_scenarios

    if samples is not None:
        if s.demand_scenarios:
            warn(f"--samples {samples} draws the scenarios; the demand_scenarios table's "
                 f"{len(s.demand_scenarios)} are not used")
        return sample_scenarios(s, samples, spread, seed, correlation)
    if s.demand_scenarios:
        return s.demand_scenarios
    err.print("[red]error:[/] --stochastic needs a demand_scenarios table or --samples N")
    raise typer.Exit(EXIT_BAD_INPUT)


def _warn_stochastic(result, budget, samples: int | None) -> None:
    """What the time did to a stochastic solve: samples left out, a table's scenarios
    running late, scenario solves cut short of their LP or stopped by the wall clock."""
    solves = [*result.wait_and_see, *(r for c in result.candidates for r in c.results)]
    stopped = sum(bool(r.get("clock_stopped")) for r in solves)
    if stopped:
        warn_solves_stopped(f"{stopped} of its solves", "figures")
    if result.dropped:
        warn(f"--time-limit {budget.seconds:g} s holds the "
             f"solves of {len(result.scenarios)} of {samples} samples: the "
             f"schedule is chosen on those (equally likely); a longer "
             f"--time-limit plans on all")
    if result.overrun_s > 0:
        warn(f"the {len(result.scenarios)} scenarios of the "
             f"demand_scenarios table take up to {result.overrun_s:.0f} s "
             f"more than --time-limit {budget.seconds:g} s holds, as their solves "
             f"are reckoned (each ends before its limit and cannot be given less); "
             f"all are planned, and the command may end late")
    if result.untried:
        # the mean forecast's schedule alone: its VSS is $0 for want of a rival
        alone = (" (the mean forecast's alone: VSS $0 for want of another)"
                 if len(result.candidates) == 1 else "")
        warn(f"{result.untried} candidate schedule(s) not evaluated for want of "
             f"time; the schedule is the cheapest of {len(result.candidates)} "
             f"evaluated{alone}; a longer --time-limit or fewer scenarios compare more")
    rough = [w for w in result.wait_and_see if w.get("status") != "optimal"]
    if result.evpi_usd is not None and rough:
        # (an outside audit: EVPI $0 at --time-limit 8, where the scenarios' plans at 20 s
        # showed it worth $5,104 or more, nothing said)
        warn(f"EVPI ${result.evpi_usd:,.0f} is taken from the scenarios' own plans, "
             f"{len(rough)} of {len(result.wait_and_see)} of them not proven within the "
             f"gap in their time: perfect information may be worth more (a longer "
             f"--time-limit plans them better)")
    if result.missed:
        warn(f"{result.missed} of {len(result.scenarios) + 1} "
             f"scenario solves (wait and see) ran out of time before their "
             f"plan from the LP: their plans and bounds are rough, and later "
             f"solves get {result.need_s:.1f} s each, so fewer schedules are "
             f"compared; a longer --time-limit or fewer scenarios plan "
             f"better")


def _say_stochastic_done(result, alpha: float, started: float, out: Path) -> None:
    """The closing line of --stochastic: the schedule, expected cost, CVaR, gap and its
    bound, VSS, EVPI, the fresh samples' cost, seconds and the workbook written."""
    sample = result.out_of_sample
    err.print(f"stochastic over {len(result.scenarios)} scenarios "
              f"({escape(result.chosen.name)} "
              f"schedule): expected ${result.expected_cost_usd:,.0f}, CVaR{alpha:g} "
              f"${result.cvar_usd:,.0f}, gap {result.gap:.2%} over the bound "
              f"({result.bound_from}); "
              f"VSS ${result.vss_usd:,.0f}, EVPI "
              + ("not known" if result.evpi_usd is None else f"${result.evpi_usd:,.0f}")
              + ("" if sample is None else
                 f"; on {sample['samples']} fresh samples "
                 f"${sample['expected_cost_usd']:,.0f} "
                 f"({sample['difference_usd']:+,.0f})") + "; "
              f"{time.perf_counter() - started:.1f} s; wrote {escape(str(out))}")
