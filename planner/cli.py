"""The `planner` command line (SPEC §4). It only calls the stages in order.

Exit status: 0 solved (optimal, or feasible at the time limit, which is said), 2 bad input,
3 no plan found within the limits, 1 an unexpected error. Progress and listings go to
stderr; stdout carries only the JSON of --json.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from planner import interrupt
from planner.io.issues import Issue, ScenarioError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Plan GPU procurement at least cost: what to buy, where, on which term.")
# Not a terminal (a log, CI, a pipe): wide enough that a problem stays on one line.
err = Console(stderr=True, highlight=False,
              width=None if sys.stderr.isatty() or os.environ.get("COLUMNS") else 200)

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT, EXIT_NO_PLAN = 0, 1, 2, 3
SOLVER_OPTION = typer.Option(None, "--solver", help="highs (default) or cbc")
GAP_OPTION = typer.Option(None, "--gap", help="relative MIP gap (default: the setting)")


def default_scenario() -> Path:
    """`data/` of the working directory if it holds a scenario, else the one shipped."""
    here = Path("data")
    if (here / "settings.csv").exists():
        return here
    return Path(__file__).resolve().parent.parent / "data"


def _print_issues(issues: list[Issue], scenario: str) -> None:
    if issues:
        table = Table(title=f"Problems in {scenario}", show_lines=False, expand=False)
        for col in ("", "table", "row", "column", "problem"):
            table.add_column(col, overflow="fold")
        for i in issues:
            mark = "[red]error[/]" if i.severity == "error" else "[yellow]warning[/]"
            table.add_row(mark, i.table, "" if i.row is None else str(i.row),
                          i.column or "", i.message)
        err.print(table)
    errors = sum(1 for i in issues if i.severity == "error")
    warnings = len(issues) - errors
    verdict = "[red]not valid[/]" if errors else "[green]valid[/]"
    err.print(f"{scenario}: {verdict} — {errors} error(s), {warnings} warning(s)")


def _load(path: Path):
    from planner.io.validate import load_scenario

    try:
        scenario = load_scenario(path)
    except ScenarioError as e:
        _print_issues(e.issues, str(path))
        raise typer.Exit(EXIT_BAD_INPUT) from None
    return scenario


def _check_solver_options(solver, time_limit, gap) -> None:
    if solver is not None and solver not in ("highs", "cbc"):
        err.print(f"[red]error:[/] --solver must be highs or cbc, not '{solver}'")
        raise typer.Exit(EXIT_BAD_INPUT)
    for name, value in (("--time-limit", time_limit), ("--gap", gap)):
        if value is not None and value < 0:
            err.print(f"[red]error:[/] {name} must not be negative")
            raise typer.Exit(EXIT_BAD_INPUT)


FORMATS = ("table", "csv", "json")


def _status(text: str):
    """A spinner on stderr saying what runs, which Ctrl-C also names."""
    interrupt.set_stage(text)
    return err.status(text)


def _guard(fn):
    """Unexpected errors exit 1 with one line; bad input has already exited 2."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return interrupt.run(fn, *args, **kwargs)  # Ctrl-C: exit 130 at once
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except BrokenPipeError:  # `planner offers … | head`: the reader has all it wants
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(EXIT_OK) from None
        except Exception as e:  # noqa: BLE001 - the last line of defence
            err.print(f"[red]unexpected error:[/] {type(e).__name__}: {e}")
            if "PLANNER_DEBUG" in os.environ:
                raise
            raise typer.Exit(EXIT_ERROR) from None

    return wrapper


@app.command()
@_guard
def validate(scenario: Path = typer.Argument(..., help="folder of CSV files or .xlsx")):
    """Check a scenario and list every problem (exit 0 when clean, 2 otherwise)."""
    from planner.io.load import load_raw
    from planner.io.validate import validate as check

    result, issues = check(load_raw(scenario))
    _print_issues(issues, str(scenario))
    if result is None:
        raise typer.Exit(EXIT_BAD_INPUT)
    err.print(f"{len(result.workloads)} workloads, {len(result.offers)} offers, "
              f"{len(result.regions)} regions, {len(result.demand)} demand months, "
              f"{result.settings.horizon_months} months from {result.settings.month(0)}")


