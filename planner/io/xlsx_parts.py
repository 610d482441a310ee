"""Where each worksheet of an .xlsx file is: the zip member its XML is in, by title, as
the workbook's own index says (xl/workbook.xml and its relationships). Both reading
(formulas saved with no value, planner.io.load) and writing (rows written straight,
planner.report.sheet_rows) go to a sheet's XML."""

from __future__ import annotations

import zipfile
from xml.etree import ElementTree

_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"


def sheet_parts(archive: zipfile.ZipFile) -> dict[str, str]:
    """Each worksheet's title -> the zip member its XML is in."""
    targets = {rel.get("Id"): rel.get("Target")
               for rel in ElementTree.fromstring(archive.read("xl/_rels/workbook.xml.rels"))
               if rel.tag == f"{_PKG_REL}Relationship"}
    parts = {}
    for sheet in ElementTree.fromstring(archive.read("xl/workbook.xml")).iter(f"{_MAIN}sheet"):
        target = targets.get(sheet.get(f"{_REL}id"))
        if target is not None:
            parts[sheet.get("name")] = (target.lstrip("/") if target.startswith("/")
                                        else f"xl/{target}")
    return parts
