"""AI model profiles → `throughput` rows (how much of a workload one GPU type delivers).

A profile (models/<name>.toml) gives a model's size and shape; a GPU's memory, bandwidth
and BF16 TFLOPS come from the scenario's `gpus` table. Measured figures in the profile win;
otherwise the roofline rules below apply, each stated so a reviewer can redo the arithmetic:

* memory: weights = parameters × bytes per parameter; a serving replica also holds the KV
  cache of `batch` sequences of `context_tokens`; a replica is the smallest power of two
  GPUs (≤ 8) whose memory × 0.9 holds it — none: the GPU type cannot serve the model.
* decode (inference, unit: output tokens/s): each step reads the weights once and every
  sequence's KV cache, so per replica
      tokens/s = min(batch × bandwidth_efficiency × n × bandwidth / bytes read per step,
                     n × TFLOPS × compute_utilization / (2 × parameters)).
* training (unit: training tokens/s): tokens/s per GPU = TFLOPS × mfu / (6 × parameters),
  on GPUs with at least `min_memory_gb`, in replicas of `gpus_per_replica` (a node).
* compute (unit: the profile's own, e.g. images/s): per GPU = TFLOPS × utilization /
  FLOPs per unit.

`planner throughput SCENARIO MODELS` writes SCENARIO/throughput.csv from MODELS/workloads.csv
(workload, model, precision, mode). Profiles are input like a scenario's tables (SPEC §3):
every problem is collected as an `Issue` naming the file and the key (or row and column),
and nothing is derived while one is an error. What the profiles cannot give a scenario's
workload is said as a warning, and the table written always passes `planner validate`.
"""

from __future__ import annotations

import csv
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from planner.io.load import RawScenario, RawTable, UnreadableCsv, _make_table, _read_csv
from planner.io.scenario import Gpu
from planner.io.schema import TABLES_BY_NAME, Column, Table
from planner.io.validate import _Collector, _typed_rows

BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
MODES = ("inference", "training", "compute")
REPLICA_MOST = 8  # GPUs in one serving replica: one node

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


@dataclass(frozen=True)
class ThroughputRow:
    workload: str
    gpu: str
    units_per_gpu: float | str  # a kept row (not derived) as the user wrote it
    gpus_per_replica: int | str
    how: str  # the rule or measurement it comes from


@dataclass(frozen=True)
class ModelUse:
    """A row of MODELS/workloads.csv: which model a workload runs, and how."""
    row: int
    workload: str
    model: str
    precision: str
    mode: str


@dataclass
class Derivation:
    """What a workload's profile gives: its rows, why every other GPU type has none, and
    which gpus figures were blank where a rule needed them."""
    use: ModelUse
    rows: list[ThroughputRow]
    left_out: dict[str, str]  # GPU type → why
    blank: dict[str, tuple[str, ...]]  # GPU type → the gpus columns that were blank


# --- MODELS/workloads.csv and the profiles, checked --------------------------------------

def read_uses(models_dir: Path, out: _Collector) -> list[ModelUse]:
    """The rows of MODELS/workloads.csv, read as a scenario's CSV files are; each problem
    with its row and column. None when a required column is missing."""
    file = models_dir / "workloads.csv"
    label = str(file)
    try:
        lines = _read_csv(file)
    except UnreadableCsv as e:
        out.error(label, e.row, e.column, e.what)
        return []
    except OSError as e:
        out.error(label, None, None, f"cannot be read: {e.strerror or e} (it lists which "
                  "model each workload runs: workload, model, precision, mode)")
        return []
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
    typed = _typed_rows(table, present, out)
    if missing:
        return []
    uses: list[ModelUse] = []
    first: dict[str, int] = {}
    for number, values, ok in typed:
        if not ok:
            continue
        if values["workload"] in first:
            out.error(label, number, "workload", f"'{values['workload']}' is listed twice "
                      f"(first at row {first[values['workload']]}): a workload runs one model")
            continue
        first[values["workload"]] = number
        uses.append(ModelUse(number, **values))
    return uses


def read_profiles(models_dir: Path, uses: list[ModelUse], out: _Collector) -> dict[str, dict]:
    """The profile of every model `uses` name, checked for what its uses' rules read; a
    missing or broken one is reported and left out."""
    label = str(models_dir / "workloads.csv")
    for u in uses:  # in the order of the rows
        if not (models_dir / f"{u.model}.toml").is_file():
            out.error(label, u.row, "model", f"no profile {models_dir / f'{u.model}.toml'} "
                      f"{_profiles_there(models_dir)}")
    profiles: dict[str, dict] = {}
    for model in dict.fromkeys(u.model for u in uses):
        users = [u for u in uses if u.model == model]
        path = models_dir / f"{model}.toml"
        if not path.is_file():
            continue
        profile = load_profile(path, out)
        if profile is None:
            continue
        errors = _errors(out)
        _check_profile(profile, path, users, label, out)
        if _errors(out) == errors:
            profiles[model] = profile
    return profiles