@app.command()
@_guard
def latency(scenario: Path = typer.Argument(..., help="folder of CSV files or .xlsx"),
            site: str = typer.Argument(..., help="a site of the network map (any case)"),
            fmt: str = typer.Option("table", "--format", help="table, csv or json")):
    """List the transit latency from SITE to every region, nearest first."""
    import csv

    from planner.model.graph import region_latencies

    if fmt not in FORMATS:
        err.print(f"[red]error:[/] --format must be one of {', '.join(FORMATS)}, not '{fmt}'")
        raise typer.Exit(EXIT_BAD_INPUT)
    s = _load(scenario)
    site = _named(site, s.site_by_name, "site")
    rows = [{**row, "latency_ms": None if row["latency_ms"] == float("inf")
             else row["latency_ms"], "path": " → ".join(row["path"])}
            for row in region_latencies(s, site)]
    columns = ["region", "provider", "site", "jurisdiction", "country", "latency_ms", "path"]
    if fmt == "json":
        sys.stdout.write(json.dumps([{c: r[c] for c in columns} for r in rows], indent=2)
                         + "\n")
        return
    if fmt == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=columns, extrasaction="ignore",
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return
    table = Table(title=f"Transit latency from {site}")
    for col in columns:
        table.add_column(col.replace("_", " "), justify="right" if col == "latency_ms"
                         else "left", no_wrap=col != "path")
    for row in rows:
        ms = row["latency_ms"]
        table.add_row(*[str(row[c]) for c in columns[:5]],
                      "unreachable" if ms is None else f"{ms:g}", row["path"])
    Console(width=max(160, Console().width)).print(table)  # piped: names in full


def _named(name: str | None, names, what: str) -> str | None:
    """`name` as the scenario spells it (names match whatever their case); exit 2 when
    there is no such one."""
    if name is None:
        return None
    found = {n.casefold(): n for n in names}.get(name.casefold())
    if found is None:
        err.print(f"[red]error:[/] unknown {what} '{name}'; {what}s are: "
                  + ", ".join(sorted(names)))
        raise typer.Exit(EXIT_BAD_INPUT)
    return found


HEADINGS = {"usd_per_gpu_hour": "$/GPU-h", "effective_usd_per_gpu_hour": "effective $/GPU-h",
            "commit_months": "months", "gpus_per_instance": "GPUs/instance",
            "max_gpus": "max GPUs", "lead_time_days": "lead days", "price_date": "price date",
            "rtt_ms": "RTT ms"}


