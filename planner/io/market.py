"""`planner market import`: a scenario's gpus, regions and offers built or refreshed from
price catalogs (planner.io.catalog), keeping the user's own rows and edits.

What the catalogs do not say comes from three small tables the user edits, in the
scenario's `market/` folder (outside the scenario's own tables):

* `market/gpus.csv` (catalog_gpu, gpu): the catalog's GPU names mapped to the scenario's
  (`-`: not imported); a name not listed is used as the catalog spells it.
* `market/regions.csv` (cloud, catalog_region, region, site, egress_usd_per_gb): where each
  catalog region is; a region placed there takes that site and egress on every import. A
  region not listed and not in the scenario as `<cloud>-<region>` is
  appended there with its site blank, for the user to place; its prices are not imported
  until then, and it is named in the report.
* rules (`--rules FILE`, else `market/rules.csv`): terms the catalogs do not carry — for a
  provider (blank: every one) and GPU type (blank: every one), a commitment term's
  commit_months, discount off the on-demand rate, upfront, lead time, min and max GPUs,
  with its source; for on_demand or spot, the capacity (max_gpus), lead time and (spot)
  interruption rate of the imported offers. A rule that applies to no price in the
  catalogs is warned about.

One offer per region, GPU type and term: of a catalog's instance types the cheapest per
GPU (then the fewest GPUs per instance), sold in whole instances of its GPU count. A GPU
type's row the catalogs wrote takes their memory anew on every import.
Imported rows are marked by their source ("catalog: …", "rule: …"): a re-import updates
their price, instance size, source and price_date, and the cells a rule gives (every cell
of a row a rule made; a catalog row's max_gpus, lead_time_days and interruption_rate
unless the user edited them, its source saying what the rules gave: a new, changed or
dropped rule reaches the rows it applies to), and leaves every other cell as the user
left it;
drops the ones no longer in the catalogs (of the clouds the catalog folder holds: a folder
with one cloud refreshes that cloud alone); never touches a row of the user's own, and
an imported row with the same region, GPU type and term as one of the user's goes (the
user's wins).
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from planner.files import write_all_atomically
from planner.io.catalog import CatalogPrice, read_catalog, read_csv, read_metadata
from planner.io.issues import Issue
from planner.io.schema import COMMITMENT_TERMS, PAY_AS_YOU_GO, TABLES_BY_NAME

if TYPE_CHECKING:
    from planner.io.load import RawScenario

CATALOG_MARK, RULE_MARK = "catalog:", "rule:"
SKIP = "-"  # a GPU mapped to this in market/gpus.csv is not imported
MARKET_FOLDER = "market"
ALIAS_COLUMNS = ("catalog_gpu", "gpu")
REGION_COLUMNS = ("cloud", "catalog_region", "region", "site", "egress_usd_per_gb")
REFRESHED = ("usd_per_gpu_hour", "gpus_per_instance", "source", "price_date")
DERIVED = ("upfront_usd_per_gpu", "lead_time_days", "min_gpus", "max_gpus")  # from a rule
RULED = ("lead_time_days", "max_gpus", "interruption_rate")  # a rule's, on a catalog row
ROW = "#row"  # a rule's row in its table, for its messages (not a column)
BY_RULE = "; by rule: "  # a catalog row's source, then the cells a rule gave it
OFFER_COLUMNS = {c.name: c for c in TABLES_BY_NAME["offers"].columns}
RULE_COLUMNS = ("provider", "gpu", "term", "commit_months", "discount",
                "upfront_usd_per_gpu", "lead_time_days", "min_gpus", "max_gpus",
                "interruption_rate", "source")


@dataclass
class Changes:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    price_up: list[str] = field(default_factory=list)
    price_down: list[str] = field(default_factory=list)
    kept_yours: list[str] = field(default_factory=list)
    unplaced_regions: list[str] = field(default_factory=list)
    gpus_added: list[str] = field(default_factory=list)
    gpus_refreshed: list[str] = field(default_factory=list)  # a catalog's memory, anew
    regions_added: list[str] = field(default_factory=list)
    regions_placed: list[str] = field(default_factory=list)
    resized: list[str] = field(default_factory=list)
    ruled: list[str] = field(default_factory=list)  # cells a rule changed
    redated: list[str] = field(default_factory=list)  # the same price, read on a new date
    # the same price, its source worded anew (an earlier import's wording, or an edit)
    recited: list[str] = field(default_factory=list)


@dataclass
class _Table:
    path: Path
    columns: list[str]
    rows: list[dict]
    newline: str = "\n"  # as the file had it
    sheet: str | None = None  # a workbook scenario's table: its sheet's name

    @property
    def label(self) -> str:
        """The table as messages name it: folder/name (the name alone in the working
        folder), or the workbook's sheet."""
        if self.sheet is not None:
            return f"{self.path.name}, sheet {self.sheet}"
        return f"{self.path.parent.name}/{self.path.name}" if self.path.parent.name \
            else self.path.name

    @classmethod
    def read(cls, path: Path, default_columns, issues: list[Issue]) -> "_Table":
        """The table at `path` (empty where there is none; a file that cannot be read as
        CSV text is reported in `issues`)."""
        table = cls(path, list(default_columns), [])
        if not path.exists():
            return table
        read = read_csv(path, table.label, issues)
        if read is None:
            return table
        with path.open("rb") as f:
            newline = "\r\n" if b"\r\n" in f.readline() else "\n"
        columns = [c.strip().lower() for c in read[0]]
        rows = [{c.strip().lower(): (v or "").strip() for c, v in row.items() if c}
                for row in read[1]]
        for c in default_columns:
            if c not in columns:
                columns.append(c)
        return cls(path, columns, rows, newline)

    def writer(self) -> tuple[Path, Callable[[str], None]]:
        """The table's path and what writes it (planner.files.write_all_atomically)."""
        def write(tmp: str) -> None:
            with open(tmp, "w", newline="", encoding="utf-8") as f:
                writer = csv.DictWriter(f, fieldnames=self.columns, extrasaction="ignore",
                                        lineterminator=self.newline)
                writer.writeheader()
                writer.writerows(self.rows)

        return self.path, write