def _profiles_there(models_dir: Path) -> str:
    names = sorted(p.stem for p in models_dir.glob("*.toml"))
    return (f"(profiles there: {', '.join(names)})" if names
            else f"(there is no .toml profile in {models_dir})")


def _errors(out: _Collector) -> int:
    return sum(1 for i in out.issues if i.severity == "error")


def load_profile(path: Path, out: _Collector) -> dict | None:
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
                   out: _Collector) -> None:
    """Every key the rules of `users`' modes read, the measured figures and the precision
    options: each problem once, naming the workloads that need the key."""
    label = str(path)
    _check_key(profile, "", "parameters_b", POSITIVE, True,
               f"used by {_few([u.workload for u in users])}", label, out)
    for mode in dict.fromkeys(u.mode for u in users):
        why = f"needed for mode {mode}: {_few([u.workload for u in users if u.mode == mode])}"
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


def _section(profile: dict, section: str, why: str, label: str, out: _Collector):
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
               why: str, label: str, out: _Collector) -> None:
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


def _check_measured(profile: dict, label: str, out: _Collector) -> None:
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


def _entries(parent: dict, key: str, label: str, out: _Collector, name: str | None = None):
    """The (key, value) pairs of the table parent[key]; none, with an error, when it is not
    a table."""
    value = parent.get(key, {})
    if not isinstance(value, dict):
        out.error(label, None, None, f"{name or key} = {value!r}: must be tables "
                  "[measured.<mode>.<precision>.<GPU>]")
        return []
    return list(value.items())


def _check_measurement(entry: object, name: str, label: str, out: _Collector) -> None:
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
                   out: _Collector) -> None:
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
        if u.precision not in offered:
            out.warn(uses_label, u.row, "precision", f"{u.precision} is not among the "
                     f"[precision] options of {path.name} ({', '.join(offered)})")


def _few(names: list[str], most: int = 3) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more"
                                      if len(names) > most else "")


# --- the rules ---------------------------------------------------------------------------

def _replica_size(need_gb: float, gpu: Gpu) -> int | None:
    if not gpu.memory_gb:
        return None
    n = 1
    while n <= REPLICA_MOST:
        if n * gpu.memory_gb * 0.9 >= need_gb:
            return n
        n *= 2
    return None


def _blank(gpu: Gpu, *figures: str) -> tuple[str, ...]:
    """The gpus columns among `figures` that are blank (or 0) for `gpu`."""
    return tuple(f for f in figures if not getattr(gpu, f))


def _rounded(per_gpu: float, digits: int) -> float | str:
    """per_gpu as written; a figure that rounds to 0 is a reason (validate rejects 0)."""
    units = round(per_gpu, digits)
    return units if units > 0 else f"under {10 ** -digits:g} units per GPU (rounds to 0)"


def _training(profile: dict, precision: str, gpu: Gpu):
    t = profile["training"]
    least = t.get("min_memory_gb", 0)
    if (gpu.memory_gb or 0) < least:
        return f"less than the {least:g} GB per GPU of [training] min_memory_gb"
    flops, params = gpu.bf16_tflops * 1e12, profile["parameters_b"] * 1e9
    per_gpu = _rounded(flops * t["mfu"] / (6 * params), 3)
    if isinstance(per_gpu, str):
        return per_gpu
    return (per_gpu, int(t.get("gpus_per_replica", 8)),
            f"roofline: {gpu.bf16_tflops} TFLOPS × MFU {t['mfu']} "
            f"/ (6 × {profile['parameters_b']}B)")


def _inference(profile: dict, precision: str, gpu: Gpu):
    s = profile["serving"]
    params = profile["parameters_b"] * 1e9
    weights = params * BYTES[precision]
    kv_per_token = (2 * profile["layers"] * profile["kv_heads"] * profile["head_dim"]
                    * BYTES[str(s.get("kv_precision", precision)).lower()])
    kv = s["batch"] * s["context_tokens"] * kv_per_token
    need_gb = (weights * 1.1 + kv) / 1e9
    n = _replica_size(need_gb, gpu)
    if n is None:
        return (f"a replica needs {need_gb:,.0f} GB, more than {REPLICA_MOST} of these GPUs "
                "hold (90 % of their memory)")
    bandwidth = n * gpu.mem_bandwidth_tbps * 1e12 * s["bandwidth_efficiency"]
    memory_bound = s["batch"] * bandwidth / (weights + kv)
    flops = gpu.bf16_tflops * 1e12
    compute_bound = n * flops * s["compute_utilization"] / (2 * params)
    per_gpu = _rounded(min(memory_bound, compute_bound) / n, 3)
    if isinstance(per_gpu, str):
        return per_gpu
    return (per_gpu, n, "roofline: " + ("memory" if memory_bound <= compute_bound
                                       else "compute") + " bound")