@app.command()
@_guard
def offers(
    scenario: Path = typer.Argument(..., help="folder of CSV files or .xlsx"),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="only this GPU type"),
    region: Optional[str] = typer.Option(None, "--region", help="only this region"),
    term: Optional[str] = typer.Option(None, "--term", help="only this term"),
    origin: Optional[str] = typer.Option(None, "--from", help="a site: show the transit "
                                         "latency from it to each offer's region"),
    slo: Optional[float] = typer.Option(None, "--slo", min=0, help="with --from: only "
                                        "offers within this many ms"),
    fmt: str = typer.Option("table", "--format", help="table, csv or json"),
):
    """List the offers cheapest first: rate, effective rate with the upfront spread over
    the term, capacity and lead time (like `sky show-gpus`)."""
    import csv

    from planner.io.schema import TERMS
    from planner.report.offers import COLUMNS, offer_rows

    if fmt not in FORMATS:
        err.print(f"[red]error:[/] --format must be one of {', '.join(FORMATS)}, not '{fmt}'")
        raise typer.Exit(EXIT_BAD_INPUT)
    if slo is not None and origin is None:
        err.print("[red]error:[/] --slo needs --from SITE")
        raise typer.Exit(EXIT_BAD_INPUT)
    s = _load(scenario)
    rows = offer_rows(s, gpu=_named(gpu, [g.gpu for g in s.gpus], "GPU type"),
                      region=_named(region, s.region_by_name, "region"),
                      term=_named(term, TERMS, "term"),
                      origin=_named(origin, s.site_by_name, "site"), slo_ms=slo)
    columns = [*COLUMNS, *(["rtt_ms"] if origin is not None else [])]
    if fmt == "json":
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif fmt == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    else:  # the sources are long: in csv and json
        shown = [c for c in columns if c != "source"]
        table = Table(title=f"Offers in {s.name}, cheapest first"
                      + (f" (from {origin})" if origin else ""))
        for col in shown:
            table.add_column(HEADINGS.get(col, col), justify="left" if col in (
                "gpu", "provider", "region", "term") else "right", no_wrap=True)
        for r in rows:
            table.add_row(*[_shown(col, r[col]) for col in shown])
        Console(width=max(160, Console().width)).print(table)
    err.print(f"{len(rows)} offer(s)")


def _shown(column: str, value) -> str:
    if value is None:
        return ""
    if column.startswith(("usd", "effective")):
        return f"{value:.4f}"
    return f"{value:g}" if isinstance(value, float) else str(value)


market_app = typer.Typer(no_args_is_help=True,
                         help="Build a scenario's market from published price catalogs.")
app.add_typer(market_app, name="market")


@market_app.command("import")
@_guard
def market_import(
    scenario: Path = typer.Argument(..., help="scenario folder of CSV files (its gpus, "
                                    "regions and offers are written)"),
    catalog: Path = typer.Option(..., "--catalog", help="catalog folder in SkyPilot's "
                                 "layout: <cloud>/vms.csv, common/metadata.csv"),
    rules: Optional[Path] = typer.Option(None, "--rules", help="terms the catalogs do not "
                                         "carry (default: SCENARIO/market/rules.csv)"),
    price_date: Optional[str] = typer.Option(None, "--price-date", help="date the prices "
                                             "were read, YYYY-MM-DD (default: today)"),
):
    """Add or refresh gpus, regions and offers from price catalogs, keeping your own rows
    and edits; print what changed."""
    import datetime as dt

    from planner.io.market import import_market

    if scenario.exists() and not scenario.is_dir():
        err.print(f"[red]error:[/] {scenario} is not a scenario folder (market import "
                  "writes CSV tables)")
        raise typer.Exit(EXIT_BAD_INPUT)
    try:
        when = dt.date.fromisoformat(price_date) if price_date else dt.date.today()
    except ValueError:
        err.print(f"[red]error:[/] --price-date '{price_date}' is not a date (YYYY-MM-DD)")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    changes, issues = import_market(scenario, catalog, rules, when)
    if issues:
        _print_issues(issues, str(catalog))
    if any(i.severity == "error" for i in issues):
        raise typer.Exit(EXIT_BAD_INPUT)
    for title, items in (("added", changes.added), ("removed", changes.removed),
                         ("price up", changes.price_up), ("price down", changes.price_down),
                         ("kept (your own row)", changes.kept_yours),
                         ("GPU types added", changes.gpus_added),
                         ("regions added", changes.regions_added)):
        if items:
            err.print(f"[bold]{title}[/] ({len(items)}): " + ", ".join(items))
    if changes.unplaced_regions:
        err.print(f"[yellow]regions with no site[/] ({len(changes.unplaced_regions)}), "
                  f"not imported — give each its site in "
                  f"{scenario / 'market' / 'regions.csv'}: "
                  + ", ".join(changes.unplaced_regions))
    err.print(f"{scenario}: {len(changes.added)} added, {len(changes.removed)} removed, "
              f"{len(changes.price_up)} price(s) up, {len(changes.price_down)} down")


