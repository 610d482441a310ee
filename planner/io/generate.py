"""`planner generate`: a synthetic but realistic market in the scenario format.

Sites sit in clusters on five continents, with latencies from great-circle distance
(light in fibre ≈ 100 km/ms one way, paths 1.5× the straight line, 2 ms per hop) over links
to the nearest sites and between continental hubs. Regions belong to hyperscalers
(on-demand, spot, 1- and 3-year reserved, egress fees) or specialised providers
(bare metal monthly with 48 h provisioning, an hourly marketplace with little stock,
build-to-order with long lead times and minimum orders). Workloads are inference pools
(users at several sites of a continent, SLOs, some under EU/UK residency), single-region
training runs and burst jobs, with demand growing month by month. Prices follow the
published figures of the default scenario (market-facts.md), varied ±10 % by region.
Same seed, same files.
"""

from __future__ import annotations

import csv
import math
import random
from pathlib import Path

from planner.io.schema import HORIZON_MOST

# continent: (centre lat, lon, jurisdiction/country pairs, share of sites)
CONTINENTS = {
    "na": (39.0, -95.0, [("US", "US"), ("US", "US"), ("US", "US"), ("CA", "CA")], 0.30),
    "eu": (50.0, 9.0, [("DE", "EU"), ("FR", "EU"), ("NL", "EU"), ("SE", "EU"), ("PL", "EU")],
           0.25),
    "uk": (52.5, -1.5, [("GB", "UK")], 0.08),
    "ap": (15.0, 110.0, [("SG", "SG"), ("JP", "JP"), ("AU", "AU"), ("IN", "IN"), ("KR", "KR")],
           0.27),
    "sa": (-15.0, -55.0, [("BR", "BR"), ("MX", "MX")], 0.10),
}
# GPU: memory GB, TB/s, BF16 TFLOPS, W, reference on-demand $/h (market-facts B1)
GPUS = {
    "H100": (80, 3.35, 989, 700, 6.88), "H200": (141, 4.8, 989, 700, 7.91),
    "B200": (180, 8.0, 2250, 1000, 14.24), "A100-80GB": (80, 2.039, 312, 400, 3.43),
    "L40S": (48, 0.864, 362, 350, 2.24), "MI300X": (192, 5.3, 1307, 750, 6.0),
    "A10G": (24, 0.6, 125, 150, 1.006), "L4": (24, 0.3, 121, 72, 0.70),
}
# provider kind: (price factor on the reference, egress $/GB, terms)
PROVIDERS = {
    "hyper-a": ("hyperscaler", 1.00, 0.09), "hyper-b": ("hyperscaler", 1.15, 0.087),
    "hyper-c": ("hyperscaler", 1.10, 0.12), "metal": ("bare_metal", 0.45, 0.0),
    "market": ("marketplace", 0.40, 0.0), "bto": ("build_to_order", 0.35, 0.0),
}


def _distance_km(a, b) -> float:
    la1, lo1, la2, lo2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = (math.sin((la2 - la1) / 2) ** 2
         + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2)
    return 2 * 6371 * math.asin(math.sqrt(h))


def _rtt(a, b) -> float:
    return round(2 * _distance_km(a, b) * 1.5 / 200 + 2, 1)


def generate(out: Path, workloads: int, regions: int, months: int, seed: int = 0) -> dict:
    """Write the scenario's tables into `out`; the count of rows of each. Sizes a scenario
    cannot have (planner validate would refuse what is written) raise ValueError before
    anything is written. (One random stream, drawn from in a fixed order: the same seed
    gives the same market.)"""
    _check_sizes(workloads, regions, months)
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    sites, by_continent = _sites(rng, max(8, int(regions * 0.6)))
    region_rows, offer_rows = _regions(rng, regions, sites)
    workload_rows, throughput_rows, demand_rows = _workloads(rng, workloads, months, sites,
                                                             by_continent)
    tables = {
        "settings": [{"key": k, "value": v} for k, v in (
            ("start_month", "2027-01"), ("horizon_months", str(months)),
            # 500 s for the whole command (SPEC §4 v2: loading to workbook written): a
            # solve of any generated size ends within 10 minutes
            ("unmet_penalty_usd_per_unit_hour", "50"), ("time_limit_s", "500"),
            ("mip_gap", "0.005"))],
        "gpus": [{"gpu": g, "memory_gb": v[0], "mem_bandwidth_tbps": v[1], "bf16_tflops": v[2],
                  "tdp_watts": v[3], "source": "market-facts.md B2"} for g, v in GPUS.items()],
        "sites": sites,
        "links": [{"site_a": a, "site_b": b, "rtt_ms": ms}
                  for (a, b), ms in sorted(_links(sites, by_continent).items())],
        "regions": region_rows, "offers": offer_rows, "workloads": workload_rows,
        "throughput": throughput_rows, "demand": demand_rows,
        "existing": _existing(region_rows, offer_rows, months),
    }
    for name, rows in tables.items():
        columns: list[str] = []
        for row in rows:
            columns += [c for c in row if c not in columns]
        if not columns:
            columns = ["key", "value"]
        with (out / f"{name}.csv").open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            for row in rows:
                w.writerow(row)
    return {k: len(v) for k, v in tables.items()}


