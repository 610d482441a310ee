"""MODELS/workloads.csv and the AI model profiles it names (models/<name>.toml), checked.

workloads.csv is read like a scenario's CSV files (same loader and cell checks; messages
name the row and column); each profile is checked for every key the rules of its
workloads' modes read (planner.io.profiles), its measured figures and its precision
options. Profiles are input like a scenario's tables (SPEC §3), so every problem is
collected as an `Issue` naming the file and the key (or row and column) rather than
stopping at the first: the user fixes them all in one pass, and nothing is derived while
one is an error.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from planner.io.issues import Collector
from planner.io.load import UnreadableCsv, _make_table, _read_csv
from planner.io.parse import typed_rows
from planner.io.schema import Column, Table

BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
MODES = ("inference", "training", "compute")

# models/workloads.csv described as a scenario table is: read by the same loader and cell
# checks, it takes a BOM, header names in any case and with spaces, and its messages name
# the row and column ("'fp4' is not one of fp32, bf16, …").
USES = Table("workloads", "a workload's model", (
    Column("workload", "id", required=True, doc="a workload of the scenario"),
    Column("model", "id", required=True, doc="its profile: MODELS/<model>.toml"),
    Column("precision", "enum", required=True, choices=tuple(BYTES)),
    Column("mode", "enum", required=True, choices=MODES),
))


@dataclass(frozen=True)
class Figure:
    """What a profile key must hold, as its message says when it does not."""
    what: str
    holds: Callable[[float], bool]
    whole: bool = False


POSITIVE = Figure("a number above 0", lambda x: x > 0)
SHARE = Figure("a share above 0 and at most 1", lambda x: 0 < x <= 1)
COUNT = Figure("a whole number of at least 1", lambda x: x >= 1, whole=True)
SIZE_GB = Figure("a number of GB, 0 or more", lambda x: x >= 0)

# The keys each mode's rule reads: section ("" for the top level) → key → (what it must
# hold, required). A rule reads nothing else, so a profile holding these derives.
NEEDS: dict[str, dict[str, dict[str, tuple[Figure, bool]]]] = {
    "inference": {
        "": {"layers": (COUNT, True), "kv_heads": (COUNT, True), "head_dim": (COUNT, True)},
        "serving": {"context_tokens": (COUNT, True), "batch": (COUNT, True),
                    "bandwidth_efficiency": (SHARE, True),
                    "compute_utilization": (SHARE, True)},
    },
    "training": {"training": {"mfu": (SHARE, True), "min_memory_gb": (SIZE_GB, False),
                              "gpus_per_replica": (COUNT, False)}},
    "compute": {"compute": {"flops_per_unit": (POSITIVE, True), "utilization": (SHARE, True),
                            "min_memory_gb": (SIZE_GB, False)}},
}
MEASURED_KEYS = ("units_per_gpu", "gpus_per_replica", "source")
# Every key a profile may hold (section "" the top level): NEEDS' keys and those read or
# kept for the reader (name, source, notes, kv_precision, a compute unit's name, the
# precisions offered). Any other is said with its nearest known key: a misspelled
# optional key (kv_precison) had been ignored, and its default changed the figures by
# a quarter without a word.
KNOWN_KEYS: dict[str, set[str]] = {
    "": {"name", "parameters_b", "layers", "kv_heads", "head_dim", "source", "notes",
         "serving", "training", "compute", "precision", "measured"},
    "serving": {*NEEDS["inference"]["serving"], "kv_precision", "source", "notes"},
    "training": {*NEEDS["training"]["training"], "source", "notes"},
    "compute": {*NEEDS["compute"]["compute"], "unit", "source", "notes"},
    "precision": {"options", "source", "notes"},
}


@dataclass(frozen=True)
class ModelUse:
    """A row of MODELS/workloads.csv: which model a workload runs, and how (None: a cell
    of a row left out that did not parse; its profile is checked all the same)."""
    row: int
    workload: str | None
    model: str
    precision: str | None
    mode: str | None


# --- MODELS/workloads.csv and the profiles, checked --------------------------------------

def read_uses(models_dir: Path, out: Collector) -> tuple[list[ModelUse], list[ModelUse]]:
    """The rows of MODELS/workloads.csv, read as a scenario's CSV files are; each problem
    with its row and column: (the rows to derive, the rows left out for a problem of
    their own — a cell that did not parse, a workload listed twice — whose profiles are
    checked all the same: every problem at once); both empty where the file cannot be
    read or a required column is missing."""
    file = models_dir / "workloads.csv"
    label = str(file)
    try:
        lines = _read_csv(file)
    except UnreadableCsv as e:
        out.error(label, e.row, e.column, e.what)
        return [], []
    except OSError as e:
        out.error(label, None, None, f"cannot be read: {e.strerror or e} (it lists which "
                  "model each workload runs: workload, model, precision, mode)")
        return [], []
    body = ((n, cells) for n, cells in enumerate(lines[1:], start=2))
    table = _make_table("workloads", label, lines[0] if lines else [], body, out.issues)
    missing = [c.name for c in USES.columns if c.name not in table.columns]
    for name in missing:
        out.error(label, 1, name, "required column is missing")
    for name in table.columns:
        if name not in USES.column_names:
            out.warn(label, 1, name, f"unknown column '{name}'; ignored")
    # the cells of the columns there are checked even when one is missing: all at once
    present = Table(USES.name, USES.row_is,
                    tuple(c for c in USES.columns if c.name in table.columns))
    typed = typed_rows(table, present, out)
    if missing:
        return [], []
    uses: list[ModelUse] = []
    left_out: list[ModelUse] = []
    first: dict[str, int] = {}
    for number, values, ok in typed:
        if ok and values["workload"] in first:
            out.error(label, number, "workload", f"'{values['workload']}' is listed twice "
                      f"(first at row {first[values['workload']]}): a workload runs one model")
            ok = False
        if not ok:
            if values.get("model") is not None:
                left_out.append(ModelUse(number, values.get("workload"), values["model"],
                                         values.get("precision"), values.get("mode")))
            continue
        first[values["workload"]] = number
        uses.append(ModelUse(number, **values))
    return uses, left_out


def read_profiles(models_dir: Path, uses: list[ModelUse], out: Collector,
                  left_out: list[ModelUse] = ()) -> dict[str, dict]:
    """The profile of every model `uses` name, checked for what its uses' rules read; a
    missing or broken one is reported and left out. Those the rows `left_out` name are
    checked too (for what their cells that parsed say), not returned."""
    label = str(models_dir / "workloads.csv")
    every = sorted([*uses, *left_out], key=lambda u: u.row)
    for u in every:  # in the order of the rows
        if not (models_dir / f"{u.model}.toml").is_file():
            out.error(label, u.row, "model", f"no profile {models_dir / f'{u.model}.toml'} "
                      f"{_profiles_there(models_dir)}")
    derived = {u.model for u in uses}
    profiles: dict[str, dict] = {}
    for model in dict.fromkeys(u.model for u in every):
        users = [u for u in every if u.model == model]
        path = models_dir / f"{model}.toml"
        if not path.is_file():
            continue
        profile = load_profile(path, out)
        if profile is None:
            continue
        errors = _errors(out)
        _check_profile(profile, path, users, label, out)
        if _errors(out) == errors and model in derived:
            profiles[model] = profile
    return profiles


def _profiles_there(models_dir: Path) -> str:
    names = sorted(p.stem for p in models_dir.glob("*.toml"))
    return (f"(profiles there: {', '.join(names)})" if names
            else f"(there is no .toml profile in {models_dir})")


def _errors(out: Collector) -> int:
    return sum(1 for i in out.issues if i.severity == "error")


def load_profile(path: Path, out: Collector) -> dict | None:
    """The profile in `path`; None, with the problem in `out`, when it cannot be read."""
    try:
        with path.open("rb") as f:
            profile = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        out.error(str(path), None, None, f"not valid TOML: {e}")
        return None
    except UnicodeDecodeError:
        out.error(str(path), None, None, "not UTF-8 text (save the file as UTF-8)")
        return None
    except OSError as e:
        out.error(str(path), None, None, f"cannot be read: {e.strerror or e}")
        return None
    profile.setdefault("name", path.stem)
    return profile


def _check_profile(profile: dict, path: Path, users: list[ModelUse], uses_label: str,
                   out: Collector) -> None:
    """Every key the rules of `users`' modes read, the measured figures and the precision
    options: each problem once, naming the workloads that need the key."""
    label = str(path)
    _check_key(profile, "", "parameters_b", POSITIVE, True,
               f"used by {_few(_names(users))}", label, out)
    for mode in dict.fromkeys(u.mode for u in users if u.mode is not None):
        why = f"needed for mode {mode}: {_few(_names(u for u in users if u.mode == mode))}"
        for section, keys in NEEDS[mode].items():
            table = _section(profile, section, why, label, out)
            if table is None:
                continue
            for key, (figure, required) in keys.items():
                _check_key(table, section, key, figure, required, why, label, out)
    if any(u.mode == "inference" for u in users):
        kv = profile.get("serving", {})
        if isinstance(kv, dict) and "kv_precision" in kv \
                and str(kv["kv_precision"]).lower() not in BYTES:
            out.error(label, None, None, f"[serving] kv_precision = {kv['kv_precision']!r}: "
                      f"must be one of {', '.join(BYTES)}")
    _check_measured(profile, label, out)
    _check_options(profile, path, users, uses_label, out)
    _check_unknown_keys(profile, label, out)


def _check_unknown_keys(profile: dict, label: str, out: Collector) -> None:
    """A key no rule reads is warned about, with the known key it is nearest to (a
    misspelling): its rule then takes the default."""
    import difflib

    for section, known in KNOWN_KEYS.items():
        table = profile.get(section) if section else profile
        if not isinstance(table, dict):
            continue
        for key in table:
            if key in known:
                continue
            near = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)
            name = f"[{section}] {key}" if section else key
            out.warn(label, None, None, f"{name}: unknown key; ignored"
                     + (f" (did you mean {near[0]}?)" if near else ""))


def _names(users) -> list[str]:
    """The workloads of `users`, a row's number where its workload did not parse."""
    return [u.workload or f"row {u.row}" for u in users]


