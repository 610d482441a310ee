"""AI model profiles → `throughput` rows (how much of a workload one GPU type delivers).

A profile (models/<name>.toml) gives a model's size and shape; a GPU's memory, bandwidth
and BF16 TFLOPS come from the scenario's `gpus` table. Measured figures in the profile win;
otherwise the roofline rules below apply, each stated so a reviewer can redo the arithmetic:

* memory: weights = parameters × bytes per parameter; a serving replica holds 1.1 × the
  weights (the runtime's overhead) and the KV cache of `batch` sequences of
  `context_tokens`; a replica is the smallest power of two GPUs (≤ 8) whose memory × 0.9
  holds it — none: the GPU type cannot serve the model.
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
and nothing is derived while one is an error (the checks: planner.io.profile_check). What
the profiles cannot give a scenario's workload is said as a warning, and the table written
always passes `planner validate`.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from planner.files import write_atomically
from planner.io.issues import Collector
from planner.io.load import RawScenario, RawTable
from planner.io.parse import typed_rows
from planner.io.profile_check import (
    BYTES,
    ModelUse,
    _errors,
    _few,
    read_profiles,
    read_uses,
)
from planner.io.scenario import Gpu
from planner.io.schema import TABLES_BY_NAME
from planner.io.validate import PoolReplicaSizes, errors_in

REPLICA_MOST = 8  # GPUs in one serving replica: one node


@dataclass(frozen=True)
class ThroughputRow:
    workload: str
    gpu: str
    units_per_gpu: float | str  # a kept row (not derived) as the user wrote it
    gpus_per_replica: int | str
    how: str  # the rule or measurement it comes from


@dataclass
class Derivation:
    """What a workload's profile gives: its rows, why every other GPU type has none, and
    which gpus figures were blank where a rule needed them."""
    use: ModelUse
    rows: list[ThroughputRow]
    left_out: dict[str, str]  # GPU type → why
    blank: dict[str, tuple[str, ...]]  # GPU type → the gpus columns that were blank


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
    if profile.get(use.mode, {}).get("min_memory_gb", 0) > 0:  # training, compute
        figures = ("memory_gb", *figures)  # (a blank one had read as 0 GB: too little)
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


def derive_all(models_dir: Path, gpus: list[Gpu], out: Collector) -> list[Derivation]:
    """Every workload of MODELS/workloads.csv derived on `gpus`; none while `out` holds an
    error (every problem of the file and the profiles it names is in it)."""
    uses, left_out = read_uses(models_dir, out)
    profiles = read_profiles(models_dir, uses, out, left_out)
    if _errors(out):
        return []
    _measured_elsewhere(models_dir, profiles, uses, {g.gpu for g in gpus}, out)
    return [derive(profiles[u.model], u, gpus) for u in uses]


def _measured_elsewhere(models_dir: Path, profiles: dict[str, dict], uses: list[ModelUse],
                        names: set[str], out: Collector) -> None:
    """Measured figures of a workload's mode and precision on a GPU type the scenario's
    gpus do not name are warned about: they are not used (`[measured.training.bf16.h100]`
    beside a GPU type H100 had been dropped without a word, its roofline figure standing
    in). One models folder serves several scenarios, so a GPU type this one lacks is no
    error."""
    said = set()
    for u in uses:
        measured = profiles[u.model].get("measured", {}).get(u.mode, {}).get(u.precision, {})
        for gpu in measured:
            if gpu in names or (u.model, u.mode, u.precision, gpu) in said:
                continue
            said.add((u.model, u.mode, u.precision, gpu))
            alike = sorted(n for n in names if n.casefold() == gpu.casefold())
            out.warn(str(models_dir / f"{u.model}.toml"), None, None,
                     f"[measured.{u.mode}.{u.precision}.{gpu}]: no GPU type '{gpu}' in the "
                     f"scenario's gpus; not used"
                     + (f" (did you mean {alike[0]}?)" if alike else ""))


# --- into a scenario ---------------------------------------------------------------------

def throughput_table(raw: RawScenario, models_dir: Path, out: Collector
                     ) -> tuple[list[ThroughputRow], list[ThroughputRow], dict[str, str]]:
    """The throughput table for the scenario `raw` from the profiles in `models_dir`:
    (every row to write, those of them kept from its current table, and for each workload
    with rows why the other GPU types have none). Nothing while `out` holds an error:
    then nothing may be written."""
    # the scenario's tables it reads, checked as `planner validate` checks them (an
    # outside audit: a workloads.csv with an unknown kind and a workload named twice had
    # been read without a word); its other tables are not its business: the throughput
    # table may come before the demand
    out.issues.extend(errors_in(raw, ("gpus", "workloads")))
    gpu_rows = _scenario_gpus(raw)
    workloads = _scenario_workloads(raw)
    current = _readable(raw, "throughput", out)
    derived = derive_all(models_dir, list(gpu_rows.values()), out)
    if _errors(out):
        return [], [], {}
    uses_label = str(models_dir / "workloads.csv")
    rows = _rows_for(derived, workloads, uses_label, out)
    _blank_figures(derived, workloads, gpu_rows, raw.tables["gpus"].label, out)
    covered = {d.use.workload for d in derived}
    kept = _kept(current, covered)
    _one_replica_size_a_pool(rows + kept, _scenario_pools(raw), derived, uses_label, out)
    if _errors(out):
        return [], [], {}
    kept_for = {r.workload for r in kept}
    for w in workloads:
        if w not in covered and w not in kept_for:
            out.warn(uses_label, None, None, f"workload '{w}' of the scenario has neither a "
                     "profile here nor a row in its throughput table: no GPU type can serve "
                     "it, its demand will go unmet")
    # (a workload with no row at all is warned about: `_rows_for`)
    elsewhere = {d.use.workload: _why_none(d.left_out) for d in derived
                 if d.use.workload in workloads and d.rows and d.left_out}
    return rows + kept, kept, elsewhere


def _readable(raw: RawScenario, name: str, out: Collector) -> RawTable | None:
    """The scenario's table `name`; its load errors (not UTF-8, a column twice) go to
    `out`: throughput reads it or, for its own table, rewrites it."""
    for issue in raw.issues:
        if issue.severity == "error" and issue.table.lower() == f"{name}.csv":
            out.issues.append(issue)
    return raw.tables.get(name)


def _scenario_gpus(raw: RawScenario) -> dict[int, Gpu]:
    """The scenario's GPU types by their row in gpus (the rules read their figures); its
    problems are `errors_in`'s."""
    table = raw.tables.get("gpus")
    if table is None:
        return {}
    gpus: dict[int, Gpu] = {}
    seen: set[str] = set()
    for number, values, ok in typed_rows(table, TABLES_BY_NAME["gpus"], Collector([])):
        if ok and values["gpu"] not in seen:
            seen.add(values["gpu"])
            gpus[number] = Gpu(**values)
    return gpus