def _columns(table: str) -> tuple[str, ...]:
    return TABLES_BY_NAME[table].column_names


def _key(row: dict) -> tuple:
    months = row.get("commit_months") or ""
    term = row.get("term", "").lower()
    months = str(int(float(months))) if term in COMMITMENT_TERMS and months else ""
    return (row.get("region", ""), row.get("gpu", "").casefold(), term, months)


def _label(row: dict) -> str:
    months = row.get("commit_months", "") if row.get("term") in COMMITMENT_TERMS else ""
    return "/".join(x for x in (row.get("region", ""), row.get("gpu", ""), row.get("term", ""),
                                months) if x)


def _money(x: float) -> str:
    return f"{x:.6f}".rstrip("0").rstrip(".")


def import_market(scenario: Path, catalog: Path, rules: Path | None,
                  price_date: dt.date) -> tuple[Changes, list[Issue]]:
    """Refresh the scenario at `scenario` (a folder of CSV tables, or an .xlsx workbook,
    whose market folder is the one beside it) from the catalogs at `catalog`; the tables
    are written only when nothing is in error."""
    issues: list[Issue] = []
    book = scenario.is_file()
    market = (scenario.parent if book else scenario) / MARKET_FOLDER
    aliases = _Table.read(market / "gpus.csv", ALIAS_COLUMNS, issues)
    places = _Table.read(market / "regions.csv", REGION_COLUMNS, issues)
    rules_path = rules if rules is not None else market / "rules.csv"
    if rules is not None and not rules.exists():
        issues.append(Issue("error", str(rules), None, None, "no such rules file"))
    rules_table = _Table.read(rules_path, RULE_COLUMNS, issues)
    rules_label = rules_table.label
    rule_rows = _rules(rules_table, issues)
    if book:
        gpus, regions, offers, sites = _sheets(scenario, ("gpus", "regions", "offers",
                                                          "sites"), issues)
    else:
        gpus, regions, offers, sites = (
            _Table.read(scenario / f"{name}.csv", _columns(name), issues)
            for name in ("gpus", "regions", "offers", "sites"))
    site_names = _site_names(sites)
    _check_places(places, site_names, issues)
    if not catalog.is_dir():
        issues.append(Issue("error", str(catalog), None, None,
                            "not a catalog folder" if catalog.exists()
                            else "no such catalog folder"))
        return Changes(), issues + _own_tables_problems(scenario)

    alias = {r["catalog_gpu"]: r["gpu"] for r in aliases.rows
             if r.get("catalog_gpu") and r.get("gpu")}
    skipped = {name for name, gpu in alias.items() if gpu == SKIP}
    memory = read_metadata(catalog, issues)
    known = None if memory is None else set(memory) | set(alias)
    prices = [p for p in read_catalog(catalog, known, issues)
              if p.catalog_gpu not in skipped and p.gpu_name not in skipped]
    if any(i.severity == "error" for i in issues):
        return Changes(), issues + _own_tables_problems(scenario)
    changes = Changes()
    clouds = {p.parent.name for p in catalog.glob("*/vms.csv")}

    region_of = _place_regions(prices, places, regions, site_names, changes)
    best = _cheapest_offers(prices, region_of, alias, gpus)
    _idle_rules(rule_rows, best, rules_label, issues)
    fresh = _fresh_offers(best, rule_rows, price_date)
    _add_gpus(best, gpus, memory, changes)
    cloud_of = {**{r["region"]: r.get("provider", "") for r in regions.rows},
                **{r["region"]: r["cloud"] for r in places.rows if r.get("region")}}
    _merge_offers(offers, fresh, changes,
                  lambda row: cloud_of.get(row.get("region", ""), "") in clouds)
    before, now, unknown = _own_tables_now(scenario)
    issues += _written_tables_problems(before, now, {"gpus": gpus, "regions": regions,
                                                     "offers": offers}) + unknown
    if any(i.severity == "error" for i in issues):
        return changes, issues
    # all or none: a table that cannot be written leaves the others as they were
    writers = [places.writer()] if places.rows else []
    if book:
        writers.append((scenario, _sheets_writer(scenario, {"gpus": gpus, "regions": regions,
                                                            "offers": offers})))
    else:
        writers += [table.writer() for table in (gpus, regions, offers)]
    write_all_atomically(writers)
    return changes, issues


