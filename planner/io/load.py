"""Read a scenario's tables, untyped, from a folder of CSV files or one .xlsx workbook.

This stage only finds tables and cells: names are matched case-insensitively, every cell
keeps the row number the user sees (header = row 1), and typing and checking are left to
`validate`. Problems that stop a table from being read at all are returned as issues.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from planner.io.issues import Issue
from planner.io.schema import TABLES_BY_NAME
from planner.io.xlsx_parts import sheet_parts


@dataclass
class RawTable:
    name: str  # canonical table name, lower case
    label: str  # how the user knows it: "offers.csv" or "sheet offers"
    columns: list[str]  # lower-cased header names, in file order
    rows: list[tuple[int, dict[str, object]]] = field(default_factory=list)


@dataclass
class RawScenario:
    name: str
    path: Path
    tables: dict[str, RawTable]
    issues: list[Issue]
    # tables found but not readable (their problem is in `issues`): what would follow
    # from their absence is not reported
    unreadable: set[str] = field(default_factory=set)

    def label_of(self, table: str) -> str:
        """How the user would know `table`, also where it is missing: the file of a
        folder, the sheet of a workbook."""
        return f"{table}.csv" if self.path.is_dir() else f"sheet {table}"


def load_raw(path: str | Path) -> RawScenario:
    """Read every table of the scenario at `path` (folder of CSVs or .xlsx)."""
    path = Path(path)
    if path.is_dir():
        return _load_folder(path)
    if path.is_file() and path.suffix.lower() in (".xlsx", ".xlsm"):
        return _load_workbook(path)
    name = path.stem
    if not path.exists():
        what = f"no such folder or file: {path}"
    else:
        what = f"not a folder of CSV files or an .xlsx workbook: {path}"
    return RawScenario(name, path, {}, [Issue("error", "scenario", None, None, what)])


def _is_blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


def _make_table(name: str, label: str, header: list[object], body, issues: list[Issue]):
    """Turn a header and an iterable of (row number, cells) into a RawTable."""
    columns: list[str] = []
    keep: list[int] = []
    for i, cell in enumerate(header):
        if _is_blank(cell):
            continue
        col = str(cell).strip().lower()
        if col in columns:
            issues.append(Issue("error", label, 1, col, "column appears more than once"))
            continue
        columns.append(col)
        keep.append(i)
    table = RawTable(name, label, columns)
    # cells under no heading (past the header, or under a blank one) are not read:
    # counted and said once, not dropped without a word (SPEC §2)
    headed = {i for i, cell in enumerate(header) if not _is_blank(cell)}
    stray = 0
    for row_number, cells in body:
        values = {
            col: (cells[i] if i < len(cells) else None) for col, i in zip(columns, keep)
        }
        values = {k: (v.strip() if isinstance(v, str) else v) for k, v in values.items()}
        stray += sum(1 for i, cell in enumerate(cells)
                     if i not in headed and not _is_blank(cell))
        if all(_is_blank(v) for v in values.values()):
            continue  # blank lines are layout, not rows
        table.rows.append((row_number, values))
    if stray:
        issues.append(Issue("warning", label, None, None,
                            f"{stray} cell(s) under no column heading (past the header or "
                            "under a blank one); ignored"))
    return table


class UnreadableCsv(Exception):
    def __init__(self, row: int | None, column: str | None, what: str):
        super().__init__(what)
        self.row, self.column, self.what = row, column, what


def _read_csv(file: Path) -> list[list[str]]:
    """Every line of a UTF-8 CSV file; where it cannot be read, the row and column."""
    data = file.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        before = data[:e.start]
        row = before.count(b"\n") + 1
        line = before[before.rfind(b"\n") + 1:].decode("utf-8", "replace")
        header = next(csv.reader([data.split(b"\n", 1)[0].decode("utf-8", "replace")]), [])
        field_index = len(next(csv.reader([line]), [""])) - 1 if line else 0
        column = (header[field_index].strip().lower()
                  if row > 1 and field_index < len(header) else None)
        raise UnreadableCsv(row, column, f"not UTF-8: byte 0x{data[e.start]:02X} "
                            "(save the file as UTF-8)") from None
    # no limit on a field's length here: a cell too long for a workbook is reported by
    # validate with its row and column (csv's own limit stops the whole file)
    csv.field_size_limit(max(len(text), 131072))
    reader = csv.reader(io.StringIO(text, newline=""))
    lines, started, ended = [], 1, 0  # the lines the last record started and ended on
    try:
        for record in reader:
            lines.append(record)
            started, ended = ended + 1, reader.line_num
    except csv.Error as e:
        raise UnreadableCsv(reader.line_num, None, f"not a CSV file: {e}") from None
    if lines and any("\n" in cell or "\r" in cell for cell in lines[-1]) \
            and _quote_left_open(text):
        # csv reads a quote never closed to the end of the file: the rows after it
        # would be one cell of this row (a catalog's free-text GpuInfo hid it)
        raise UnreadableCsv(started, None, "a quote (\") opened in this row is never "
                            "closed: the rows after it would be read as one cell")
    return lines


def _quote_left_open(text: str) -> bool:
    """Whether `text` ends inside a quoted CSV field."""
    try:
        for _ in csv.reader(io.StringIO(text, newline=""), strict=True):
            pass
    except csv.Error as e:
        return "unexpected end of data" in str(e)
    return False


def _load_folder(folder: Path) -> RawScenario:
    issues: list[Issue] = []
    tables: dict[str, RawTable] = {}
    unreadable: set[str] = set()
    for file in sorted(folder.iterdir()):
        if file.is_dir() or file.name.startswith("."):
            continue
        if file.suffix.lower() != ".csv":
            if file.suffix.lower() not in (".md", ".txt"):
                issues.append(Issue("warning", file.name, None, None,
                                    "not a CSV file; ignored"))
            continue
        name = file.stem.strip().lower()
        if name not in TABLES_BY_NAME:
            issues.append(Issue("warning", file.name, None, None,
                                f"unknown table '{file.stem}'; ignored"))
            continue
        if name in tables:
            issues.append(Issue("error", file.name, None, None,
                                f"table '{name}' is given twice ({tables[name].label})"))
            continue
        try:
            lines = _read_csv(file)
        except UnreadableCsv as e:
            issues.append(Issue("error", file.name, e.row, e.column, e.what))
            unreadable.add(name)
            continue
        header = lines[0] if lines else []
        body = ((n, cells) for n, cells in enumerate(lines[1:], start=2))
        tables[name] = _make_table(name, file.name, header, body, issues)
    return RawScenario(folder.resolve().name, folder, tables, issues, unreadable)


def _load_workbook(file: Path) -> RawScenario:
    from openpyxl import load_workbook

    issues: list[Issue] = []
    tables: dict[str, RawTable] = {}
    try:
        wb = load_workbook(file, read_only=True, data_only=True)
    except Exception as e:  # openpyxl raises many kinds for a damaged file
        issues.append(Issue("error", file.name, None, None, f"cannot be read as .xlsx: {e}"))
        # none of its tables could be read: none is said to be missing besides
        return RawScenario(file.stem, file, tables, issues, set(TABLES_BY_NAME))
    try:
        # the sheets' XML, for the saved values of their formulas (openpyxl read it)
        with zipfile.ZipFile(file) as archive:
            parts = sheet_parts(archive)
            for ws in wb.worksheets:
                name = ws.title.strip().lower()
                label = f"sheet {ws.title}"
                if name == "readme":
                    continue  # the template's own instructions
                if name not in TABLES_BY_NAME:
                    issues.append(Issue("warning", label, None, None,
                                        f"unknown table '{ws.title}'; ignored"))
                    continue
                if name in tables:
                    issues.append(Issue("error", label, None, None,
                                        f"table '{name}' is given twice"))
                    continue
                rows = ws.iter_rows(values_only=True)
                header = list(next(rows, ()) or ())
                body = ((n, list(cells)) for n, cells in enumerate(rows, start=2))
                tables[name] = _make_table(name, label, header, body, issues)
                if ws.title in parts:
                    issues.extend(_uncached_formulas(archive.read(parts[ws.title]), label,
                                                     header))
    finally:
        wb.close()
    return RawScenario(file.stem, file, tables, issues)


# A cell element of a sheet's XML (any namespace prefix), its attributes and content;
# within it a formula and a saved value.
_CELL = re.compile(rb"<(?:\w+:)?c\b([^>]*?)(?:/>|>(.*?)</(?:\w+:)?c>)", re.DOTALL)
_FORMULA = re.compile(rb"<(?:\w+:)?f[\s>/]")
_VALUE = re.compile(rb"<(?:\w+:)?v\s*>\s*[^<\s]")  # a saved value, not empty
_TEXT = re.compile(rb'\bt="(?:str|s|inlineStr)"')  # a text result: it may be empty
_REFERENCE = re.compile(rb'\br="([A-Z]{1,3})(\d+)"')


def _uncached_formulas(xml: bytes, label: str, header: list[object]) -> list[Issue]:
    """Errors for the formula cells of a sheet (its XML) that hold no saved value. A
    workbook written by a program that does not calculate (openpyxl, many exporters)
    stores only the formula: read for its value, the cell is blank, and a blank
    max_gpus would mean unlimited. openpyxl saves such a cell with an empty
    value; a formula whose saved result is empty text is typed as text, and has its
    value."""
    from openpyxl.utils import column_index_from_string

    if not _FORMULA.search(xml):
        return []
    issues = []
    for cell in _CELL.finditer(xml):
        content = cell.group(2) or b""
        ref = _REFERENCE.search(cell.group(1))
        if (ref is None or not _FORMULA.search(content) or _VALUE.search(content)
                or _TEXT.search(cell.group(1))):
            continue
        row, col = int(ref.group(2)), column_index_from_string(ref.group(1).decode()) - 1
        heading = header[col] if col < len(header) else None
        if row > 1 and _is_blank(heading):
            continue  # under no heading: not read at all
        issues.append(Issue(
            "error", label, row, None if row == 1 else str(heading).strip().lower(),
            f"{ref.group(1).decode()}{row} is a formula with no saved value (the workbook "
            "was saved by a program that does not calculate formulas): open and save it "
            "in Excel or LibreOffice, or type the value"))
    return issues
