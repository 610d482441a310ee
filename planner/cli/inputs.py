"""Commands about inputs: validate, template, throughput, generate."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from planner.cli.common import (
    EXIT_BAD_INPUT,
    Issue,
    _check_output_folder,
    _check_outputs,
    _guard,
    _print_issues,
    app,
    err,
)


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
def template(file: Path = typer.Argument(..., help="the .xlsx file to write")):
    """Write an empty input workbook: every table, its columns, notes and drop-downs."""
    from planner.io.template import write_template

    _check_outputs(file)
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
            Path(__file__).resolve().parents[2] / "models"
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

    _check_output_folder(out)
    counts = make(out, workloads, regions, months, seed)
    err.print(f"wrote {out}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))


