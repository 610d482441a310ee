"""A table's rows written straight into its worksheet's XML, not as openpyxl cells.

openpyxl makes an object for every cell and writes it through lxml one element at a
time: 12 s for the 200x40x24 plan's workbook (920 k cells), about a minute for
1000x100x36's, time the planning of a budgeted command does not get. Here a row is
turned into its XML text when it is added (the same cells openpyxl writes: inline text,
numbers as '%.16g', dates as serial days, formulas with their saved value, each with
its column's style), and spliced into the sheet openpyxl wrote with the table's header
only: every other part of the workbook (styles, comments, filters, panes, charts,
conditional formats) stays openpyxl's.

openpyxl saves no value with a formula; the values of its formula cells given to
`save_value` are put into the XML it wrote.
"""

from __future__ import annotations

import datetime as dt
import io
import math
import numbers
import re
import zipfile
from decimal import Decimal
from weakref import WeakKeyDictionary

from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE, IllegalCharacterError
from openpyxl.utils.datetime import to_excel

from planner.io.xlsx_parts import sheet_parts

_ROW = re.compile(rb'<row r="(\d+)"')
# the sheet's extent: its first column, and its last column and row if not one cell
_DIMENSION = re.compile(rb'<dimension ref="([A-Z]+)\d+(?::([A-Z]+)(\d+))?"/>')
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
# the most rows a worksheet holds (Excel's limit; openpyxl refuses cells beyond it)
EXCEL_ROWS = 1_048_576
# rows joined into one piece of the compressed stream at a time
CHUNK_ROWS = 20_000

# the worksheets whose data rows are held here, each with its Rows
_HELD: WeakKeyDictionary = WeakKeyDictionary()
# the values saved with formulas of openpyxl's cells: worksheet -> {coordinate: value}
_VALUES: WeakKeyDictionary = WeakKeyDictionary()
# a formula cell as openpyxl writes it: its reference, style and formula, no value (an
# empty <v>, as lxml writes it, or <v/> as ElementTree does)
_FORMULA_CELL = re.compile(
    rb'<c r="([A-Z]+[0-9]+)"((?: s="[0-9]+")?)><f>([^<]*)</f>(?:<v></v>|<v\s*/>)</c>')


class Rows:
    """The data rows of one worksheet, from row 2 on, as sheet XML. `letters` and
    `styles`: each column's letter and style id (its number format) in the workbook."""

    def __init__(self, ws, letters: list[str], styles: list[int]):
        self.title = ws.title
        self.letters = letters
        self.styles = [str(s) for s in styles]
        self.xml: list[str] = []
        self.last = 1  # the last row written
        _HELD[ws] = self

    def add(self, values: list, formulas: dict[int, tuple[str, object]]) -> int:
        """Write the next row: `values` by column, where `formulas` (column -> formula
        text with '=', and its value or None) stand instead. Returns the row's number."""
        if self.last >= EXCEL_ROWS:
            raise ValueError(f"the {self.title} sheet would have more than {EXCEL_ROWS:,} "
                             f"rows, the most a worksheet holds")
        self.last += 1
        r = str(self.last)
        cells = []
        for j, v in enumerate(values):
            ref = f'{self.letters[j]}{r}" s="{self.styles[j]}'
            if j in formulas:
                text, value = formulas[j]
                cells.append(_formula(ref, text[1:].translate(_ESCAPES), value))
            else:
                cells.append(_cell(ref, v))
        self.xml.append(f'<row r="{r}">{"".join(cells)}</row>')
        return self.last


def _cell(ref: str, v) -> str:
    """One cell's XML, `ref` its reference and style attributes as far as the style's
    value, as openpyxl writes the value."""
    kind = type(v)
    if kind is float or kind is int:  # most cells, first
        return _number(ref, v)
    if v is None:
        return f'<c r="{ref}"/>'
    if isinstance(v, str):
        if ILLEGAL_CHARACTERS_RE.search(v):
            raise IllegalCharacterError(f"{v!r} cannot be used in worksheets.")
        space = ' xml:space="preserve"' if v != v.strip() else ""
        return f'<c r="{ref}" t="inlineStr"><is><t{space}>{v.translate(_ESCAPES)}</t></is></c>'
    if isinstance(v, bool):
        return f'<c r="{ref}" t="b"><v>{int(v)}</v></c>'
    if isinstance(v, (numbers.Real, Decimal)):
        return _number(ref, v)
    if isinstance(v, (dt.date, dt.datetime, dt.time)):
        return _number(ref, to_excel(v))
    raise TypeError(f"a worksheet cell cannot hold {type(v).__name__} {v!r}")