OWN_TABLES = ("gpus", "regions", "offers")  # the scenario's tables an import writes


def _own_tables_problems(scenario: Path) -> list[Issue]:
    """The errors the scenario's own gpus, regions and offers have now, said with the
    market files' (an outside audit had been told of them only once those were mended),
    and their unknown columns' warnings (`_own_tables_now`)."""
    _, now, unknown = _own_tables_now(scenario)
    return now + unknown


def _own_tables_now(scenario: Path) -> tuple[RawScenario | None, list[Issue], list[Issue]]:
    """The scenario as it is read (None where it cannot be: said already), the errors of
    its own gpus, regions and offers, and the warnings of their columns that are no column
    of theirs (a misspelled optional one, `upfrnt`: written back as they are, and said;
    SPEC §2: never silently used, an outside audit saw them kept unsaid). One reading,
    one validation."""
    from planner.io.load import load_raw
    from planner.io.validate import table_labels, validate

    before = load_raw(scenario)
    if any(i.table == "scenario" for i in before.issues):
        return None, [], []  # (a folder or workbook it cannot read has said so)
    labels = table_labels(before, OWN_TABLES)
    found = [i for i in validate(before)[1] if i.table in labels]
    return (before, [i for i in found if i.severity == "error"],
            [i for i in found if i.severity == "warning" and i.row == 1
             and i.message.startswith("unknown column")])


def _written_tables_problems(before: RawScenario | None, now: list[Issue],
                             tables: dict[str, "_Table"]) -> list[Issue]:
    """The errors `validate` finds in the tables the import writes, as it would write
    them (`now`: those the scenario `before` has already, `_own_tables_now`): an import
    into a scenario whose own offers, regions or GPU types are in error had rewritten
    them with the errors kept (a price 'abc', an offers header misspelled `trem`: its
    rows then written with a blank term), and said nothing. An error the scenario has
    now is said at its row of the table as it is; one the import would bring (a blank
    under a column it adds) at the row it would have. The scenario's other tables are
    not its business: a market may be built before its map (no sites or demand yet)."""
    from planner.io.load import RawTable
    from planner.io.validate import errors_in, table_labels

    if before is None:
        return []
    labels = table_labels(before, tables)
    after = dataclasses.replace(before, tables={**before.tables, **{
        name: RawTable(name, before.tables[name].label if name in before.tables
                       else before.label_of(name), list(t.columns),
                       [(i, {c: row.get(c, "") for c in t.columns})
                        for i, row in enumerate(t.rows, start=2)])
        for name, t in tables.items()}},
        issues=[i for i in before.issues if i.table not in labels])
    written = errors_in(after, tables)
    # by (table, column): the scenario's own error where that column stays in error (a
    # misspelled header, not its rows written with a blank under the column added)
    left = {(i.table, i.column) for i in written}
    out = [i for i in now if (i.table, i.column) in left]
    said = {(i.table, i.column) for i in out}
    out += [Issue(i.severity, i.table, i.row, i.column,
                  f"{i.message} (in the table as the import would write it)")
            for i in written if (i.table, i.column) not in said]
    return out