@app.command()
@_guard
def template(file: Path = typer.Argument(..., help="the .xlsx file to write")):
    """Write an empty input workbook: every table, its columns, notes and drop-downs."""
    from planner.io.template import write_template

    write_template(file)
    err.print(f"wrote {file}")


@app.command()
@_guard
def throughput(
    scenario: Path = typer.Argument(..., help="scenario folder whose gpus.csv to read and "
                                    "whose throughput.csv to write"),
    models: Optional[Path] = typer.Argument(None, help="folder of model profiles with "
                                            "workloads.csv (workload, model, precision, "
                                            "mode); default: models/ here, else the "
                                            "shipped one"),
):
    """Derive the throughput table from AI model profiles (see models/README.md)."""
    from planner.io.load import load_raw
    from planner.io.profiles import derive_all, write_throughput
    from planner.io.scenario import Gpu
    from planner.io.schema import TABLES_BY_NAME
    from planner.io.validate import _Collector, _typed_rows

    if models is None:
        here = Path("models")
        models = here if (here / "workloads.csv").exists() else \
            Path(__file__).resolve().parent.parent / "models"
    if not (models / "workloads.csv").exists():
        err.print(f"[red]error:[/] {models} has no workloads.csv (workload, model, "
                  "precision, mode)")
        raise typer.Exit(EXIT_BAD_INPUT)
    raw = load_raw(scenario)
    table = raw.tables.get("gpus")
    if table is None:
        err.print(f"[red]error:[/] {scenario} has no gpus table")
        raise typer.Exit(EXIT_BAD_INPUT)
    issues: list[Issue] = []
    rows = _typed_rows(table, TABLES_BY_NAME["gpus"], _Collector(issues))
    if issues:
        _print_issues(issues, str(scenario))
        raise typer.Exit(EXIT_BAD_INPUT)
    gpus = [Gpu(**values) for _, values, _ in rows]
    derived = derive_all(models, gpus)
    write_throughput(derived, scenario / "throughput.csv")
    table_out = Table(title=f"Throughput derived from {models}")
    for col in ("workload", "gpu", "units/GPU", "GPUs/replica", "how"):
        table_out.add_column(col)
    for r in derived:
        table_out.add_row(r.workload, r.gpu, f"{r.units_per_gpu:g}", str(r.gpus_per_replica),
                          r.how)
    err.print(table_out)
    err.print(f"wrote {scenario / 'throughput.csv'} ({len(derived)} rows)")


def _writable(path: Path) -> str | None:
    """Why `path` cannot be written, or None (a missing folder is created: SPEC §4 v2)."""
    if path.is_dir():
        return "is a directory"
    parent = path.parent
    for folder in (parent, *parent.parents):
        if folder.exists():
            if not folder.is_dir():
                return f"{folder} is not a directory"
            break
    try:
        parent.mkdir(parents=True, exist_ok=True)
        import tempfile

        with tempfile.NamedTemporaryFile(dir=parent, prefix=".planner-", delete=True):
            pass
    except OSError as e:
        return e.strerror or str(e)
    if path.exists() and not os.access(path, os.W_OK):
        return "permission denied"
    return None


def _check_outputs(*paths: Optional[Path]) -> None:
    for path in paths:
        if path is None:
            continue
        why = _writable(path)
        if why is not None:
            err.print(f"[red]error:[/] cannot write {path}: {why}")
            raise typer.Exit(EXIT_BAD_INPUT)


def _report_seconds(scenario) -> float:
    """Seconds kept back from the solve for the plan's tables and workbook: measured at
    ~0.35 ms per demand cell (1000x100x36: 234 k cells, 69 s; benchmarks/README.md)."""
    from planner.model.candidates import make_segments

    cells = len(scenario.demand) * len(make_segments(scenario))
    return 1.0 + 0.0004 * cells


