"""Small scenarios written as the user would write them: CSV folders or workbooks."""

from __future__ import annotations

import copy
import csv
from pathlib import Path

from openpyxl import Workbook

# The smallest complete scenario: one site, one region, one GPU, one workload, one month.
BASE: dict[str, list[dict]] = {
    "settings": [
        {"key": "start_month", "value": "2027-01"},
        {"key": "horizon_months", "value": "1"},
    ],
    "gpus": [{"gpu": "A", "memory_gb": 80}],
    "sites": [{"site": "s1", "country": "US", "jurisdiction": "US"}],
    "links": [],
    "regions": [{"region": "r1", "provider": "p", "site": "s1"}],
    "offers": [{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2}],
    "workloads": [{"workload": "w", "kind": "inference"}],
    "throughput": [{"workload": "w", "gpu": "A", "units_per_gpu": 10}],
    "demand": [{"workload": "w", "period": "2027-01", "amount": 10}],
}

HEADERS = {
    "settings": ["key", "value"],
    "gpus": ["gpu"],
    "sites": ["site", "country", "jurisdiction"],
    "links": ["site_a", "site_b", "rtt_ms"],
    "regions": ["region", "provider", "site"],
    "offers": ["region", "gpu", "term", "usd_per_gpu_hour"],
    "workloads": ["workload", "kind"],
    "throughput": ["workload", "gpu", "units_per_gpu"],
    "demand": ["workload", "period", "amount"],
    "existing": ["region", "gpu", "gpus", "start_month", "end_month", "usd_per_gpu_hour"],
}


def scenario(**tables) -> dict[str, list[dict]]:
    """BASE with whole tables replaced; settings given as a dict merge into BASE's."""
    data = copy.deepcopy(BASE)
    for name, rows in tables.items():
        if name == "settings" and isinstance(rows, dict):
            merged = {r["key"]: r["value"] for r in data["settings"]}
            merged.update({k: str(v) for k, v in rows.items()})
            data["settings"] = [{"key": k, "value": v} for k, v in merged.items()]
        else:
            data[name] = rows
    return data


def _columns(name: str, rows: list[dict]) -> list[str]:
    """The header: the columns the rows use (the standard ones of an empty table)."""
    used = {c for row in rows for c in row}
    cols = [c for c in HEADERS.get(name, []) if c in used or not rows]
    for row in rows:
        for c in row:
            if c not in cols:
                cols.append(c)
    return cols


def write_csv(folder: Path, tables: dict[str, list[dict]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        cols = _columns(name, rows)
        with (folder / f"{name}.csv").open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(cols)
            for row in rows:
                writer.writerow(["" if row.get(c) is None else row.get(c) for c in cols])
    return folder


def write_xlsx(file: Path, tables: dict[str, list[dict]]) -> Path:
    wb = Workbook()
    wb.remove(wb.active)
    for name, rows in tables.items():
        ws = wb.create_sheet(name)
        cols = _columns(name, rows)
        ws.append(cols)
        for row in rows:
            ws.append([row.get(c) for c in cols])
    wb.save(file)
    return file
