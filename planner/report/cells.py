"""How a sheet of the workbooks is written (the finance workbook, planner.report.workbook;
what-if's, the Risk sheet, the input template): number formats, text that always stays
text (a name like '=1+1' is never a formula), formulas saved with their values, a table
sheet with typed columns and widths its figures show without ###, print setup, and saving
atomically.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from openpyxl import Workbook
from openpyxl.cell import Cell
from openpyxl.comments import Comment
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.workbook.defined_name import DefinedName

from planner.files import write_atomically
from planner.report.sheet_rows import Rows, save, save_value

USD = '"$"#,##0.00'
RATE = '"$"#,##0.0000'  # prices per GPU-hour or GB: four decimals, so a hand check holds
MONTH = "yyyy-mm"  # months are dates (their first day), shown as 2027-01
DAY = "yyyy-mm-dd"
USD0 = '"$"#,##0'
PCT = "0.0%"
NUM = "#,##0.###"
BOLD = Font(bold=True)
HEADER_FILL = PatternFill("solid", fgColor="DDE7F0")
RED_FILL = PatternFill("solid", fgColor="F8CBAD")
AMBER_FILL = PatternFill("solid", fgColor="FFE699")


@dataclass(frozen=True)
class F:
    """A formula; `{r}` stands for the row it is written in. `value`: what it comes to,
    worked out as the formula works it out, saved as the cell's value, which readers
    that do not recalculate show (a file preview, Excel's Protected View, pandas,
    openpyxl's data_only); None saves none (Excel and LibreOffice recalculate on load
    whatever is saved)."""

    text: str
    value: float | str | None = None


def month_date(st, index: int) -> dt.date:
    """The first day of month `index` of the horizon (negative: before it), a date."""
    y, m = st.start_month
    total = y * 12 + (m - 1) + index
    return dt.date(total // 12, total % 12 + 1, 1)


def text_cell(cell, value) -> None:
    """Write `value`; strings always as text (a name like '=1+1' must stay text)."""
    cell.value = value
    if isinstance(value, str):
        cell.data_type = "s"


def value_cell(cell, value, fmt: str | None = None) -> None:
    """A figure of a label–value block, with its number format: a formula only when the
    workbook wrote it (an `F`); any other text stays text, whatever it starts with (a
    scenario named '=1+2')."""
    if isinstance(value, F):
        formula_cell(cell, value)
    else:
        text_cell(cell, value)
    if fmt:
        cell.number_format = fmt


def formula_cell(cell, f: F) -> None:
    """Write the formula `f` (its `{r}` the cell's row) with its value saved."""
    cell.value = f.text.format(r=cell.row)
    save_value(cell, f.value)


def criterion(text: str) -> str:
    """A SUMIFS criterion, as a formula's string literal, that matches `text` exactly:
    SUMIFS reads a leading =, <, > as a comparison and * ? ~ as wildcards, so a provider
    named '=4+4' would match the text '4+4' (and 'a*' every name starting with a)."""
    escaped = text.replace("~", "~~").replace("*", "~*").replace("?", "~?")
    return '"=' + escaped.replace('"', '""') + '"'


def in_template(text: str) -> str:
    """`text` (a name from the input) as it stands inside an `F`'s formula, whose `{r}`
    is its row: braces doubled (a provider named 'p{x}' ended the command with an
    unexpected error)."""
    return text.replace("{", "{{").replace("}", "}}")


def shown_width(value, fmt: str | None) -> int:
    """Characters a value takes as its format shows it, and a margin."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if fmt in (USD, RATE, USD0):
            decimals = {USD: 2, RATE: 4, USD0: 0}[fmt]
            return len(f"${value:,.{decimals}f}") + 3
        if fmt == NUM:
            return len(f"{value:,.3f}") + 3
    if isinstance(value, dt.date):
        return 10  # yyyy-mm and a margin
    return len(str(value)) + 2


def fit_figures(ws, col: str, least: float) -> None:
    """Column `col` of `ws` at least `least` wide and as wide as its figures show: a
    number too wide for its column shows ###."""
    shown = [shown_width(c.value, c.number_format) for c in ws[col]
             if isinstance(c.value, (int, float)) and not isinstance(c.value, bool)]
    ws.column_dimensions[col].width = max([least, *shown])


class Sheet:
    """A worksheet holding one table: header row, typed columns, filters, widths."""

    def __init__(self, wb: Workbook, title: str, columns: list[tuple[str, str | None]],
                 notes: dict[str, str] | None = None, edited: bool = False,
                 keep: bool = False):
        """`edited`: whether cells of its rows are written once the rows are added (its
        rows are then openpyxl's cells; else they are written straight as XML, and only
        rows after them may be written as cells). `keep`: whether to keep its rows'
        figures (`figures`), which other sheets' formulas read."""
        self.ws = wb.create_sheet(title)
        # each row's figures by column, its formulas' values among them (if kept)
        self.figures: list[dict[str, object]] | None = [] if keep else None
        # what other sheets read of this one, set by the function that fills it: the
        # Plan sheet's costs by line (a DataFrame, as its formulas work them out), the
        # Egress sheet's by (month, provider), the Costs sheet's totals by column and
        # the row they are on
        self.costs = None
        self.totals: dict[str, float] = {}
        self.total_row: int | None = None
        self.columns = [c for c, _ in columns]
        self.formats = [f for _, f in columns]
        self.widths = [len(c) + 2 for c in self.columns]
        self.row = 1
        for j, name in enumerate(self.columns, start=1):
            cell = self.ws.cell(1, j)
            text_cell(cell, name)  # a column may be named after a provider
            cell.font, cell.fill = BOLD, HEADER_FILL
            cell.alignment = Alignment(wrap_text=True, vertical="top")
            if notes and name in notes:
                cell.comment = Comment(notes[name], "planner")
        self.ws.freeze_panes = "A2"
        # each column's number format as a style its cells are created with
        self._styles = []
        for fmt in self.formats:
            model = Cell(self.ws)
            if fmt:
                model.number_format = fmt
            self._styles.append(model)
        # rows written straight into the sheet's XML (planner.report.sheet_rows) where
        # none is changed once added
        self._rows = None if edited else Rows(
            self.ws, [get_column_letter(j) for j in range(1, len(self.columns) + 1)],
            [model.style_id for model in self._styles])

    def col(self, name: str) -> str:
        return get_column_letter(self.columns.index(name) + 1)

    def rng(self, name: str) -> str:
        """The whole data range of a column, e.g. Plan!$L$2:$L$40 (at least one row)."""
        c = self.col(name)
        last = max(self.row, 2)
        title = self.ws.title
        return f"'{title}'!${c}$2:${c}${last}"

    def add(self, values: list) -> int:
        """Append a row; an `F` is written as its formula, anything else as a value (text
        as text) in its column's number format."""
        for j, v in enumerate(values):
            if v is not None and not isinstance(v, F):
                self.widths[j] = max(self.widths[j],
                                     min(shown_width(v, self.formats[j]), 50))
        self.row += 1
        r = self.row
        if self.figures is not None:
            self.figures.append({name: v.value if isinstance(v, F) else v
                                 for name, v in zip(self.columns, values)})
        if self._rows is not None:
            return self._rows.add(values, {j: (v.text.format(r=r), v.value)
                                           for j, v in enumerate(values) if isinstance(v, F)})
        cells = []
        for j, v in enumerate(values):
            style = self._styles[j]._style
            if isinstance(v, F):
                cells.append(Cell(self.ws, value=v.text.format(r=r), style_array=style))
                continue
            cell = Cell(self.ws, value=v, style_array=style)
            if cell.data_type == "f":  # a name like '=1+1' stays text
                cell.data_type = "s"
            cells.append(cell)
        # cells built with their column's style and appended whole: styling cell by cell
        # took a third of writing a 50,000-row Plan sheet
        self.ws.append(cells)
        for j, v in enumerate(values):
            if isinstance(v, F):
                save_value(self.ws.cell(r, j + 1), v.value)
        return r

    def fit(self, largest: dict[str, float]) -> None:
        """Columns (by name) as wide as the largest figure each can show: its formulas'
        values are not measured as rows are added (a $10 B total in a column sized for
        $999 M showed ###; measuring a million Plan rows' formulas took seconds)."""
        for name, value in largest.items():
            j = self.columns.index(name)
            self.widths[j] = max(self.widths[j], shown_width(float(value), self.formats[j]))

    def finish(self) -> None:
        for j, w in enumerate(self.widths, start=1):
            fmt = self.formats[j - 1]
            # money columns also hold formulas and totals: room for $999,999,999.00
            least = 18 if fmt in (USD, RATE) else 12 if fmt else 8
            self.ws.column_dimensions[get_column_letter(j)].width = max(w, least)
        last = get_column_letter(len(self.columns))
        self.ws.auto_filter.ref = f"A1:{last}{max(self.row, 2)}"


def save_atomically(wb: Workbook, path: Path) -> None:
    """Save atomically (planner.files): a failure leaves `path` as it was; the tables'
    rows written straight (planner.report.sheet_rows)."""
    write_atomically(path, lambda tmp: save(wb, tmp))


def fit_to_page_width(ws) -> None:
    """Print on landscape pages one sheet wide."""
    ws.page_setup.orientation = "landscape"
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0


def print_setup(wb: Workbook) -> None:
    """Every sheet prints one page wide; a table's header row repeats on every page."""
    for ws in wb.worksheets:
        fit_to_page_width(ws)
        # a table's header row (a Sheet's), or a sheet's title, on every page
        ws.print_title_rows = "1:1"


def define_name(wb: Workbook, name: str, ref: str) -> None:
    """A workbook-wide name for `ref`, which formulas use."""
    wb.defined_names[name] = DefinedName(name, attr_text=ref)