# Share of the solve's time the plan gets when the comparison plans are solved too (they
# share the rest): they are what its savings are stated against, not the plan itself,
# and at 200x40x24 the plan's first master LP alone takes some 20 s of a 60 s budget.
PLAN_SHARE = 0.8
# solve --stochastic --samples: the share of the time for choosing the schedule, the rest
# for evaluating it on fresh samples (drawn with the seed + FRESH_SEED)
OUT_OF_SAMPLE_SHARE, FRESH_SEED = 0.8, 1_000_003


@app.command()
@_guard
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
    threads: int = typer.Option(1, "--threads", min=0,
                                help="solver threads (0: the solver's choice); the plan is "
                                     "the same whatever the count"),
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
    samples: Optional[int] = typer.Option(None, "--samples", min=1,
                                          help="with --stochastic: draw this many scenarios"),
    demand_spread: float = typer.Option(0.2, "--demand-spread", min=0,
                                        help="sampled demand: 1 + spread × a standard normal"),
    seed: int = typer.Option(0, "--seed", help="seed of the samples"),
    correlation: float = typer.Option(0.5, "--correlation", min=0, max=1,
                                      help="share of the samples' variation common to all "
                                           "workloads"),
    risk_aversion: float = typer.Option(0.0, "--risk-aversion", min=0,
                                        help="λ: minimize expected cost + λ·CVaR"),
    cvar_alpha: float = typer.Option(0.9, "--cvar-alpha", min=0, max=0.999,
                                     help="α of CVaR: the worst (1 − α) of the scenarios"),
    jobs: int = typer.Option(1, "--jobs", min=1, help="with --stochastic: local Dask workers"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler",
                                            help="with --stochastic: an existing Dask "
                                                 "cluster's scheduler address"),
):
    """Solve a scenario at least cost and write the finance workbook."""
    from planner.baselines import not_run, solve_baselines
    from planner.check import check_plan
    from planner.report.json_out import plan_json
    from planner.report.workbook import write_workbook
    from planner.solve.budget import Budget
    from planner.solve.decompose.method import Rounds
    from planner.solve.pipeline import export_model as write_mps
    from planner.solve.pipeline import plan_scenario

    started = time.perf_counter()
    _check_solver_options(solver, time_limit, gap)
    fixed_rounds = None
    if rounds is not None:
        try:
            fixed_rounds = Rounds.parse(rounds)
        except ValueError as e:
            err.print(f"[red]error:[/] --rounds: {e}")
            raise typer.Exit(EXIT_BAD_INPUT) from None
    path = scenario or default_scenario()
    out = output or Path("reports/plan.xlsx")
    _check_outputs(out, export_model, focus)
    with _status(f"loading {path}"):
        s = _load(path)
    for w in s.warnings:
        err.print(f"[yellow]{w}[/]")
    budget = Budget(time_limit if time_limit is not None else s.settings.time_limit_s,
                    start=started)
    keep = _report_seconds(s)
    if stochastic:
        _solve_stochastic(s, budget, keep, out, as_json, focus, solver, gap, samples,
                          demand_spread, seed, correlation, risk_aversion, cvar_alpha, jobs,
                          scheduler, started)
        return
    with _status("planning") as status:
        def progress(dual):
            status.update(f"planning: round {dual.rounds}, LP {dual.master_value:,.0f}, "
                          f"bound {dual.best:,.0f} ({budget.elapsed():.0f} s)")

        run = plan_scenario(s, solver, gap=gap, threads=threads or None,
                            budget=budget.share(PLAN_SHARE if baselines else 1.0, keep),
                            rounds=fixed_rounds, progress=progress)
    if run.plan is None:
        err.print(f"[red]no plan: the solver failed[/] ({run.result.termination})")
        raise typer.Exit(EXIT_NO_PLAN)
    plan = run.plan
    problems = check_plan(s, plan)
    if problems:
        err.print("[red]the plan fails the independent check:[/]")
        for p in problems[:20]:
            err.print(f"  {p}")
        raise typer.Exit(EXIT_ERROR)
    if baselines:
        with _status("solving the comparison plans"):
            compare = solve_baselines(s, solver, gap, run, budget.share(1.0, keep),
                                      threads or None)
    else:
        compare = not_run(s, run)
    if export_model is not None:
        write_mps(run, export_model)
        err.print(f"model written to {export_model}")
    with _status(f"writing {out}"):
        write_workbook(plan, out, baselines=compare, seconds=run.seconds)
    if focus is not None:
        from planner.report.focus import focus_rows, write_focus_csv

        write_focus_csv(focus_rows(plan), focus)
        err.print(f"FOCUS charges written to {focus}")
    t = plan.totals
    res = plan.result
    gap_text = "" if res.gap is None else f"; gap {res.gap:.2%} over bound ${res.bound:,.0f}"
    note = "" if res.status == "optimal" else f" [yellow]({res.termination}{gap_text})[/]"
    err.print(f"{res.status}{note}: total ${t['total_cost_usd']:,.0f}, "
              f"unmet {t['unmet_unit_hours']:,.1f} unit-hours "
              f"({t['unservable_unit_hours']:,.1f} no offer can serve), "
              f"{len(plan.commitments)} commitment(s); {time.perf_counter() - started:.1f} s"
              + (f", rounds {res.rounds}" if res.rounds else "") + f"; wrote {out}")
    if as_json:
        data = plan_json(plan, baselines=compare)
        sys.stdout.write(json.dumps(data, indent=2) + "\n")