def _scenario_workloads(raw: RawScenario) -> list[str]:
    """The names of the scenario's workloads (rows for any other would make it invalid);
    its problems are `errors_in`'s."""
    table = raw.tables.get("workloads")
    if table is None or "workload" not in table.columns:
        return []
    names = (str(cells.get("workload") or "").strip() for _, cells in table.rows)
    return list(dict.fromkeys(n for n in names if n))


def _scenario_pools(raw: RawScenario) -> dict[str, str]:
    """The pool of each of the scenario's workloads that has one (the workloads table
    is readable: `errors_in` said so where not)."""
    table = raw.tables.get("workloads")
    if table is None or "pool" not in table.columns:
        return {}
    pools = {}
    for _, cells in table.rows:
        name, pool = (str(cells.get(c) or "").strip() for c in ("workload", "pool"))
        if name and pool:
            pools.setdefault(name, pool)
    return pools


def _one_replica_size_a_pool(rows: list[ThroughputRow], pools: dict[str, str],
                             derived: list[Derivation], uses_label: str,
                             out: Collector) -> None:
    """Workloads of one pool share its replicas, so on each GPU type their rows have one
    gpus_per_replica (SPEC §2): rows that differ are an error, not a table that `planner
    validate` then refuses (a pool's assistants at fp8 and one at bf16 had been written:
    2 and 4 H100s a replica)."""
    row_of = {d.use.workload: d.use.row for d in derived}
    sizes = PoolReplicaSizes()
    differ: dict[tuple[str, str, str], list[str]] = {}  # (pool, w, first w) → GPU types
    for r in rows:
        pool = pools.get(r.workload)
        try:
            size = int(float(r.gpus_per_replica or 1))
        except ValueError:  # a kept row as written: validate says what is wrong with it
            continue
        first = None if pool is None else sizes.clash(pool, r.gpu, size, r.workload)
        if first is not None:
            size0, w0 = first
            differ.setdefault((pool, r.workload, w0), []).append(
                f"{r.gpu} ({size} against {size0})")
    for (pool, w, w0), where in differ.items():
        out.error(uses_label, row_of.get(w), "precision",
                  f"pool '{pool}': {w} gets replicas of other sizes than {w0} on "
                  f"{_few(where, 4)}; workloads of one pool share replicas of one size: "
                  "give them one precision, or pools of their own")


def _rows_for(derived: list[Derivation], workloads: list[str], uses_label: str,
              out: Collector) -> list[ThroughputRow]:
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
                   label: str, out: Collector) -> None:
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
    """The throughput table, atomically: a failure leaves the earlier one whole."""
    def write(tmp: str) -> None:
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["workload", "gpu", "units_per_gpu", "gpus_per_replica"])
            for r in rows:
                w.writerow([r.workload, r.gpu, r.units_per_gpu, r.gpus_per_replica])

    write_atomically(path, write)


def memory_footprint_gb(profile: dict, precision: str) -> float:
    return math.ceil(profile["parameters_b"] * BYTES[precision] * 10) / 10