def _compute(profile: dict, precision: str, gpu: Gpu):
    c = profile["compute"]
    least = c.get("min_memory_gb", 0)
    if (gpu.memory_gb or 0) < least:
        return f"less than the {least:g} GB per GPU of [compute] min_memory_gb"
    per_gpu = _rounded(gpu.bf16_tflops * 1e12 * c["utilization"] / c["flops_per_unit"], 4)
    if isinstance(per_gpu, str):
        return per_gpu
    return per_gpu, 1, f"roofline: compute, {c['flops_per_unit']:.3g} FLOPs/unit"


# mode → (its rule: (units per GPU, GPUs per replica, how) or why none, the gpus figures
# it reads)
RULES = {
    "inference": (_inference, ("memory_gb", "mem_bandwidth_tbps", "bf16_tflops")),
    "training": (_training, ("bf16_tflops",)),
    "compute": (_compute, ("bf16_tflops",)),
}


def _measured(m: dict):
    return (float(m["units_per_gpu"]), int(m.get("gpus_per_replica", 1)),
            f"measured: {m.get('source', 'profile')}")


def derive(profile: dict, use: ModelUse, gpus: list[Gpu]) -> Derivation:
    """Throughput rows of `use.workload` running `profile` at its precision in its mode,
    from a checked profile (read_profiles)."""
    measured = profile.get("measured", {}).get(use.mode, {}).get(use.precision, {})
    rule, figures = RULES[use.mode]
    found = Derivation(use, [], {}, {})
    for gpu in gpus:
        blank = _blank(gpu, *figures)
        if gpu.gpu in measured:
            got = _measured(measured[gpu.gpu])
        elif blank:
            found.blank[gpu.gpu] = blank
            got = f"{' and '.join(blank)} blank in gpus"
        else:
            got = rule(profile, use.precision, gpu)
        if isinstance(got, str):
            found.left_out[gpu.gpu] = got
        else:
            found.rows.append(ThroughputRow(use.workload, gpu.gpu, *got))
    return found


def derive_all(models_dir: Path, gpus: list[Gpu], out: _Collector) -> list[Derivation]:
    """Every workload of MODELS/workloads.csv derived on `gpus`; none while `out` holds an
    error (every problem of the file and the profiles it names is in it)."""
    uses = read_uses(models_dir, out)
    profiles = read_profiles(models_dir, uses, out)
    if _errors(out):
        return []
    return [derive(profiles[u.model], u, gpus) for u in uses]


# --- into a scenario ---------------------------------------------------------------------

def throughput_table(raw: RawScenario, models_dir: Path,
                     out: _Collector) -> tuple[list[ThroughputRow], list[ThroughputRow]]:
    """The throughput table for the scenario `raw` from the profiles in `models_dir`:
    (every row to write, those of them kept from its current table). Nothing while `out`
    holds an error: then nothing may be written."""
    gpu_rows = _scenario_gpus(raw, out)
    workloads = _scenario_workloads(raw, out)
    current = _readable(raw, "throughput", out)
    derived = derive_all(models_dir, list(gpu_rows.values()), out)
    if _errors(out):
        return [], []
    uses_label = str(models_dir / "workloads.csv")
    rows = _rows_for(derived, workloads, uses_label, out)
    _blank_figures(derived, workloads, gpu_rows, raw.tables["gpus"].label, out)
    covered = {d.use.workload for d in derived}
    kept = _kept(current, covered)
    kept_for = {r.workload for r in kept}
    for w in workloads:
        if w not in covered and w not in kept_for:
            out.warn(uses_label, None, None, f"workload '{w}' of the scenario has neither a "
                     "profile here nor a row in its throughput table: no GPU type can serve "
                     "it, its demand will go unmet")
    return rows + kept, kept


def _readable(raw: RawScenario, name: str, out: _Collector) -> RawTable | None:
    """The scenario's table `name`; its load errors (not UTF-8, a column twice) go to
    `out`: throughput reads it or, for its own table, rewrites it."""
    for issue in raw.issues:
        if issue.severity == "error" and issue.table.lower() == f"{name}.csv":
            out.issues.append(issue)
    return raw.tables.get(name)