def _solve_stochastic(s, budget, keep, out, as_json, focus, solver, gap, samples, spread,
                      seed, correlation, risk_aversion, alpha, jobs, scheduler, started):
    """`solve --stochastic`: the schedule for every scenario (planner.stochastic), the
    plan of the mean forecast under it in the workbook, with a Risk sheet."""
    from planner.check import check_plan
    from planner.cluster import Runner
    from planner.model.builder import Restrictions
    from planner.report.json_out import plan_json
    from planner.report.workbook import write_workbook
    from planner.solve.pipeline import plan_scenario
    from planner.stochastic import (
        mean_forecast,
        out_of_sample,
        sample_scenarios,
        solve_stochastic,
        stochastic_json,
    )

    if samples is not None:
        scenarios = sample_scenarios(s, samples, spread, seed, correlation)
    elif s.demand_scenarios:
        scenarios = s.demand_scenarios
    else:
        err.print("[red]error:[/] --stochastic needs a demand_scenarios table or --samples N")
        raise typer.Exit(EXIT_BAD_INPUT)
    final = keep + max(2.0, 0.1 * budget.left())  # the mean forecast's plan, the workbook
    with _status(f"planning {len(scenarios)} demand scenarios") as status:
        with Runner(jobs, scheduler) as runner:
            say = lambda text: (status.update(text), interrupt.set_stage(text))  # noqa: E731
            result = solve_stochastic(
                s, scenarios, budget.share(OUT_OF_SAMPLE_SHARE if samples else 1.0, final),
                runner, solver, gap, risk_aversion, alpha, progress=say)
            if samples is not None:  # the schedule on samples it was not chosen on
                say(f"evaluating the schedule on {samples} fresh samples")
                fresh = sample_scenarios(s, samples, spread, seed + FRESH_SEED, correlation)
                result.out_of_sample = out_of_sample(result, s, fresh,
                                                     budget.share(1.0, final), runner,
                                                     solver, gap)
    fixed = Restrictions(fixed_commitments=dict(result.chosen.commitments))
    with _status("planning the mean forecast under the schedule"):
        run = plan_scenario(mean_forecast(s, scenarios), solver, gap=gap,
                            budget=budget.share(1.0, keep), restrictions=fixed)
    if run.plan is None:
        err.print(f"[red]no plan: the solver failed[/] ({run.result.termination})")
        raise typer.Exit(EXIT_NO_PLAN)
    plan = run.plan
    problems = check_plan(plan.scenario, plan, restricted=True)
    if problems:
        err.print("[red]the plan fails the independent check:[/]")
        for p in problems[:20]:
            err.print(f"  {p}")
        raise typer.Exit(EXIT_ERROR)
    with _status(f"writing {out}"):
        write_workbook(plan, out, seconds=run.seconds, baselines_skipped="--stochastic",
                       risk=result)
    if focus is not None:
        from planner.report.focus import focus_rows, write_focus_csv

        write_focus_csv(focus_rows(plan), focus)
    err.print(f"stochastic over {len(scenarios)} scenarios ({result.chosen.name} schedule): "
              f"expected ${result.expected_cost_usd:,.0f}, CVaR{alpha:g} "
              f"${result.cvar_usd:,.0f}, gap {result.gap:.2%} over the wait-and-see bound; "
              f"VSS ${result.vss_usd:,.0f}, EVPI ${result.evpi_usd:,.0f}"
              + ("" if result.out_of_sample is None else
                 f"; on {result.out_of_sample['samples']} fresh samples "
                 f"${result.out_of_sample['expected_cost_usd']:,.0f} "
                 f"({result.out_of_sample['difference_usd']:+,.0f})") + "; "
              f"{time.perf_counter() - started:.1f} s; wrote {out}")
    if as_json:
        data = plan_json(plan)
        data["stochastic"] = stochastic_json(result)
        sys.stdout.write(json.dumps(data, indent=2) + "\n")