def _sheets(book: Path, names: tuple[str, ...], issues: list[Issue]) -> list[_Table]:
    """The tables `names` of the workbook scenario `book`, each from its sheet (found
    whatever its case; empty where there is none), cells as text like a CSV file's."""
    from openpyxl import load_workbook

    try:
        wb = load_workbook(book, read_only=True, data_only=True)
    except Exception as e:  # openpyxl raises many kinds for a damaged file
        issues.append(Issue("error", book.name, None, None, f"cannot be read as .xlsx: {e}"))
        return [_Table(book, list(_columns(name)), [], sheet=name) for name in names]
    try:
        titles = {ws.title.strip().lower(): ws.title for ws in wb.worksheets}
        tables = []
        for name in names:
            table = _Table(book, list(_columns(name)), [], sheet=titles.get(name, name))
            if name in titles:
                rows = wb[titles[name]].iter_rows(values_only=True)
                header = [_text(c).lower() for c in next(rows, ())]
                table.rows = [{c: _text(v) for c, v in zip(header, cells) if c}
                              for cells in rows if any(_text(v) for v in cells)]
                table.columns = [c for c in header if c] + [
                    c for c in table.columns if c not in header]
            tables.append(table)
        return tables
    finally:
        wb.close()


def _text(value: object) -> str:
    """A cell's value as a CSV file would hold it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value).strip()


def _sheets_writer(book: Path, tables: dict[str, _Table]) -> Callable[[str], None]:
    """What writes `book` again with `tables` as their sheets (every other sheet as it
    was): numbers as numbers, text as text (a name such as '=1+1' stays text)."""
    def write(tmp: str) -> None:
        from openpyxl import load_workbook
        from openpyxl.comments import Comment

        wb = load_workbook(book)
        for name, table in tables.items():
            heads: dict[str, tuple] = {}  # column -> its heading's note and style
            if table.sheet in wb.sheetnames:
                ws = wb[table.sheet]
                # the headings' notes (a template's column notes) and styles stay with
                # their columns (an outside audit: the offers sheet's 13 notes were lost)
                heads = {str(c.value).strip().lower(): (c.comment, c._style)
                         for c in ws[1] if c.value is not None}
                ws.delete_rows(1, ws.max_row)
            else:
                ws = wb.create_sheet(table.sheet or name)
            schema = TABLES_BY_NAME[name]
            types = {c.name: c.type for c in schema.columns}
            ws.append(table.columns)
            for cell in ws[1]:
                note, style = heads.get(str(cell.value).lower(), (None, None))
                if note is not None:
                    cell.comment = Comment(note.text, note.author, note.height, note.width)
                if style is not None:
                    cell._style = style
            for r, row in enumerate(table.rows, start=2):
                for j, column in enumerate(table.columns, start=1):
                    value = _typed(row.get(column, ""), types.get(column))
                    if value is None:
                        continue
                    cell = ws.cell(r, j, value)
                    if isinstance(value, str):
                        cell.data_type = "s"
        wb.save(tmp)

    return write


def _typed(text: str, kind: str | None):
    """A table's cell text as its sheet holds it: a number where its column is one."""
    if text == "":
        return None
    if kind in ("float", "int"):
        try:
            number = float(text)
        except ValueError:
            return text
        return int(number) if kind == "int" and number.is_integer() else number
    return text


def _place_regions(prices: list[CatalogPrice], places: _Table, regions: _Table,
                   site_names, changes: Changes) -> dict[tuple, str]:
    """Where each catalog region is: (cloud, catalog region) → the scenario's region,
    for those placed at a site (added to the regions table if new) or already in it.
    The others are left out and listed in the market's regions table for the user to
    place."""
    region_of: dict[tuple, str] = {}
    unplaced: set[tuple] = set()
    known_regions = {r["region"] for r in regions.rows}
    placed = {(r["cloud"], r["catalog_region"]): r for r in places.rows}
    for p in prices:
        where = (p.cloud, p.catalog_region)
        if where in region_of or where in unplaced:
            continue
        row = placed.get(where)
        name = (row or {}).get("region") or f"{p.cloud}-{p.catalog_region}"
        if row is not None and row.get("site"):
            region_of[where] = name
            if name not in known_regions:
                regions.rows.append({"region": name, "provider": p.cloud, "site": row["site"],
                                     "egress_usd_per_gb": row.get("egress_usd_per_gb", "")})
                known_regions.add(name)
                changes.regions_added.append(name)
            else:  # placed again where market/regions.csv says
                _replace_site(regions, name, row, site_names, changes)
        elif name in known_regions:
            region_of[where] = name
        else:
            unplaced.add(where)
            changes.unplaced_regions.append(f"{p.cloud} {p.catalog_region}")
            if row is None:
                places.rows.append({"cloud": p.cloud, "catalog_region": p.catalog_region,
                                    "region": name, "site": ""})
                placed[where] = places.rows[-1]
    return region_of


