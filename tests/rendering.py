"""Workbooks as a reader sees them: recalculated by LibreOffice, numbers as their cell
formats show them, and the cells too narrow for them (### at 100 % zoom)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from openpyxl import load_workbook
from openpyxl.utils import get_column_letter


def recalculated(path: Path, out: Path) -> Path:
    """`path` recalculated by LibreOffice (headless), written into the new folder `out`."""
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        if os.environ.get("CI"):
            pytest.fail("LibreOffice is required in CI (.ci/run installs it)")
        pytest.skip("LibreOffice (soffice) is not installed")
    out.mkdir()
    subprocess.run([soffice, "--headless", "--calc", "--convert-to", "xlsx", "--outdir",
                    str(out), str(path)], check=True, capture_output=True, timeout=180,
                   env={**os.environ, "HOME": str(out)})
    return out / path.name


def rendered(value, fmt: str) -> str:
    """A number as its cell format shows it (the formats the workbooks use)."""
    if "0.0000" in fmt:
        return f"${value:,.4f}"
    if '"$"' in fmt:
        return f"${value:,.0f}" if fmt.endswith("0") and ".00" not in fmt else f"${value:,.2f}"
    if "%" in fmt:
        return f"{value * 100:.1f}%"
    if "#,##0.###" in fmt:
        return f"{value:,.3f}"
    return f"{value:g}"


def too_narrow(path: Path, recalculated_path: Path) -> list[tuple]:
    """Every number of every sheet wider, as shown, than its column:
    [(sheet, cell, as shown, width)]."""
    values = load_workbook(recalculated_path, data_only=True)
    formats = load_workbook(path)
    found = []
    for name in formats.sheetnames:
        ws, fs = values[name], formats[name]
        for row in fs.iter_rows(min_row=2):
            for cell in row:
                value = ws.cell(cell.row, cell.column).value
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    continue
                width = fs.column_dimensions[get_column_letter(cell.column)].width or 8.43
                shown = rendered(value, cell.number_format)
                if len(shown) > width:
                    found.append((name, cell.coordinate, shown, width))
    return found


ERRORS = ("#VALUE!", "#REF!", "#NAME?", "#DIV/0!", "#N/A", "#NUM!", "#NULL!", "Err:")


def error_values(recalculated_path: Path) -> list[tuple]:
    """Every cell of every sheet that recalculated to an error: [(sheet, cell, value)]."""
    values = load_workbook(recalculated_path, data_only=True)
    return [(ws.title, cell.coordinate, cell.value) for ws in values.worksheets
            for row in ws.iter_rows() for cell in row
            if isinstance(cell.value, str) and cell.value.startswith(ERRORS)]


def stale_values(path: Path, recalculated_path: Path) -> list[tuple]:
    """Every formula cell whose saved value (what a reader that does not recalculate
    shows: a file preview, Excel's Protected View, pandas) is not what LibreOffice
    recalculates it to: [(sheet, cell, formula, saved, recalculated)]."""
    formulas = load_workbook(path)
    saved = load_workbook(path, data_only=True)
    values = load_workbook(recalculated_path, data_only=True)
    found = []
    for ws in formulas.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if cell.data_type != "f":
                    continue
                mine = saved[ws.title][cell.coordinate].value
                theirs = values[ws.title][cell.coordinate].value
                if theirs in ("", None) and mine in ("", None):
                    continue
                same = (isinstance(mine, (int, float)) and isinstance(theirs, (int, float))
                        and abs(mine - theirs) <= 1e-9 * max(1.0, abs(theirs)))
                if not same and mine != theirs:
                    found.append((ws.title, cell.coordinate, cell.value, mine, theirs))
    return found