def _section(profile: dict, section: str, why: str, label: str, out: Collector):
    """The table `[section]` of the profile (the profile itself for ""), or None with the
    problem reported."""
    if not section:
        return profile
    table = profile.get(section)
    if table is None:
        out.error(label, None, None, f"[{section}] is missing ({why})")
    elif not isinstance(table, dict):
        out.error(label, None, None, f"{section} = {table!r}: must be a table [{section}]")
        table = None
    return table


def _check_key(table: dict, section: str, key: str, figure: Figure, required: bool,
               why: str, label: str, out: Collector) -> None:
    name = f"[{section}] {key}" if section else key
    if key not in table:
        if required:
            out.error(label, None, None, f"{name} is missing ({why})")
        return
    value = table[key]
    if isinstance(value, str):
        out.error(label, None, None, f"{name}: '{value}' is text, not a number "
                  "(write it without quotes)")
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        out.error(label, None, None, f"{name} = {value!r}: must be {figure.what}")
    elif not math.isfinite(value) or not figure.holds(value) \
            or (figure.whole and value != int(value)):
        out.error(label, None, None, f"{name} = {value:g}: must be {figure.what}")


def _check_measured(profile: dict, label: str, out: Collector) -> None:
    """Every [measured.<mode>.<precision>.<GPU>] entry: a known mode and precision, and
    units_per_gpu (gpus_per_replica) that a throughput row can hold."""
    for mode, by_precision in _entries(profile, "measured", label, out):
        if mode not in MODES:
            out.error(label, None, None, f"[measured.{mode}]: '{mode}' is not a mode "
                      f"({', '.join(MODES)})")
            continue
        for precision, by_gpu in _entries(profile["measured"], mode, label, out,
                                          f"measured.{mode}"):
            if precision not in BYTES:
                out.error(label, None, None, f"[measured.{mode}.{precision}]: '{precision}' "
                          f"is not a precision ({', '.join(BYTES)})")
                continue
            where = f"measured.{mode}.{precision}"
            for gpu, entry in _entries(by_precision, precision, label, out, where):
                _check_measurement(entry, f"{where}.{gpu}", label, out)