@app.command()
@_guard
def generate(
    out: Path = typer.Argument(..., help="folder to write the scenario's CSV files to"),
    workloads: int = typer.Option(50, "--workloads", min=1),
    regions: int = typer.Option(20, "--regions", min=3),
    months: int = typer.Option(24, "--months", min=1),
    seed: int = typer.Option(0, "--seed"),
):
    """Write a synthetic but realistic scenario (for benchmarks and experiments)."""
    from planner.io.generate import generate as make

    counts = make(out, workloads, regions, months, seed)
    err.print(f"wrote {out}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))


def _numbers(text: str, option: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        err.print(f"[red]error:[/] {option} takes numbers separated by commas, not '{text}'")
        raise typer.Exit(EXIT_BAD_INPUT) from None


@app.command()
@_guard
def whatif(
    scenario: Path = typer.Argument(..., help="folder of CSVs or .xlsx"),
    policy: Optional[list[str]] = typer.Option(
        None, "--policy", help="NAME=TERMS, e.g. r12=spot,on_demand,monthly,reserved:12 "
        "(repeatable; default: payg, monthly, r12, all)"),
    demand_scale: str = typer.Option("1.0", "--demand-scale",
                                     help="demand levels to solve each policy at, e.g. "
                                          "0.8,1.0,1.2"),
    scale_workload: Optional[list[str]] = typer.Option(
        None, "--scale-workload", help="WORKLOAD=FACTOR on top of --demand-scale (repeatable)"),
    stress: str = typer.Option("-0.2,+0.2", "--stress",
                               help="demand changes for the stress test of each policy's "
                                    "commitments ('' to skip)"),
    jobs: int = typer.Option(0, "--jobs", min=0, help="local Dask workers (0: one per core)"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler",
                                            help="an existing Dask cluster's scheduler "
                                                 "address, instead of local workers"),
    output: Optional[Path] = typer.Option(None, "-o", "--output",
                                          help="workbook (default reports/whatif.xlsx)"),
    as_json: bool = typer.Option(False, "--json", help="print {\"policies\": [...]} on stdout"),
    solver: Optional[str] = SOLVER_OPTION,
    time_limit: Optional[float] = typer.Option(
        None, "--time-limit", help="seconds for the whole command, every solve and the "
                                   "workbook included (default: the scenario's setting)"),
    gap: Optional[float] = GAP_OPTION,
):
    """Compare commitment policies and demand levels side by side in one workbook."""
    from planner.report.whatif_workbook import write_whatif_workbook
    from planner.solve.budget import Budget
    from planner.whatif import (
        DEFAULT_POLICIES,
        Policy,
        PolicyError,
        parse_policy,
        run_whatif,
        variant_summary,
    )

    started = time.perf_counter()
    _check_solver_options(solver, time_limit, gap)
    try:
        policies = [parse_policy(p) for p in (policy or DEFAULT_POLICIES)]
    except PolicyError as e:
        err.print(f"[red]error:[/] --policy {e}")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    names = [p.name for p in policies]
    if len(set(names)) != len(names):
        err.print("[red]error:[/] two policies have the same name")
        raise typer.Exit(EXIT_BAD_INPUT)
    if not any(set(p.terms) <= {"spot", "on_demand"} for p in policies):
        policies.append(Policy("payg-reference", {"spot": None, "on_demand": None}))
    scales = _numbers(demand_scale, "--demand-scale")
    stress_scales = tuple(1.0 + x for x in _numbers(stress, "--stress"))
    if not scales or any(x < 0 for x in scales) or any(x < 0 for x in stress_scales):
        err.print("[red]error:[/] demand scales must be numbers ≥ 0 (stress above −1)")
        raise typer.Exit(EXIT_BAD_INPUT)
    s = _load(scenario)
    per_workload: dict[str, float] = {}
    for item in scale_workload or []:
        name, _, factor = item.partition("=")
        if name not in s.workload_by_name:
            err.print(f"[red]error:[/] --scale-workload: unknown workload '{name}'")
            raise typer.Exit(EXIT_BAD_INPUT)
        per_workload[name] = _numbers(factor, "--scale-workload")[0] if factor else 1.0
    jobs = jobs or os.cpu_count() or 1
    out = output or Path("reports/whatif.xlsx")
    _check_outputs(out)
    budget = Budget(time_limit if time_limit is not None else s.settings.time_limit_s,
                    start=started)

    def progress(v, done, total):
        stress = f", {len(v.stress)} stress test(s)" if v.stress else ""
        err.print(f"[{done}/{total}] {v.label}: {v.status or 'solved'}{stress} "
                  f"({budget.elapsed():.0f} s)")
        interrupt.set_stage(f"solving the what-if variants ({done} of {total} done)")

    variants_count = len(policies) * len(scales)
    stress_count = len(policies) * len(stress_scales)
    where = f"the cluster at {scheduler}" if scheduler else f"{jobs} local worker(s)"
    err.print(f"solving {variants_count} variant(s) and {stress_count} stress test(s) on "
              f"{where} within {budget.left():.0f} s")
    interrupt.set_stage(f"solving the what-if variants (0 done, {jobs} worker(s))")
    variants = run_whatif(s, policies, scales, per_workload, stress_scales, jobs, solver,
                          gap=gap, progress=progress, scheduler=scheduler,
                          budget=budget.share(1.0, keep=_report_seconds(s) * len(policies)))
    if all(v.plan is None for v in variants):
        err.print("[red]no plan found for any policy[/]")
        raise typer.Exit(EXIT_NO_PLAN)
    with _status(f"writing {out}"):
        write_whatif_workbook(s, variants, out, stress_scales)
    for v in variants:
        total = f"${v.plan.totals['total_cost_usd']:,.0f}" if v.plan else "no plan"
        err.print(f"{v.label:>24}: {total} ({v.status})")
    err.print(f"wrote {out}")
    if as_json:
        sys.stdout.write(json.dumps({"policies": [variant_summary(v) for v in variants]},
                                    indent=2, default=float) + "\n")


def main():  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover - python -m planner.cli
    main()