def _cheapest_offers(prices: list[CatalogPrice], region_of: dict[tuple, str],
                     alias: dict[str, str], gpus: _Table) -> dict[tuple, CatalogPrice]:
    """One price per (region, GPU type, term): the cheapest instance type per GPU, the
    GPU type spelled as the scenario spells it (the scenario's tables match names
    exactly: an offer of 'H100' where gpus.csv has 'h100' would not load)."""
    spelled = {r["gpu"].casefold(): r["gpu"] for r in gpus.rows if r.get("gpu")}
    best: dict[tuple, CatalogPrice] = {}
    for p in prices:
        if (p.cloud, p.catalog_region) not in region_of:
            continue
        gpu = alias.get(p.gpu_name, p.gpu_name)
        gpu = spelled.get(gpu.casefold(), gpu)
        key = (region_of[(p.cloud, p.catalog_region)], gpu, p.term)
        rank = (round(p.usd_per_gpu_hour, 9), p.gpus_per_instance, p.instance_type)
        if key not in best or rank < (round(best[key].usd_per_gpu_hour, 9),
                                      best[key].gpus_per_instance, best[key].instance_type):
            best[key] = p
    return best


def _fresh_offers(best: dict[tuple, CatalogPrice], rule_rows: list[dict],
                  price_date: dt.date) -> dict[tuple, dict]:
    """The offers rows from the catalog's prices, with the rules' lead times, caps and
    interruption rates, and the commitments the rules derive from on-demand prices."""
    fresh: dict[tuple, dict] = {}
    for (region, gpu, term), p in sorted(best.items()):
        row = {"region": region, "gpu": gpu, "term": term,
               "usd_per_gpu_hour": _money(p.usd_per_gpu_hour),
               "gpus_per_instance": str(p.gpus_per_instance),
               "source": f"{CATALOG_MARK} {p.file} row {p.row}, {p.instance_type}: "
                         f"${_money(p.usd_per_gpu_hour * p.gpus_per_instance)} per instance-"
                         f"hour ÷ {p.gpus_per_instance} GPUs"
                         + (" (spot price)" if term == "spot" else ""),
               "price_date": price_date.isoformat()}
        for rule in rule_rows:
            if _applies(rule, p.cloud, gpu) and rule["term"] == term:
                for c in RULED:
                    if rule.get(c) and (c != "interruption_rate" or term == "spot"):
                        row[c] = rule[c]
        given = [f"{c}={row[c]}" for c in RULED if row.get(c)]
        if given:  # what the rules gave, so that a re-import tells it from an edit
            row["source"] += BY_RULE + ", ".join(given)
        fresh[_key(row)] = row
        if term == "on_demand":
            for rule in rule_rows:
                if rule["term"] in COMMITMENT_TERMS and _applies(rule, p.cloud, gpu):
                    derived = _derived(row, rule, p.gpus_per_instance, price_date)
                    fresh[_key(derived)] = derived
    return fresh


def _add_gpus(best: dict[tuple, CatalogPrice], gpus: _Table, memory: dict | None,
              changes: Changes) -> None:
    """The GPU types the offers name and the gpus table lacks, with their memory; a row
    an import wrote (its source the catalog's) takes the catalog's memory anew where it
    changed (it had kept the first import's, with nothing said: an outside audit)."""
    have = {r["gpu"].casefold(): r for r in gpus.rows}
    seen: set[str] = set()  # each GPU type from the first of its prices
    for (_, gpu, _), p in sorted(best.items(), key=lambda item: item[0][1]):
        if gpu.casefold() in seen:
            continue
        seen.add(gpu.casefold())
        mem = p.memory_gb if p.memory_gb is not None else memory.get(p.catalog_gpu)
        # the memory's own source: the instance's GpuInfo, else the metadata
        cited = (f"{p.file} row {p.row} (GpuInfo)" if p.memory_gb is not None
                 else "common/metadata.csv")
        row = {"gpu": gpu, "memory_gb": "" if mem is None else f"{mem:g}",
               "source": f"{CATALOG_MARK} {cited}"}
        own = have.get(gpu.casefold())
        if own is None:
            gpus.rows.append(row)
            changes.gpus_added.append(gpu)
        elif own.get("source", "").startswith(CATALOG_MARK) and row["memory_gb"] \
                and _differs(own.get("memory_gb", ""), row["memory_gb"]):
            changes.gpus_refreshed.append(f"{gpu} {row['memory_gb']} GB (was "
                                          f"{own.get('memory_gb') or 'blank'})")
            own.update(memory_gb=row["memory_gb"], source=row["source"])


