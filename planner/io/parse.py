"""A cell of the input typed against its column (validation's second pass, SPEC §3):
numbers, whole numbers, months and quarters, dates, true/false, choices, names and text
a workbook can hold; a blank cell takes the column's default. Every problem is collected
(planner.io.issues.Collector), never raised past a table.
"""

from __future__ import annotations

import datetime as dt
import math
import re

from planner.io.issues import Collector
from planner.io.load import RawTable
from planner.io.schema import Column

# YYYY-MM; a full date (as spreadsheets export date cells) names its month
_MONTH = re.compile(r"^(\d{4})-(\d{1,2})(?:-(\d{1,2})(?:[ T]00:00(?::00)?)?)?$")
_QUARTER = re.compile(r"^(\d{4})\s*-?\s*Q([1-4])$", re.IGNORECASE)
_TRUE = {"true", "yes", "y", "1", "t"}
_FALSE = {"false", "no", "n", "0", "f"}
# Control characters cannot be stored in a workbook (XML 1.0 forbids most of them) nor
# shown in one: a name may hold none, free text tab, line feed and carriage return only.
CONTROL_IN_ID = re.compile(r"[\x00-\x1f\x7f]")
CONTROL_IN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
CELL_MOST = 32767  # characters in one Excel cell


class _Blank:
    """Marker for a blank cell (distinct from a parse failure)."""


BLANK = _Blank()


class CellError(ValueError):
    pass


def _blank(v: object) -> bool:
    return v is None or (isinstance(v, str) and v.strip() == "")


def _number(v: object) -> float:
    if isinstance(v, bool):
        raise CellError(f"'{v}' is not a number")
    if isinstance(v, (int, float)):
        x = float(v)
    else:
        text = str(v).strip().replace("_", "")
        try:
            x = float(text)
        except ValueError:
            raise CellError(f"'{v}' is not a number") from None
    if not math.isfinite(x):
        raise CellError(f"'{v}' is not a finite number")
    return x


def parse_month(v: object) -> tuple[int, int]:
    """(year, month) of a month cell: `YYYY-MM`, a date's text or a date."""
    if isinstance(v, (dt.date, dt.datetime)):
        return (v.year, v.month)
    m = _MONTH.match(str(v).strip())
    if not m or not 1 <= int(m.group(2)) <= 12 or int(m.group(1)) < 1:
        raise CellError(f"'{v}' is not a month (YYYY-MM)")
    year, month = int(m.group(1)), int(m.group(2))
    if m.group(3) is not None:  # a date's text names its month only if it is a date
        try:
            dt.date(year, month, int(m.group(3)))
        except ValueError:
            raise CellError(f"'{v}' is not a month (YYYY-MM): not a date") from None
    return (year, month)


def _date(v: object) -> dt.date:
    if isinstance(v, dt.datetime):
        return v.date()
    if isinstance(v, dt.date):
        return v
    try:
        return dt.date.fromisoformat(str(v).strip())
    except ValueError:
        raise CellError(f"'{v}' is not a date (YYYY-MM-DD)") from None


def storable(text: str, control: re.Pattern = CONTROL_IN_TEXT) -> None:
    """Raise CellError unless a workbook cell can hold `text` as it is."""
    m = control.search(text)
    if m:
        raise CellError(f"holds the control character U+{ord(m.group()):04X} at "
                        f"position {m.start() + 1}")
    if len(text) > CELL_MOST:
        raise CellError(f"is {len(text):,} characters long; a workbook cell holds at most "
                        f"{CELL_MOST:,}")


def parse_cell(col: Column, v: object):
    """Typed value of one cell, BLANK for a blank cell; raises CellError when wrong."""
    if _blank(v):
        return BLANK
    t = col.type
    if t in ("id", "text"):
        if isinstance(v, float) and v.is_integer():
            v = int(v)  # a number typed into a name column: 12.0 reads as "12"
        if isinstance(v, (dt.date, dt.datetime)):
            v = v.strftime("%Y-%m-%d")  # a date cell in a text column (settings values)
        text = str(v).strip()
        storable(text, CONTROL_IN_ID if t == "id" else CONTROL_IN_TEXT)
        return text
    if t == "enum":
        text = str(v).strip().lower()
        if text not in col.choices:
            raise CellError(f"'{v}' is not one of {', '.join(col.choices)}")
        return text
    if t == "bool":
        if isinstance(v, bool):
            return v
        text = str(v).strip().lower()
        if isinstance(v, (int, float)):
            text = str(int(v)) if float(v).is_integer() else text
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise CellError(f"'{v}' is not true or false")
    if t == "month":
        return parse_month(v)
    if t == "date":
        return _date(v)
    if t == "period":
        if isinstance(v, (dt.date, dt.datetime)):
            return ("month", (v.year, v.month))
        q = _QUARTER.match(str(v).strip())
        if q:
            return ("quarter", (int(q.group(1)), int(q.group(2))))
        try:
            return ("month", parse_month(v))
        except CellError as e:
            why = ": not a date" if str(e).endswith("not a date") else ""
            raise CellError(f"'{v}' is not a month (2027-01) or a quarter (2027Q1){why}") \
                from None
    x = _number(v)
    if t == "int":
        if abs(x - round(x)) > 1e-9:
            raise CellError(f"'{v}' is not a whole number")
        x = int(round(x))
    if col.positive and x <= 0:
        raise CellError(f"{v} must be greater than 0")
    if col.minimum is not None and x < col.minimum:
        what = "negative" if col.minimum == 0 else f"below {col.minimum:g}"
        raise CellError(f"{v} is {what}; it must be at least {col.minimum:g}")
    if col.maximum is not None and x > col.maximum:
        raise CellError(f"{v} is above {col.maximum:g}")
    return x



def typed_rows(raw: RawTable, table_schema, out: Collector, missing=()):
    """(row number, {column: typed value or default}, whether every cell parsed) for
    every row; `missing`: required columns the table lacks, reported once already (its
    rows are checked in their other cells, and left out)."""
    rows = []
    for number, cells in raw.rows:
        values, ok = {}, not missing
        for col in table_schema.columns:
            if col.name in missing:
                continue
            try:
                v = parse_cell(col, cells.get(col.name))
            except CellError as e:
                out.error(raw.label, number, col.name, str(e))
                ok = False
                continue
            if v is BLANK:
                if col.required and not col.allow_blank:
                    if (raw.label, number, col.name) not in out.in_error:
                        out.error(raw.label, number, col.name, "is required but blank")
                    ok = False
                v = col.default
            values[col.name] = v
        rows.append((number, values, ok))
    return rows