def _number(ref: str, v) -> str:
    """A figure's cell: 16 digits, as openpyxl writes it; NaN and infinities empty."""
    if math.isfinite(v):
        return f'<c r="{ref}" t="n"><v>{"%.16g" % v}</v></c>'
    return f'<c r="{ref}" t="n"><v></v></c>'


def _formula(ref: str, formula: str, value) -> str:
    """A formula cell's XML (`formula` escaped, without its '=') with its saved value: a
    figure (NaN or none: empty, which a reader shows as nothing), or text (`t="str"`)."""
    if isinstance(value, str):
        if ILLEGAL_CHARACTERS_RE.search(value):
            raise IllegalCharacterError(f"{value!r} cannot be used in worksheets.")
        return f'<c r="{ref}" t="str"><f>{formula}</f><v>{value.translate(_ESCAPES)}</v></c>'
    if isinstance(value, bool):
        value = int(value)
    shown = "%.16g" % value if value is not None and math.isfinite(value) else ""
    return f'<c r="{ref}"><f>{formula}</f><v>{shown}</v></c>'


def save_value(cell, value) -> None:
    """Save `value` as what the formula of openpyxl's `cell` comes to."""
    if value is not None:
        _VALUES.setdefault(cell.parent, {})[cell.coordinate] = value


def _with_values(data: bytes, values: dict[str, object]) -> bytes:
    """A sheet's XML as openpyxl wrote it, its formula cells in `values` with their
    value."""
    def cell(m: re.Match) -> bytes:
        coordinate = m.group(1).decode()
        if coordinate not in values:
            return m.group(0)
        style = m.group(2).decode()  # ' s="3"' or none
        ref = coordinate + (f'" s="{style[4:-1]}' if style else "")  # as _cell's
        return _formula(ref, m.group(3).decode(), values[coordinate]).encode()
    return _FORMULA_CELL.sub(cell, data)


def save(wb, path) -> None:
    """Save `wb` at `path`: openpyxl's workbook, with every held sheet's rows spliced
    into it after its header row."""
    first = io.BytesIO()
    wb.save(first)
    held = {ws.title: rows for ws in wb.worksheets if (rows := _HELD.get(ws)) is not None}
    valued = {ws.title: values for ws in wb.worksheets if (values := _VALUES.get(ws))}
    with zipfile.ZipFile(first) as src, \
            zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        titles = {part: title for title, part in sheet_parts(src).items()}
        parts = {part: held[title] for part, title in titles.items() if title in held}
        for info in src.infolist():
            data = src.read(info.filename)
            if titles.get(info.filename) in valued:
                data = _with_values(data, valued[titles[info.filename]])
            if info.filename in parts:
                _splice(out, info, data, parts[info.filename])
            else:
                out.writestr(info, data)


def _splice(out: zipfile.ZipFile, info: zipfile.ZipInfo, data: bytes, rows: Rows) -> None:
    """The sheet `data` openpyxl wrote, with `rows` after its header row (row 1) and
    before any row openpyxl has after them (a total row)."""
    start = data.index(b"<sheetData>") + len(b"<sheetData>")
    end = data.index(b"</sheetData>")
    after = end  # where openpyxl's rows after the header resume, if any
    for m in _ROW.finditer(data, start, end):
        r = int(m.group(1))
        if r > 1:
            if r <= rows.last:
                raise ValueError(f"sheet {info.filename}: row {r} has cells besides the "
                                 f"rows written straight (2 to {rows.last})")
            after = m.start()
            break
    head = data[:after]
    extent = _DIMENSION.search(head)  # the rows written straight included
    if extent is not None:
        last_col = (extent.group(2) or extent.group(1)).decode()
        last_row = max(rows.last, int(extent.group(3) or 1))
        head = (head[:extent.start()] + f'<dimension ref="A1:{last_col}{last_row}"/>'.encode()
                + head[extent.end():])
    target = zipfile.ZipInfo(info.filename, date_time=info.date_time)
    target.compress_type = zipfile.ZIP_DEFLATED
    with out.open(target, "w", force_zip64=True) as f:
        f.write(head)
        for i in range(0, len(rows.xml), CHUNK_ROWS):
            f.write("".join(rows.xml[i:i + CHUNK_ROWS]).encode())
        f.write(data[after:])