def _sites(rng: random.Random, count: int) -> tuple[list[dict], dict[str, list[dict]]]:
    """`count` demand sites, one on each continent first, then by the continents'
    weights; and the sites of each continent."""
    sites, by_continent = [], {c: [] for c in CONTINENTS}
    names = list(CONTINENTS)
    for i in range(count):
        c = names[i % len(names)] if i < len(names) else rng.choices(
            names, weights=[v[3] for v in CONTINENTS.values()])[0]
        lat0, lon0, places, _ = CONTINENTS[c]
        country, jurisdiction = places[len(by_continent[c]) % len(places)]
        site = {"site": f"{c}-{len(by_continent[c]) + 1}", "country": country,
                "jurisdiction": jurisdiction, "lat": round(lat0 + rng.uniform(-9, 9), 2),
                "lon": round(lon0 + rng.uniform(-14, 14), 2)}
        sites.append(site)
        by_continent[c].append(site)
    return sites, by_continent


def _links(sites: list[dict], by_continent: dict[str, list[dict]]) -> dict[tuple, float]:
    """Round-trip times: each site to its 4 nearest, and between the continents' first
    sites (hubs)."""
    pos = {s["site"]: (s["lat"], s["lon"]) for s in sites}
    links = {}
    for s in sites:
        near = sorted((x for x in sites if x is not s),
                      key=lambda x: _distance_km(pos[s["site"]], pos[x["site"]]))[:4]
        for x in near:
            a, b = sorted((s["site"], x["site"]))
            links[(a, b)] = _rtt(pos[a], pos[b])
    hubs = [v[0]["site"] for v in by_continent.values() if v]
    for i, a in enumerate(hubs):
        for b in hubs[i + 1:]:
            x, y = sorted((a, b))
            links[(x, y)] = _rtt(pos[x], pos[y])
    return links


def _regions(rng: random.Random, regions: int, sites: list[dict]) -> tuple[list, list]:
    """The regions (the providers in turn, at the sites in turn) and their offers: 4–6
    GPU types each, on the terms their kind of provider sells."""
    region_rows, offer_rows = [], []
    providers = list(PROVIDERS)
    for i in range(regions):
        provider = providers[i % len(providers)] if i >= 3 else providers[i]
        kind, factor, egress = PROVIDERS[provider]
        site = sites[i % len(sites)]
        region = f"{provider}-{site['site']}-{i}"
        region_rows.append({"region": region, "provider": provider, "site": site["site"],
                            "egress_usd_per_gb": egress})
        premium = rng.uniform(0.95, 1.25)
        gpus = rng.sample(list(GPUS), k=rng.randint(4, 6))
        for g in gpus:
            base = GPUS[g][4] * factor * premium
            src = (f"synthetic: {g} reference ${GPUS[g][4]}/h × {factor} ({kind}) × "
                   f"{premium:.2f}")

            def offer(term, price, region=region, g=g, src=src, **kw):
                offer_rows.append({"region": region, "gpu": g, "term": term,
                                   "usd_per_gpu_hour": round(price, 4), **kw, "source": src})

            if kind == "hyperscaler":
                offer("on_demand", base)
                offer("spot", base * rng.uniform(0.3, 0.45), max_gpus=rng.choice([32, 64, 128]),
                      interruption_rate=rng.choice([0.05, 0.1, 0.175]))
                offer("reserved", base * 0.62, commit_months=12)
                offer("reserved", base * 0.45, commit_months=36)
            elif kind == "bare_metal":
                offer("on_demand", base * 1.15, max_gpus=128)
                offer("monthly", base, commit_months=1, lead_time_days=2, max_gpus=512)
            elif kind == "marketplace":
                offer("on_demand", base, max_gpus=rng.choice([16, 32, 64]))
            else:
                offer("build_to_order", base, commit_months=rng.choice([24, 36]),
                      lead_time_days=rng.choice([120, 180, 240]), min_gpus=64, max_gpus=2048)
    return region_rows, offer_rows