def _entries(parent: dict, key: str, label: str, out: Collector, name: str | None = None):
    """The (key, value) pairs of the table parent[key]; none, with an error, when it is not
    a table."""
    value = parent.get(key, {})
    if not isinstance(value, dict):
        out.error(label, None, None, f"{name or key} = {value!r}: must be tables "
                  "[measured.<mode>.<precision>.<GPU>]")
        return []
    return list(value.items())


def _check_measurement(entry: object, name: str, label: str, out: Collector) -> None:
    if not isinstance(entry, dict):
        out.error(label, None, None, f"{name} = {entry!r}: must be a table [{name}] with "
                  f"{', '.join(MEASURED_KEYS)}")
        return
    _check_key(entry, name, "units_per_gpu", POSITIVE, True,
               "the units one GPU delivers, measured", label, out)
    _check_key(entry, name, "gpus_per_replica", COUNT, False, "", label, out)
    for key in entry:
        if key not in MEASURED_KEYS:
            out.warn(label, None, None, f"[{name}] {key}: unknown key; ignored (the keys are "
                     f"{', '.join(MEASURED_KEYS)})")


def _check_options(profile: dict, path: Path, users: list[ModelUse], uses_label: str,
                   out: Collector) -> None:
    """A precision the profile does not list among its `[precision] options` is warned
    about: the rules still apply (its bytes per parameter are known), but nobody has said
    the model runs at it."""
    section = profile.get("precision", {})
    options = section.get("options") if isinstance(section, dict) else None
    if options is None:
        return
    if not isinstance(options, list) or not all(
            isinstance(o, str) and o.lower() in BYTES for o in options):
        out.error(str(path), None, None, f"[precision] options = {options!r}: must be a list "
                  f"of precisions ({', '.join(BYTES)})")
        return
    offered = [o.lower() for o in options]
    for u in users:
        if u.precision is not None and u.precision not in offered:
            out.warn(uses_label, u.row, "precision", f"{u.precision} is not among the "
                     f"[precision] options of {path.name} ({', '.join(offered)})")


def _few(names: list[str], most: int = 3) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more"
                                      if len(names) > most else "")