def _scenario_gpus(raw: RawScenario, out: _Collector) -> dict[int, Gpu]:
    """The scenario's GPU types by their row in gpus: the rules read their figures."""
    table = _readable(raw, "gpus", out)
    if table is None:
        if "gpus" not in raw.unreadable:
            out.error("gpus", None, None, "required table is missing: the rules read the "
                      "GPU types' memory, bandwidth and TFLOPS from it")
        return {}
    gpus: dict[int, Gpu] = {}
    first: dict[str, int] = {}
    for number, values, ok in _typed_rows(table, TABLES_BY_NAME["gpus"], out):
        if ok and values["gpu"] in first:
            out.error(table.label, number, "gpu", f"duplicate gpu '{values['gpu']}' (first "
                      f"at row {first[values['gpu']]})")
        elif ok:
            first[values["gpu"]] = number
            gpus[number] = Gpu(**values)
    return gpus


def _scenario_workloads(raw: RawScenario, out: _Collector) -> list[str]:
    """The names of the scenario's workloads: rows for any other would make it invalid."""
    table = _readable(raw, "workloads", out)
    why = "the throughput table may only name the scenario's workloads"
    if table is None:
        if "workloads" not in raw.unreadable:
            out.error("workloads", None, None, f"required table is missing: {why}")
        return []
    if "workload" not in table.columns:
        out.error(table.label, 1, "workload", f"required column is missing: {why}")
        return []
    names = (str(cells.get("workload") or "").strip() for _, cells in table.rows)
    return list(dict.fromkeys(n for n in names if n))


def _rows_for(derived: list[Derivation], workloads: list[str], uses_label: str,
              out: _Collector) -> list[ThroughputRow]:
    """The derived rows of the scenario's workloads; what is left out is said."""
    rows: list[ThroughputRow] = []
    for d in derived:
        w = d.use.workload
        if w not in workloads:
            # Left out with a warning, not refused: one models folder serves several
            # scenarios (data/ and the cut-down copies analysts make of it), so a workload
            # the scenario lacks is expected; its rows would make the scenario invalid.
            alike = [n for n in workloads if n.casefold() == w.casefold()]
            hint = f" (did you mean '{alike[0]}'?)" if alike else ""
            out.warn(uses_label, d.use.row, "workload", f"'{w}' is not a workload of the "
                     f"scenario{hint}; its rows are left out")
            continue
        if not d.rows:
            out.warn(uses_label, d.use.row, None,
                     f"{w} ({d.use.model}, {d.use.precision}, {d.use.mode}): no GPU type can "
                     f"serve it, so it gets no throughput rows and its demand will go unmet: "
                     f"{_why_none(d.left_out)}")
        rows += d.rows
    return rows


def _why_none(left_out: dict[str, str]) -> str:
    """Why no GPU type got a row, GPU types with the same reason together."""
    if not left_out:
        return "the scenario has no GPU types"
    by_reason: dict[str, list[str]] = {}
    for gpu, why in left_out.items():
        by_reason.setdefault(why, []).append(gpu)
    return "; ".join(f"{', '.join(gpus)}: {why}" for why, gpus in by_reason.items())


def _blank_figures(derived: list[Derivation], workloads: list[str], gpu_rows: dict[int, Gpu],
                   label: str, out: _Collector) -> None:
    """A GPU type that gets no row for a workload because a figure the rule reads is blank
    is said once per figure, where the figure is missing."""
    row_of = {g.gpu: number for number, g in gpu_rows.items()}
    needed: dict[tuple[str, str], list[str]] = {}
    for d in derived:
        if d.use.workload in workloads:
            for gpu, figures in d.blank.items():
                for figure in figures:
                    needed.setdefault((gpu, figure), []).append(d.use.workload)
    for (gpu, figure), users in needed.items():
        out.warn(label, row_of[gpu], figure, f"blank or 0: no throughput is derived on {gpu} "
                 f"for {_few(users)}; fill it in, or give measured figures in the profiles")


def _kept(current: RawTable | None, covered: set[str]) -> list[ThroughputRow]:
    """The rows of the current table whose workload no profile covers, as written: they
    were entered by hand (a model without a profile, a benchmark), and dropping them would
    leave the workload unservable."""
    if current is None:
        return []
    kept = []
    for number, cells in current.rows:
        workload = str(cells.get("workload") or "").strip()
        if workload and workload not in covered:
            kept.append(ThroughputRow(
                workload, *("" if cells.get(c) is None else str(cells[c]).strip()
                            for c in ("gpu", "units_per_gpu", "gpus_per_replica")),
                how=f"kept: {current.label} row {number} (no profile)"))
    return kept


def write_throughput(rows: list[ThroughputRow], path: Path) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "gpu", "units_per_gpu", "gpus_per_replica"])
        for r in rows:
            w.writerow([r.workload, r.gpu, r.units_per_gpu, r.gpus_per_replica])


def memory_footprint_gb(profile: dict, precision: str) -> float:
    return math.ceil(profile["parameters_b"] * BYTES[precision] * 10) / 10
