"""Commands about inputs: validate, template, throughput, generate."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from planner.cli.common import (
    EXIT_BAD_INPUT,
    Issue,
    app,
    check_output_folder,
    check_outputs,
    check_ranges,
    check_suffixes,
    err,
    every_problem,
    guard,
    print_issues,
)
from planner.io.schema import HORIZON_MOST


@app.command()
@guard
def validate(scenario: Path = typer.Argument(..., help="folder of CSV files or .xlsx")):
    """Check a scenario and list every problem (exit 0 when clean, 2 otherwise)."""
    from planner.io.load import load_raw
    from planner.io.validate import validate as check

    result, issues = check(load_raw(scenario))
    print_issues(issues, str(scenario))
    if result is None:
        raise typer.Exit(EXIT_BAD_INPUT)
    err.print(f"{len(result.workloads)} workloads, {len(result.offers)} offers, "
              f"{len(result.regions)} regions, {len(result.demand)} demand months, "
              f"{result.settings.horizon_months} months from {result.settings.month(0)}")


@app.command()
@guard
def template(file: Path = typer.Argument(..., help="the .xlsx file to write")):
    """Write an empty input workbook: every table, its columns, notes and drop-downs."""
    from planner.io.template import write_template

    check_outputs(file)
    # validate and solve read a workbook only by its .xlsx name: t.csv would be written,
    # then refused
    check_suffixes(xlsx=file)
    write_template(file)
    err.print(f"wrote {file}", markup=False)


@app.command()
@guard
def throughput(
    scenario: Path = typer.Argument(..., help="scenario folder whose gpus.csv to read and "
                                    "whose throughput.csv to write"),
    models: Optional[Path] = typer.Argument(None, help="folder of model profiles with "
                                            "workloads.csv (workload, model, precision, "
                                            "mode); default: models/ here, else the "
                                            "shipped one"),
):
    """Derive the throughput table from AI model profiles (see models/README.md)."""
    from planner.io.issues import Collector
    from planner.io.load import load_raw
    from planner.io.profiles import throughput_table, write_throughput

    if models is None:
        here = Path("models")
        models = here if (here / "workloads.csv").exists() else \
            Path(__file__).resolve().parents[2] / "models"
    _check_throughput_folder(scenario)
    issues: list[Issue] = []
    rows, kept, elsewhere = throughput_table(load_raw(scenario), models, Collector(issues))
    if any(i.severity == "error" for i in issues):
        print_issues(issues, f"{models} for {scenario}")
        raise typer.Exit(EXIT_BAD_INPUT)
    write_throughput(rows, scenario / "throughput.csv")
    table_out = Table(title=escape(f"Throughput derived from {models}"))
    for col in ("workload", "gpu", "units/GPU", "GPUs/replica", "how"):
        table_out.add_column(col)
    for r in rows:
        units = f"{r.units_per_gpu:g}" if isinstance(r.units_per_gpu, float) \
            else str(r.units_per_gpu)
        table_out.add_row(Text(r.workload), Text(r.gpu), units, str(r.gpus_per_replica),
                          Text(r.how))
    err.print(table_out)
    for workload, why in elsewhere.items():
        err.print(f"{workload}: no row on {why}", markup=False, highlight=False)
    if kept:
        names = list(dict.fromkeys(r.workload for r in kept))
        err.print(f"kept {len(kept)} row(s) of {', '.join(names)} as they were: no profile "
                  f"in {models / 'workloads.csv'} covers them", markup=False)
    if issues:
        print_issues(issues, f"{models} for {scenario}")
    err.print(f"wrote {scenario / 'throughput.csv'} ({len(rows)} rows)", markup=False)


def _check_throughput_folder(scenario: Path) -> None:
    """throughput rewrites SCENARIO/throughput.csv: the scenario must be a folder of CSV
    files (a workbook's sheet is not rewritten, so as not to touch the rest of the book)."""
    if not scenario.exists():
        err.print(f"[red]error:[/] no such folder: {escape(str(scenario))}")
        raise typer.Exit(EXIT_BAD_INPUT)
    if not scenario.is_dir():
        err.print(f"[red]error:[/] {escape(str(scenario))} is not a folder: throughput writes "
                  "SCENARIO/throughput.csv, so the scenario must be a folder of CSV files "
                  "(derive into a folder, then copy its throughput.csv into the workbook's "
                  "throughput sheet)")
        raise typer.Exit(EXIT_BAD_INPUT)
    check_outputs(scenario / "throughput.csv")  # a folder there, no permission: bad input


def _empty_folder(out: Path) -> None:
    """A scenario folder with files in it is not written over: generate writes a whole
    scenario, and a table of the old one it does not write (demand_scenarios, existing)
    would join the new one unsaid (an outside audit). Exit 2."""
    if out.is_dir() and any(out.iterdir()):
        err.print(f"[red]error:[/] {escape(str(out))} is not empty: generate writes a whole "
                  "scenario; give a new or empty folder")
        raise typer.Exit(EXIT_BAD_INPUT)


@app.command()
@guard
def generate(
    out: Path = typer.Argument(..., help="folder to write the scenario's CSV files to "
                                         "(new, or empty)"),
    workloads: int = typer.Option(50, "--workloads", help="workloads, ≥ 1"),
    regions: int = typer.Option(20, "--regions", help="regions, ≥ 3"),
    months: int = typer.Option(24, "--months", help=f"horizon_months, 1 to {HORIZON_MOST}"),
    seed: int = typer.Option(0, "--seed", help="seed of the market's random figures (≥ 0)"),
):
    """Write a synthetic but realistic scenario (for benchmarks and experiments)."""
    from planner.io.generate import generate as make

    every_problem(lambda: check_ranges(("--workloads", workloads, 1, None),
                                       ("--regions", regions, 3, None),
                                       ("--months", months, 1, HORIZON_MOST),
                                       ("--seed", seed, 0, None)),
                  lambda: _empty_folder(out),
                  lambda: check_output_folder(out))
    counts = make(out, workloads, regions, months, seed)
    err.print(f"wrote {out}: " + ", ".join(f"{n} {k}" for k, n in counts.items()),
              markup=False)


