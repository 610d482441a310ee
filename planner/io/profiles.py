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
(workload, model, precision, mode).
"""

from __future__ import annotations

import csv
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from planner.io.scenario import Gpu

BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}


@dataclass(frozen=True)
class ThroughputRow:
    workload: str
    gpu: str
    units_per_gpu: float
    gpus_per_replica: int
    how: str  # the rule or measurement it comes from


def load_profile(path: Path) -> dict:
    with path.open("rb") as f:
        profile = tomllib.load(f)
    profile.setdefault("name", path.stem)
    return profile


def _replica_size(need_gb: float, gpu: Gpu) -> int | None:
    if not gpu.memory_gb:
        return None
    n = 1
    while n <= 8:
        if n * gpu.memory_gb * 0.9 >= need_gb:
            return n
        n *= 2
    return None


def derive(profile: dict, workload: str, precision: str, mode: str,
           gpus: list[Gpu]) -> list[ThroughputRow]:
    """Throughput rows of `workload` running `profile` at `precision` in `mode`."""
    params = profile["parameters_b"] * 1e9
    measured = profile.get("measured", {}).get(mode, {}).get(precision, {})
    rows = []
    for gpu in gpus:
        if gpu.gpu in measured:
            m = measured[gpu.gpu]
            rows.append(ThroughputRow(workload, gpu.gpu, float(m["units_per_gpu"]),
                                      int(m.get("gpus_per_replica", 1)),
                                      f"measured: {m.get('source', 'profile')}"))
            continue
        if not gpu.bf16_tflops or not gpu.mem_bandwidth_tbps:
            continue
        flops = gpu.bf16_tflops * 1e12
        if mode == "training":
            t = profile["training"]
            if (gpu.memory_gb or 0) < t.get("min_memory_gb", 0):
                continue
            per_gpu = flops * t["mfu"] / (6 * params)
            rows.append(ThroughputRow(workload, gpu.gpu, round(per_gpu, 3),
                                      int(t.get("gpus_per_replica", 8)),
                                      f"roofline: {gpu.bf16_tflops} TFLOPS × MFU {t['mfu']} "
                                      f"/ (6 × {profile['parameters_b']}B)"))
        elif mode == "inference":
            s = profile["serving"]
            b = BYTES[precision]
            weights = params * b
            kv_per_token = (2 * profile["layers"] * profile["kv_heads"] * profile["head_dim"]
                            * BYTES[s.get("kv_precision", precision)])
            kv = s["batch"] * s["context_tokens"] * kv_per_token
            n = _replica_size((weights * 1.1 + kv) / 1e9, gpu)
            if n is None:
                continue
            bandwidth = n * gpu.mem_bandwidth_tbps * 1e12 * s["bandwidth_efficiency"]
            memory_bound = s["batch"] * bandwidth / (weights + kv)
            compute_bound = n * flops * s["compute_utilization"] / (2 * params)
            per_gpu = min(memory_bound, compute_bound) / n
            rows.append(ThroughputRow(workload, gpu.gpu, round(per_gpu, 3), n,
                                      "roofline: " + ("memory" if memory_bound <= compute_bound
                                                      else "compute") + " bound"))
        elif mode == "compute":
            c = profile["compute"]
            if (gpu.memory_gb or 0) < c.get("min_memory_gb", 0):
                continue
            per_gpu = flops * c["utilization"] / c["flops_per_unit"]
            rows.append(ThroughputRow(workload, gpu.gpu, round(per_gpu, 4), 1,
                                      f"roofline: compute, {c['flops_per_unit']:.3g} FLOPs/unit"))
        else:
            raise ValueError(f"unknown mode {mode!r}: inference, training or compute")
    return rows


def derive_all(models_dir: Path, gpus: list[Gpu]) -> list[ThroughputRow]:
    """Rows for every workload listed in models_dir/workloads.csv."""
    rows: list[ThroughputRow] = []
    with (models_dir / "workloads.csv").open(newline="") as f:
        for spec in csv.DictReader(f):
            profile = load_profile(models_dir / f"{spec['model']}.toml")
            rows += derive(profile, spec["workload"], spec["precision"], spec["mode"], gpus)
    return rows


def write_throughput(rows: list[ThroughputRow], path: Path) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "gpu", "units_per_gpu", "gpus_per_replica"])
        for r in rows:
            w.writerow([r.workload, r.gpu, r.units_per_gpu, r.gpus_per_replica])


def memory_footprint_gb(profile: dict, precision: str) -> float:
    return math.ceil(profile["parameters_b"] * BYTES[precision] * 10) / 10