def _rules(table: _Table, issues: list[Issue]) -> list[dict]:
    """The rules table, checked: a row with a bad cell is reported and left out."""
    out = []
    label = table.label
    unknown = [c for c in table.columns if c not in RULE_COLUMNS]
    if unknown and table.rows:
        issues.append(Issue("warning", label, 1, None, "unknown column(s) "
                            + ", ".join(repr(c) for c in unknown) + ": not used (the rules' "
                            "columns: " + ", ".join(RULE_COLUMNS) + ")"))
    seen: dict[tuple, int] = {}  # a rule's key -> its row
    for number, row in enumerate(table.rows, start=2):
        term = row.get("term", "").lower()
        problems = []
        # two rules for the same offers: the last had won without a word (an audit)
        key = (row.get("provider", "").casefold().replace("*", ""),
               row.get("gpu", "").casefold().replace("*", ""), term,
               row.get("commit_months", "").strip())
        if key in seen:
            problems.append(("term", f"the same provider, GPU type, term and "
                                     f"commit_months as row {seen[key]}: which applies?"))
        seen.setdefault(key, number)
        if term not in (*PAY_AS_YOU_GO, *COMMITMENT_TERMS):
            problems.append(("term", f"'{row.get('term', '')}' is not a term"))
        numbers = ("discount", "upfront_usd_per_gpu", "lead_time_days", "min_gpus",
                   "max_gpus", "commit_months", "interruption_rate")
        given = {}  # the figures that parse
        for c in numbers:
            text = row.get(c, "")
            if text:
                problem = _rule_number(c, text)
                if problem:
                    problems.append((c, problem))
                else:
                    given[c] = float(text)
        if term in COMMITMENT_TERMS and not any(c == "commit_months" for c, _ in problems):
            if given.get("commit_months", 0) < 1:
                problems.append(("commit_months", "a commitment rule needs commit_months, "
                                                  "a whole number ≥ 1"))
            if not row.get("discount"):
                problems.append(("discount", "a commitment rule needs its discount"))
        # what a rule gives goes into offers rows, whose rules it must keep (a rule of
        # 700 months, or of min_gpus above max_gpus, was written into a scenario that
        # then failed validate); a pay-as-you-go rule's commitment figures, or a spot
        # figure on another term, were dropped without a word
        if given.get("min_gpus", 0) > given.get("max_gpus", math.inf):
            problems.append(("min_gpus", f"min_gpus {row['min_gpus']} exceeds max_gpus "
                                         f"{row['max_gpus']}"))
        if term in PAY_AS_YOU_GO:
            for c in ("commit_months", "discount", "upfront_usd_per_gpu", "min_gpus"):
                if c in given:
                    problems.append((c, f"a {term} rule gives only max_gpus, lead_time_days"
                                        + (" and interruption_rate" if term == "spot" else "")
                                        + f": {c} is a commitment's"))
        if term and term != "spot" and "interruption_rate" in given:
            problems.append(("interruption_rate", "only a spot rule takes interruption_rate"))
        if not row.get("source"):
            problems.append(("source", "every rule cites its source"))
        for column, what in problems:
            issues.append(Issue("error", label, number, column, what))
        if not problems:
            out.append({**row, "term": term, ROW: number})
    return out


def _idle_rules(rule_rows: list[dict], best: dict[tuple, CatalogPrice], label: str,
                issues: list[Issue]) -> None:
    """A warning for each rule that applies to no offer the import writes (a provider or
    GPU type misspelt, `lamda`, `H10O`: it had been passed over without a word, and the
    commitments it was to derive were not there): a commitment rule applies to on-demand
    prices, a pay-as-you-go rule to its own term's."""
    sold = {(p.cloud, gpu, term) for (_, gpu, term), p in best.items()}
    for rule in rule_rows:
        term = "on_demand" if rule["term"] in COMMITMENT_TERMS else rule["term"]
        if any(t == term and _applies(rule, cloud, gpu) for cloud, gpu, t in sold):
            continue
        theirs = {"provider": sorted({cloud for cloud, _, t in sold if t == term}),
                  "gpu": sorted({gpu for _, gpu, t in sold if t == term})}
        why = [f"{'provider' if c == 'provider' else 'GPU type'} '{rule[c]}' is none of "
               f"theirs ({', '.join(names) or 'none'})" for c, names in theirs.items()
               if rule.get(c, "") not in ("", "*")
               and rule[c].casefold() not in {n.casefold() for n in names}]
        issues.append(Issue("warning", label, rule[ROW], None,
                            f"this rule applies to no {term} price in the catalogs: "
                            + ("; ".join(why) or "none of that provider and GPU type")))