def _workloads(rng: random.Random, workloads: int, months: int, sites: list[dict],
               by_continent: dict[str, list[dict]]) -> tuple[list, list, list]:
    """The workloads (70 % inference in pools of 1–5 serving one model, 10 % training,
    20 % bursts), their throughput on each GPU type that holds their model, and their
    demand: growing month by month, inference split over 1–3 sites of one continent."""
    names = list(CONTINENTS)
    workload_rows, throughput_rows, demand_rows = [], [], []
    pool_size, pool, pool_model = 0, None, None
    for i in range(workloads):
        r = rng.random()
        kind = "inference" if r < 0.7 else ("training" if r < 0.8 else "burst")
        name = f"{kind[:3]}-{i:04d}"
        row = {"workload": name, "kind": kind}
        continent = rng.choices(names, weights=[v[3] for v in CONTINENTS.values()])[0]
        if kind == "inference":
            if pool_size == 0:
                pool, pool_size = f"pool-{i:04d}", rng.randint(1, 5)
                pool_model = rng.choice(["7b", "70b"])
            pool_size -= 1
            row.update(latency_slo_ms=rng.choice([30, 50, 80]), pool=pool,
                       peak_to_average=1.6, peak_hours_share=0.3,
                       egress_gb_per_unit_hour=2e-5)
            if continent == "eu" and rng.random() < 0.6:
                row["residency"] = "EU"
            if continent == "uk" and rng.random() < 0.6:
                row["residency"] = "UK"
            model = pool_model
        elif kind == "training":
            # only places the map has: a residency naming none would only be warned about
            present = {x["country"] for x in sites} | {x["jurisdiction"] for x in sites}
            row["residency"] = ";".join(
                place for place in rng.choice(["", "US;CA", "EU"]).split(";")
                if place in present)
            model = "train"
        else:
            share = rng.choice([0.1, 0.2, 0.25])
            row.update(peak_hours_share=share, peak_to_average=round(1 / share, 3),
                       max_spot_share=0.5)
            model = "7b"
        workload_rows.append(row)
        throughput_rows += _throughput(name, model)
        demand_rows += _demand(rng, name, kind, model, continent, months, sites,
                               by_continent)
    return workload_rows, throughput_rows, demand_rows


def _throughput(name: str, model: str) -> list[dict]:
    """Units a GPU serves of `model` on each GPU type with the memory for it."""
    rows = []
    for g, (mem, bw, tflops, _, _) in GPUS.items():
        if model == "7b":
            units, gpr = bw * 1e12 * 0.6 * 32 / 16e9 / 10, 1  # output tokens/s
        elif model == "70b":
            if mem < 40:
                continue
            gpr = 1 if mem >= 140 else (2 if mem >= 80 else 4)
            units = bw * 1e12 * 0.6 * 32 / 92e9
        else:
            if mem < 80:
                continue
            units, gpr = tflops * 1e12 * 0.4 / (6 * 70e9), 8
        rows.append({"workload": name, "gpu": g, "units_per_gpu": round(units, 3),
                     "gpus_per_replica": gpr})
    return rows


def _demand(rng: random.Random, name: str, kind: str, model: str, continent: str,
            months: int, sites: list[dict], by_continent: dict[str, list[dict]]) -> list[dict]:
    """A workload's demand rows: 4–64 H100s' worth, growing 0–4 % a month; training
    for 3–9 months from within the horizon's first third."""
    rows = []
    gpus_needed = rng.choice([4, 8, 16, 32, 64])
    per_gpu = {"7b": 3.35e12 * 0.6 * 32 / 16e9 / 10, "70b": 3.35e12 * 0.6 * 32 / 92e9,
               "train": 989e12 * 0.4 / (6 * 70e9)}[model]
    level = gpus_needed * per_gpu
    growth = rng.uniform(0.0, 0.04)
    users = rng.sample(by_continent[continent] or sites, k=min(len(
        by_continent[continent] or sites), rng.randint(1, 3)))
    start = rng.randint(0, max(0, months // 3)) if kind == "training" else 0
    length = rng.randint(3, 9) if kind == "training" else months
    for m in range(start, min(months, start + length)):
        amount = level * (1 + growth) ** m
        if kind == "inference":
            for u in users:
                rows.append({"workload": name, "period": _month(m),
                             "amount": round(amount / len(users), 2), "site": u["site"]})
        else:
            rows.append({"workload": name, "period": _month(m), "amount": round(amount, 2)})
    return rows


def _existing(region_rows: list[dict], offer_rows: list[dict], months: int) -> list[dict]:
    """16 GPUs of an existing contract in each of the first two hyperscaler regions."""
    existing = []
    hyper = [r for r in region_rows if r["provider"].startswith("hyper")]
    for r in hyper[:2]:
        offered = [o["gpu"] for o in offer_rows if o["region"] == r["region"]]
        existing.append({"region": r["region"], "gpu": offered[0], "gpus": 16,
                         "start_month": "2026-07", "end_month": _month(min(months, 12) - 1),
                         "usd_per_gpu_hour": round(GPUS[offered[0]][4] * 0.62, 4)})
    return existing


def _check_sizes(workloads: int, regions: int, months: int) -> None:
    """The sizes `planner generate` accepts: at least one workload, three regions (one per
    hyperscaler) and one month, at most HORIZON_MOST months (settings horizon_months)."""
    if workloads < 1 or regions < 3 or not 1 <= months <= HORIZON_MOST:
        raise ValueError(f"workloads ≥ 1, regions ≥ 3 and 1 ≤ months ≤ {HORIZON_MOST}, not "
                         f"{workloads}, {regions} and {months}")


def _month(m: int) -> str:
    return f"{2027 + m // 12}-{m % 12 + 1:02d}"
