"""`planner template`: an empty input workbook drawn from the schema.

Every table is a sheet with its columns (required ones in bold), a note per column
(meaning, unit, default), drop-down lists for enumerations and true/false columns (and the
settings' enumerated values) that refuse any other value, and the settings pre-filled with
their keys and defaults. A README sheet explains the tables. Every sheet prints one page
wide with its header row on every page, as the reports' sheets do.
"""

from __future__ import annotations

from pathlib import Path

from openpyxl import Workbook
from openpyxl.comments import Comment
from openpyxl.styles import Alignment, Font
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation

from planner.io.schema import SETTINGS, TABLES, Column
from planner.report.cells import HEADER_FILL, print_setup, save_atomically, text_cell

# rows that carry the drop-down lists: a generated market of 40 regions has 586 offers,
# one of 100 regions some 1,500 (they had stopped at row 1000: an outside audit)
ROWS_WITH_LISTS = 100_000


def _note(col: Column) -> str:
    parts = [col.doc or col.name]
    if col.unit:
        parts.append(f"unit: {col.unit}")
    if col.required:  # the column; some may leave cells blank (a setting's value)
        parts.append("required column, cells may be blank" if col.allow_blank
                     else "required")
    else:
        parts.append(f"default: {'blank' if col.default is None else col.default}")
    if col.choices:
        parts.append("one of: " + ", ".join(col.choices))
    return "\n".join(parts)


def write_template(path: str | Path) -> None:
    wb = Workbook()
    readme = wb.active
    readme.title = "README"
    lines = [
        "GPU procurement planner — input workbook",
        "",
        "Fill in one sheet per table; keep the header row. Column names are case-insensitive,",
        "their order is free, blank cells take the default shown in each column's note.",
        "Money is USD; time is in months; a month is YYYY-MM (or a date cell), a quarter 2027Q1.",
        "Check the workbook with:  planner validate FILE.xlsx   and solve it with:  "
        "planner solve FILE.xlsx",
        "",
        "Tables (one row is …):",
    ]
    for t in TABLES:
        lines.append(f"  {t.name}: {t.row_is}{' (optional)' if t.optional else ''}")
    lines += ["", "Settings (sheet settings, one key per row):"]
    for c in SETTINGS:
        lines.append(f"  {c.name}: {_note(c).replace(chr(10), '; ')}")
    for i, line in enumerate(lines, start=1):
        text_cell(readme.cell(i, 1), line)
    readme["A1"].font = Font(bold=True, size=14)
    readme.column_dimensions["A"].width = 110

    for t in TABLES:
        ws = wb.create_sheet(t.name)
        for j, col in enumerate(t.columns, start=1):
            cell = ws.cell(1, j, col.name)
            cell.font = Font(bold=col.required)
            cell.fill = HEADER_FILL
            cell.alignment = Alignment(vertical="top")
            cell.comment = Comment(_note(col), "planner", width=320, height=140)
            ws.column_dimensions[get_column_letter(j)].width = max(14, len(col.name) + 4)
            letter = get_column_letter(j)
            _drop_down(ws, col, f"{letter}2:{letter}{ROWS_WITH_LISTS}")
        ws.freeze_panes = "A2"
        if t.name == "settings":
            for i, c in enumerate(SETTINGS, start=2):
                ws.cell(i, 1, c.name)
                if isinstance(c.default, (int, float)) and not isinstance(c.default, bool):
                    ws.cell(i, 2, c.default)  # a number, as Excel shows and sums one
                elif c.default is not None:
                    text_cell(ws.cell(i, 2), str(c.default))
                ws.cell(i, 1).comment = Comment(_note(c), "planner", width=320, height=120)
                _drop_down(ws, c, f"B{i}")  # a setting's value: tail_policy, solver
    print_setup(wb)  # each table prints one page wide, its header on every page
    save_atomically(wb, Path(path))  # a failed write leaves an earlier file as it was


def _drop_down(ws, col: Column, cells: str) -> None:
    """A drop-down list on `cells` for an enumeration or true/false column. Excel refuses
    (showErrorMessage) a value typed that is not in the list: `reserved-1y` in `term` would
    otherwise only be found by `planner validate`."""
    choices = col.choices or (("true", "false") if col.type == "bool" else ())
    if not choices:
        return
    dv = DataValidation(type="list", formula1='"' + ",".join(choices) + '"',
                        allow_blank=True, showDropDown=False, showErrorMessage=True)
    dv.error = f"{col.name} must be one of: {', '.join(choices)}"
    dv.errorTitle = f"invalid {col.name}"
    ws.add_data_validation(dv)
    dv.add(cells)