def _rule_number(column: str, text: str) -> str | None:
    """What is wrong with a rule's figure `text` in `column`, or None: a discount is a
    share below 1; the others follow the offers table's column of that name (whole
    numbers where it counts them, its least and most)."""
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if column == "discount":
        return None if math.isfinite(x) and 0 <= x < 1 else f"'{text}' is not a share below 1"
    spec = OFFER_COLUMNS[column]
    if not math.isfinite(x) or x < 0:
        return f"'{text}' is not a non-negative number"
    if spec.type == "int" and not x.is_integer():
        return f"'{text}' is not a whole number"
    if spec.maximum is not None and x > spec.maximum:
        return f"{text} is above {spec.maximum:g}, the most an offer's {column} may be"
    return None


def _applies(rule: dict, provider: str, gpu: str) -> bool:
    """A rule applies to its provider and GPU type (blank or *: every one)."""
    p, g = rule.get("provider", ""), rule.get("gpu", "")
    return (p in ("", "*") or p.casefold() == provider.casefold()) and (
        g in ("", "*") or g.casefold() == gpu.casefold())


def _derived(on_demand: dict, rule: dict, gpus_per_instance: int,
             price_date: dt.date) -> dict:
    rate = float(on_demand["usd_per_gpu_hour"]) * (1 - float(rule["discount"]))
    months = str(int(float(rule["commit_months"])))
    row = {"region": on_demand["region"], "gpu": on_demand["gpu"], "term": rule["term"],
           "usd_per_gpu_hour": _money(rate), "commit_months": months,
           "gpus_per_instance": str(gpus_per_instance),
           "source": f"{RULE_MARK} on-demand × (1 − {rule['discount']}) for {months} months: "
                     f"{rule['source']}",
           "price_date": price_date.isoformat()}
    for c in DERIVED:
        if rule.get(c):
            row[c] = rule[c]
    return row


def _merge_offers(offers: _Table, fresh: dict[tuple, dict], changes: Changes,
                  refreshed) -> None:
    """Rows of the user's own stay as they are, and an imported row with the same key as
    one of them goes; imported rows take the fresh price (and the cells a rule gives) and
    keep the user's other edits; imported rows no longer offered go, where
    `refreshed(row)` (their cloud is in the catalog folder)."""
    yours = {_key(row) for row in offers.rows if not _imported(row)}
    kept = []
    seen = set()
    for row in offers.rows:
        key = _key(row)
        if not _imported(row):
            if key in fresh:
                changes.kept_yours.append(_label(row))
            kept.append(row)
            seen.add(key)
            continue
        if key in yours:  # the user's row of the same key wins
            if key not in fresh:
                changes.kept_yours.append(_label(row))
            continue
        new = fresh.get(key)
        if new is None:
            if refreshed(row):
                changes.removed.append(_label(row))
            else:
                kept.append(row)
                seen.add(key)
            continue
        seen.add(key)
        old_price = float(row.get("usd_per_gpu_hour") or 0)
        price = float(new["usd_per_gpu_hour"])
        if price > old_price + 1e-9:
            changes.price_up.append(f"{_label(row)} {old_price:g} → {price:g}")
        elif price < old_price - 1e-9:
            changes.price_down.append(f"{_label(row)} {old_price:g} → {price:g}")
        elif (row.get("price_date") or "") != new["price_date"]:
            changes.redated.append(f"{_label(row)} {row.get('price_date') or 'undated'} → "
                                   f"{new['price_date']}")
        elif (row.get("source") or "") != new["source"]:
            # (an audit: 26 sources rewritten to say what the rules gave read "no change")
            changes.recited.append(_label(row))
        if new["gpus_per_instance"] != (row.get("gpus_per_instance") or "1"):
            changes.resized.append(f"{_label(row)} {row.get('gpus_per_instance') or '1'} → "
                                   f"{new['gpus_per_instance']} GPUs an instance")
        # the price, instance size, source and date; the cells a rule gives follow the
        # rules as they are now: every one of a row a rule made (its source names the
        # rule), and a catalog row's capacity, lead time and spot interruptions where
        # the user left them as the last import wrote them; other cells stay as edited
        derived = new["source"].startswith(RULE_MARK)
        ruled = DERIVED if derived else _unedited(row)
        for c in ruled:
            before, after = row.get(c) or "", new.get(c, "")
            if before != after:
                changes.ruled.append(f"{_label(row)} {c} {before or 'blank'} → "
                                     f"{after or 'blank'}")
        for c in (*REFRESHED, *ruled):
            row[c] = new.get(c, "")
        kept.append(row)
    for key, row in fresh.items():
        if key not in seen:
            kept.append(row)
            changes.added.append(_label(row))
    offers.rows = kept


