"""Commands about the market: latency, offers, market import."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from planner.cli.common import (
    EXIT_BAD_INPUT,
    FORMATS,
    HEADINGS,
    app,
    check_outputs,
    check_ranges,
    err,
    every_problem,
    guard,
    load_valid,
    print_issues,
    resolve_name,
    say_warnings,
    shown_cell,
)
from planner.report.json_text import dumps
from planner.report.offers import shown_ms


def _check_format(fmt: str) -> str:
    """--format as listed in FORMATS, whatever its case (names match whatever theirs)."""
    if fmt.lower() not in FORMATS:
        err.print(f"[red]error:[/] --format must be one of {', '.join(FORMATS)}, not "
                  f"'{escape(fmt)}'")
        raise typer.Exit(EXIT_BAD_INPUT)
    return fmt.lower()


def _listed(rows: list[dict], columns: list[str], fmt: str) -> bool:
    """Print `rows` as JSON or CSV on stdout when `fmt` asks; False: a table is wanted."""
    import csv

    from planner.report.csv_text import safe_row

    if fmt == "json":
        sys.stdout.write(dumps([{c: r[c] for c in columns} for r in rows]))
    elif fmt == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=columns, extrasaction="ignore",
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(safe_row(r) for r in rows)
    return fmt != "table"


def _wide(table: Table) -> None:
    """Print a table on stdout in full, piped or not."""
    Console(width=max(160, Console().width)).print(table)


@app.command()
@guard
def latency(scenario: Path = typer.Argument(..., help="folder of CSV files or .xlsx"),
            site: str = typer.Argument(..., help="a site of the network map (any case)"),
            fmt: str = typer.Option("table", "--format", help="table, csv or json")):
    """List the transit latency from SITE to every region, nearest first."""
    from planner.model.graph import region_latencies

    fmt = _check_format(fmt)
    s = load_valid(scenario)
    say_warnings(s)  # (an outside audit: offers and latency had said none)
    site = resolve_name(site, s.site_by_name, "site")
    rows = [{**row, "latency_ms": None if row["latency_ms"] == float("inf")
             else shown_ms(row["latency_ms"]), "path": " → ".join(row["path"])}
            for row in region_latencies(s, site)]
    columns = ["region", "provider", "site", "jurisdiction", "country", "latency_ms", "path"]
    if _listed(rows, columns, fmt):
        return
    table = Table(title=escape(f"Transit latency from {site}"))
    for col in columns:
        table.add_column(col.replace("_", " "), justify="right" if col == "latency_ms"
                         else "left", no_wrap=col != "path")
    for row in rows:
        ms = row["latency_ms"]
        table.add_row(*[Text(str(row[c])) for c in columns[:5]],
                      "unreachable" if ms is None else f"{ms:g}", Text(str(row["path"])))
    _wide(table)


@app.command()
@guard
def offers(
    scenario: Path = typer.Argument(..., help="folder of CSV files or .xlsx"),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="only this GPU type"),
    region: Optional[str] = typer.Option(None, "--region", help="only this region"),
    term: Optional[str] = typer.Option(None, "--term", help="only this term"),
    origin: Optional[str] = typer.Option(None, "--from", help="a site: show the transit "
                                         "latency from it to each offer's region"),
    slo: Optional[float] = typer.Option(None, "--slo", help="with --from: only "
                                        "offers within this many ms (≥ 0)"),
    workload: Optional[str] = typer.Option(
        None, "--workload", help="only offers that can serve this workload (its GPU types, "
                                 "jurisdictions, spot rule; with --from its latency SLO), "
                                 "cheapest per unit of it first"),
    fmt: str = typer.Option("table", "--format", help="table, csv or json"),
):
    """List the offers cheapest first: rate, effective rate with the upfront spread over
    the term, capacity and lead time (like `sky show-gpus`)."""
    from planner.io.schema import TERMS
    from planner.report.offers import COLUMNS, offer_rows

    fmt, _, _, s = every_problem(lambda: _check_format(fmt),
                                 lambda: check_ranges(("--slo", slo, 0, None)),
                                 lambda: _slo_needs_a_site(slo, origin),
                                 lambda: load_valid(scenario))
    say_warnings(s)  # an upfront on a pay-as-you-go row, ignored, among them
    rows = offer_rows(s, gpu=resolve_name(gpu, [g.gpu for g in s.gpus], "GPU type"),
                      region=resolve_name(region, s.region_by_name, "region"),
                      term=resolve_name(term, TERMS, "term"),
                      origin=resolve_name(origin, s.site_by_name, "site"), slo_ms=slo,
                      workload=resolve_name(workload, s.workload_by_name, "workload"))
    columns = [*COLUMNS, *(["rtt_ms"] if origin is not None else []),
               *(["usd_per_unit_hour"] if workload is not None else [])]
    if not _listed(rows, columns, fmt):  # a table; the sources are long: in csv and json
        shown = [c for c in columns if c != "source"]
        table = Table(title=escape(f"Offers in {s.name}, cheapest first"
                                   + (f" (from {origin})" if origin else "")))
        for col in shown:
            table.add_column(HEADINGS.get(col, col), justify="left" if col in (
                "gpu", "provider", "region", "term") else "right", no_wrap=True)
        for r in rows:
            table.add_row(*[Text(shown_cell(col, r[col])) for col in shown])
        _wide(table)
    err.print(f"{len(rows)} offer(s)")


def _slo_needs_a_site(slo: float | None, origin: str | None) -> None:
    if slo is not None and origin is None:
        err.print("[red]error:[/] --slo needs --from SITE")
        raise typer.Exit(EXIT_BAD_INPUT)


market_app = typer.Typer(no_args_is_help=True,
                         help="Build a scenario's market from published price catalogs.")
app.add_typer(market_app, name="market")


@market_app.command("import")
@guard
def market_import(
    scenario: Path = typer.Argument(..., help="scenario: a folder of CSV files or an .xlsx "
                                    "workbook (its gpus, regions and offers are written; "
                                    "a workbook's market folder is the one beside it)"),
    catalog: Path = typer.Option(..., "--catalog", help="catalog folder in SkyPilot's "
                                 "layout: <cloud>/vms.csv, common/metadata.csv"),
    rules: Optional[Path] = typer.Option(None, "--rules", help="terms the catalogs do not "
                                         "carry (default: the market folder's rules.csv)"),
    price_date: Optional[str] = typer.Option(None, "--price-date", help="date the prices "
                                             "were read, YYYY-MM-DD (default: today)"),
):
    """Add or refresh gpus, regions and offers from price catalogs, keeping your own rows
    and edits; print what changed."""
    import datetime as dt

    from planner.io.market import import_market

    book = scenario.suffix.lower() == ".xlsx"
    if scenario.exists() and not scenario.is_dir() and not book:
        err.print(f"[red]error:[/] {escape(str(scenario))} is neither a scenario folder nor "
                  "an .xlsx workbook")
        raise typer.Exit(EXIT_BAD_INPUT)
    if book and not scenario.is_file():
        err.print(f"[red]error:[/] no such workbook: {escape(str(scenario))}")
        raise typer.Exit(EXIT_BAD_INPUT)
    try:
        when = dt.date.fromisoformat(price_date) if price_date else dt.date.today()
    except ValueError:
        err.print(f"[red]error:[/] --price-date '{escape(price_date)}' is not a date "
                  "(YYYY-MM-DD)")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    # the tables it (re)writes: bad input where one cannot be written (SPEC §4 v2)
    if book:
        check_outputs(scenario, scenario.parent / "market" / "regions.csv")
    else:
        check_outputs(*(scenario / name for name in ("gpus.csv", "regions.csv",
                                                      "offers.csv")),
                       scenario / "market" / "regions.csv")
    changes, issues = import_market(scenario, catalog, rules, when)
    if issues:  # in the catalog, the rules, market/regions.csv or the scenario's tables
        print_issues(issues, f"market import from {catalog} into {scenario}")
    if any(i.severity == "error" for i in issues):
        raise typer.Exit(EXIT_BAD_INPUT)
    listed = (("added", changes.added), ("removed", changes.removed),
              ("price up", changes.price_up), ("price down", changes.price_down),
              ("instance size", changes.resized),
              ("the same price, dated anew", changes.redated),
              ("the same price, its source worded anew", changes.recited),
              ("set by a rule", changes.ruled),
              ("kept (your own row)", changes.kept_yours),
              ("GPU types added", changes.gpus_added),
              ("GPU memory from the catalogs anew", changes.gpus_refreshed),
              ("regions added", changes.regions_added),
              ("regions placed again (market/regions.csv)", changes.regions_placed))
    for title, items in listed:
        if items:
            err.print(f"[bold]{title}[/] ({len(items)}): " + escape(", ".join(items)))
    if changes.unplaced_regions:
        err.print(f"[yellow]regions with no site[/] ({len(changes.unplaced_regions)}), "
                  f"not imported — give each its site in "
                  + escape(f"{scenario / 'market' / 'regions.csv'}: "
                           + ", ".join(changes.unplaced_regions)))
    # every list said above is a change but the user's own rows, kept as they were
    moved = any(items for _, items in listed if items is not changes.kept_yours)
    err.print(f"{escape(str(scenario))}: {len(changes.added)} added, "
              f"{len(changes.removed)} removed, "
              f"{len(changes.price_up)} price(s) up, {len(changes.price_down)} down"
              + ("" if moved else ": no change, the offers are as the catalogs have them"))


