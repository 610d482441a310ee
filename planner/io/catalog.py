"""Price catalogs in SkyPilot's public layout (v8), read into per-GPU offers.

`DIR/<cloud>/vms.csv`: InstanceType, AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB,
Price (USD per instance-hour), Region, GpuInfo, SpotPrice; `DIR/common/metadata.csv`:
GPU, MemoryGB. A row's per-GPU rate is Price ÷ AcceleratorCount; a SpotPrice makes a spot
offer too. Rows without an accelerator are CPU instances and are passed over; a GPU row
that cannot be priced (no price, no accelerators, a GPU neither in metadata.csv nor in the
alias table) is reported with its file, row and column. A GPU's memory is its rows'
GpuInfo where they state it (v8), else metadata.csv's (v7: B200, H200 and GH200 at 80 GB).
An instance type that names "pcie" holds the GPU's PCIe card, a GPU type of its own
(`CatalogPrice.gpu_name`: "H100-PCIe").
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from pathlib import Path

from planner.io.issues import Issue
from planner.io.load import UnreadableCsv, _read_csv

PCIE = "-PCIe"  # a GPU's PCIe card, after its name: a GPU type of its own


@dataclass(frozen=True)
class CatalogPrice:
    cloud: str  # the catalog's folder: the provider
    catalog_region: str
    catalog_gpu: str
    term: str  # on_demand or spot
    usd_per_gpu_hour: float
    gpus_per_instance: int
    instance_type: str
    file: str  # e.g. lambda/vms.csv
    row: int
    memory_gb: float | None = None  # per GPU, from the row's GpuInfo
    pcie: bool = False  # the GPU's PCIe card, as the instance type says

    @property
    def gpu_name(self) -> str:
        """The GPU type the price is for: the catalog's name, and "-PCIe" for a PCIe
        card. SkyPilot names Lambda's gpu_1x_h100_pcie "H100", as the SXM part, whose
        memory bandwidth is 3.35 TB/s against the PCIe card's 2.0: priced as one GPU
        type, the plan took the card's throughput for the SXM's."""
        return f"{self.catalog_gpu}{PCIE}" if self.pcie else self.catalog_gpu


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def read_csv(path: Path, label: str, issues: list[Issue]
             ) -> tuple[list[str], list[dict]] | None:
    """A CSV file's columns and rows, each a dict by column (blank lines skipped), read as
    a scenario's CSV files are (planner.io.load); None, with an error in `issues`, where
    it cannot be read as UTF-8 CSV text."""
    try:
        lines = _read_csv(path)
    except UnreadableCsv as e:
        issues.append(Issue("error", label, e.row, e.column, e.what))
        return None
    except IsADirectoryError:
        issues.append(Issue("error", label, None, None, "is a folder, not a CSV file"))
        return None
    except OSError as e:
        issues.append(Issue("error", label, None, None, f"cannot be read ({e.strerror})"))
        return None
    header = lines[0] if lines else []
    # a short row's missing cells are blank (as csv.DictReader's), extra ones dropped
    return header, [dict(zip(header, line + [""] * (len(header) - len(line))))
                    for line in lines[1:] if line]


def read_metadata(folder: Path, issues: list[Issue]) -> dict[str, float | None] | None:
    """GPU name (as the catalog spells it) -> memory in GB, from common/metadata.csv;
    None, with an error in `issues`, where there is none to read (no file, not CSV text,
    no GPU column)."""
    path = folder / "common" / "metadata.csv"
    if not path.is_file():
        issues.append(Issue("error", str(folder), None, None,
                            "no common/metadata.csv: not a catalog in SkyPilot's layout "
                            "(it names the GPU types)"))
        return None
    read = read_csv(path, "common/metadata.csv", issues)
    if read is None:
        return None
    if "GPU" not in read[0]:  # it names no GPU type: every catalog row would be unknown
        issues.append(Issue("error", "common/metadata.csv", 1, None,
                            "missing column GPU (the GPU types the catalog names)"))
        return None
    out: dict[str, float | None] = {}
    for row in read[1]:
        name = (row.get("GPU") or "").strip()
        if name:
            out[name] = _number(row.get("MemoryGB") or "")
    return out


def read_catalog(folder: Path, known_gpus: set[str] | None,
                 issues: list[Issue]) -> list[CatalogPrice]:
    """Every GPU price of every `<cloud>/vms.csv` under `folder`, in file order.
    `known_gpus`: catalog GPU names the import can place (metadata.csv and the alias
    table); None where metadata.csv could not say (its error is the one to read: a
    warning per row naming an unknown GPU would bury it)."""
    prices: list[CatalogPrice] = []
    files = sorted(p for p in folder.glob("*/vms.csv") if p.parent.name != "common")
    if not files:
        issues.append(Issue("error", str(folder), None, None,
                            "no <cloud>/vms.csv here: not a catalog in SkyPilot's layout"))
    for path in files:
        cloud = path.parent.name
        label = f"{cloud}/vms.csv"
        read = read_csv(path, label, issues)
        if read is None:
            continue
        columns, rows = read
        missing = {"InstanceType", "AcceleratorName", "AcceleratorCount", "Price",
                   "Region"} - set(columns)
        if missing:
            issues.append(Issue("error", label, 1, None,
                                "missing column(s): " + ", ".join(sorted(missing))))
            continue
        for number, row in enumerate(rows, start=2):
            prices.extend(_row_prices(cloud, label, number, row, known_gpus, issues))
    return prices


def _memory_gb(gpu_info: str, gpu: str) -> float | None:
    """A GPU's memory in GB from a row's GpuInfo (a Python literal: {'Gpus': [{'Name':
    …, 'MemoryInfo': {'SizeInMiB': …}}], …}); None where it does not say."""
    try:
        info = ast.literal_eval(gpu_info)
        for g in info.get("Gpus", ()):
            if str(g.get("Name", "")).casefold() == gpu.casefold():
                mib = float(g["MemoryInfo"]["SizeInMiB"])
                return round(mib / 1024.0, 1) if math.isfinite(mib) and mib > 0 else None
    except (ValueError, SyntaxError, TypeError, KeyError, AttributeError,
            MemoryError, RecursionError):
        pass
    return None


def _row_prices(cloud: str, label: str, number: int, row: dict, known_gpus: set[str],
                issues: list[Issue]) -> list[CatalogPrice]:
    gpu = (row.get("AcceleratorName") or "").strip()
    count_text = (row.get("AcceleratorCount") or "").strip()
    if not gpu:
        return []  # a CPU instance
    def skip(column: str, what: str) -> list:
        issues.append(Issue("warning", label, number, column, what + "; row skipped"))
        return []

    count = _number(count_text)
    if count is None or count <= 0 or abs(count - round(count)) > 1e-9:
        return skip("AcceleratorCount", f"'{count_text}' is not a positive whole number of "
                                        "accelerators")
    if known_gpus is not None and gpu not in known_gpus:
        return skip("AcceleratorName", f"unknown GPU '{gpu}': not in common/metadata.csv "
                                       "nor in the alias table")
    region = (row.get("Region") or "").strip()
    if not region:
        return skip("Region", "no region")
    price_text = (row.get("Price") or "").strip()
    price = _number(price_text)
    if price is None or price <= 0:
        return skip("Price", f"'{price_text}' is not a price")
    n = int(round(count))
    instance_type = (row.get("InstanceType") or "").strip()
    common = dict(cloud=cloud, catalog_region=region, catalog_gpu=gpu, gpus_per_instance=n,
                  instance_type=instance_type, file=label, row=number,
                  memory_gb=_memory_gb(row.get("GpuInfo") or "", gpu),
                  pcie="pcie" in instance_type.casefold())
    out = [CatalogPrice(term="on_demand", usd_per_gpu_hour=price / n, **common)]
    spot_text = (row.get("SpotPrice") or "").strip()
    if spot_text:
        spot = _number(spot_text)
        if spot is None or spot <= 0:
            issues.append(Issue("warning", label, number, "SpotPrice",
                                f"'{spot_text}' is not a price; no spot offer"))
        else:
            out.append(CatalogPrice(term="spot", usd_per_gpu_hour=spot / n, **common))
    return out