def _unedited(row: dict) -> tuple[str, ...]:
    """The cells of a catalog row a rule may set (RULED) that the user left as the last
    import wrote them: blank where no rule gave them, else what a rule gave (its source
    says, after BY_RULE)."""
    source = row.get("source", "")
    given = dict(item.split("=", 1) for item in source.split(BY_RULE, 1)[1].split(", ")
                 if "=" in item) if BY_RULE in source else {}
    return tuple(c for c in RULED if (row.get(c) or "") == given.get(c, ""))


def _imported(row: dict) -> bool:
    """Whether an offers row came from a catalog or a rule (its source says so)."""
    return row.get("source", "").startswith((CATALOG_MARK, RULE_MARK))


def _site_names(sites: _Table) -> set[str] | None:
    """The scenario's sites, in any case; None for a market built before its map (no
    sites table yet), whose placements are not checked."""
    return {r.get("site", "").casefold() for r in sites.rows} if sites.path.exists() \
        else None


def _check_places(places: _Table, known: set[str] | None, issues: list[Issue]) -> None:
    """market/regions.csv's sites are the scenario's (`known`, `_site_names`) and its
    egress fees are rates: a region placed where the map has no site would make the
    scenario invalid. A catalog region is placed once, and the catalog regions placed
    as one region are of one cloud at one site (two catalog regions at sites in the US
    and Japan, named as one region, had their prices merged at the first's site without
    a word)."""
    seen: dict[tuple[str, str], int] = {}
    region: dict[str, tuple[int, str, str]] = {}  # region -> (row, cloud, site)
    for number, row in enumerate(places.rows, start=2):
        where = (row.get("cloud", ""), row.get("catalog_region", ""))
        if where in seen:
            issues.append(Issue("error", places.label, number, "catalog_region",
                                f"{where[0]} {where[1]} is placed on row {seen[where]} "
                                "already"))
        seen.setdefault(where, number)
        name, site = row.get("region", ""), row.get("site", "")
        if name and site:
            first = region.setdefault(name, (number, where[0], site.casefold()))
            if first[1:] != (where[0], site.casefold()):
                issues.append(Issue(
                    "error", places.label, number, "region",
                    f"region '{name}' is placed on row {first[0]} as {first[1]}'s at "
                    f"another site or of another cloud: one region is one cloud's, at "
                    "one site"))
        site = row.get("site", "")
        if site and known is not None and site.casefold() not in known:
            issues.append(Issue("error", places.label, number, "site",
                                f"unknown site '{site}': not in the scenario's sites"))
        fee = row.get("egress_usd_per_gb", "")
        if fee:
            try:
                ok = math.isfinite(float(fee)) and float(fee) >= 0
            except ValueError:
                ok = False
            if not ok:
                issues.append(Issue("error", places.label, number, "egress_usd_per_gb",
                                    f"'{fee}' is not a non-negative number"))


def _replace_site(regions: _Table, name: str, place: dict, known: set[str] | None,
                  changes: Changes) -> None:
    """A region of the scenario that market/regions.csv places (`place`) takes the site
    and egress given there, where they differ (an outside audit: a region moved to
    another site, or its egress corrected, in market/regions.csv had stayed as the first
    import wrote it, with nothing said); not where the scenario has no sites table
    (`known` None: the site cannot be checked)."""
    if known is None:
        return
    for row in regions.rows:
        if row.get("region") != name:
            continue
        was = row.get("site", "")
        if was.casefold() != place["site"].casefold():
            row["site"] = place["site"]
            changes.regions_placed.append(f"{name} at {place['site']}"
                                          + (f" (was {was})" if was else ""))
        egress = place.get("egress_usd_per_gb", "")
        if egress and _differs(row.get("egress_usd_per_gb", ""), egress):
            changes.regions_placed.append(f"{name} egress ${egress}/GB (was "
                                          f"${row.get('egress_usd_per_gb') or 0}/GB)")
            row["egress_usd_per_gb"] = egress


def _differs(old: str, new: str) -> bool:
    """Two cells' numbers differ (as text where either is not a number)."""
    try:
        return float(old or 0) != float(new)
    except ValueError:
        return old != new
