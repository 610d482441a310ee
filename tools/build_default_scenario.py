"""Write the default scenario in data/ from published figures (../shared/market-facts.md).

Run from the repository root:  python tools/build_default_scenario.py
then derive throughput:         planner throughput data models

Lambda's and Nebius's on-demand (and Nebius's spot) prices come from the SkyPilot catalogs
in ../shared/external through `planner market import` (data/market/ holds its tables);
everything no catalog carries is entered here with its source.

Every priced row carries its source; where a figure is derived (reserved rates from
published discount ranges, regional premiums, median spot prices) the source says how.
The network map is the Azure P95 round-trip matrix (2026-07-30), symmetrised by taking
the larger direction; other providers' regions sit at the nearest Azure metro.
"""

from __future__ import annotations

import csv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
AZURE = ROOT.parent / "shared" / "external" / "azure-latency" / "rtt_p95_ms_2026-07-30.csv"

# -- the network map -----------------------------------------------------------------------
# site, country, jurisdiction, lat, lon, Azure region name
SITES = [
    ("virginia", "US", "US", 37.37, -79.82, "East US"),
    ("iowa", "US", "US", 41.59, -93.62, "Central US"),
    ("texas", "US", "US", 29.42, -98.49, "South Central US"),
    ("washington", "US", "US", 47.23, -119.85, "West US 2"),
    ("california", "US", "US", 37.78, -122.42, "West US"),
    ("toronto", "CA", "CA", 43.65, -79.38, "Canada Central"),
    ("queretaro", "MX", "MX", 20.59, -100.39, "Mexico Central"),
    ("sao-paulo", "BR", "BR", -23.55, -46.63, "Brazil South"),
    ("london", "GB", "UK", 51.51, -0.13, "UK South"),
    ("amsterdam", "NL", "EU", 52.37, 4.90, "West Europe"),
    ("dublin", "IE", "EU", 53.35, -6.26, "North Europe"),
    ("frankfurt", "DE", "EU", 50.11, 8.68, "Germany West Central"),
    ("paris", "FR", "EU", 48.86, 2.35, "France Central"),
    ("gavle", "SE", "EU", 60.67, 17.14, "Sweden Central"),
    ("warsaw", "PL", "EU", 52.23, 21.01, "Poland Central"),
    ("oslo", "NO", "NO", 59.91, 10.75, "Norway East"),
    ("zurich", "CH", "CH", 47.37, 8.54, "Switzerland North"),
    ("dubai", "AE", "AE", 25.20, 55.27, "UAE North"),
    ("johannesburg", "ZA", "ZA", -26.20, 28.05, "South Africa North"),
    ("pune", "IN", "IN", 18.52, 73.86, "Central India"),
    ("singapore", "SG", "SG", 1.28, 103.85, "Southeast Asia"),
    ("tokyo", "JP", "JP", 35.68, 139.69, "Japan East"),
    ("seoul", "KR", "KR", 37.57, 126.98, "Korea Central"),
    ("sydney", "AU", "AU", -33.87, 151.21, "Australia East"),
]

# -- GPU types (market-facts B2) -----------------------------------------------------------
GPUS = [
    ("H100", 80, 3.35, 989, 700, "NVIDIA H100 spec table (SXM)"),
    # the PCIe card, a GPU type of its own (planner market import names Lambda's
    # gpu_1x_h100_pcie so; its figures are not in the catalogs)
    ("H100-PCIe", 80, 2.0, 756, 350, "NVIDIA H100 PCIe spec table: 80 GB HBM2e, 2.0 TB/s, "
     "BF16 1,513 TFLOPS with sparsity (756 dense), 300-350 W"),
    ("H200", 141, 4.8, 989, 700, "aiwiki.ai/wiki/nvidia_h200"),
    ("B200", 180, 8.0, 2250, 1000, "glennklockwood.com/garden/processors/B200 (180 GB usable)"),
    ("A100-80GB", 80, 2.039, 312, 400, "NVIDIA A100 datasheet via glennklockwood.com"),
    ("L40S", 48, 0.864, 362, 350, "NVIDIA L40S datasheet"),
    ("MI300X", 192, 5.3, 1307, 750, "aiwiki.ai/wiki/amd_instinct_mi300x"),
    ("A10G", 24, 0.6, 125, 150, "A10 datasheet, approximate: A10G is an AWS variant without "
     "a public datasheet"),
    ("L4", 24, 0.3, 121, 72, "NVIDIA L4 via grokipedia L4 vs L40S"),
]

# -- providers and regions -----------------------------------------------------------------
EGRESS = {  # USD/GB out of a region (market-facts: $0.08-0.12 at hyperscalers)
    "aws": 0.09, "azure": 0.087, "gcp": 0.12,
}
REGIONS = [  # region, provider, site (nearest Azure metro where the provider's differs)
    ("aws-us-east-1", "aws", "virginia"), ("aws-us-west-2", "aws", "washington"),
    ("aws-ca-central-1", "aws", "toronto"), ("aws-sa-east-1", "aws", "sao-paulo"),
    ("aws-eu-central-1", "aws", "frankfurt"), ("aws-eu-west-2", "aws", "london"),
    ("aws-eu-north-1", "aws", "gavle"), ("aws-ap-northeast-1", "aws", "tokyo"),
    ("aws-ap-south-1", "aws", "pune"), ("aws-ap-southeast-2", "aws", "sydney"),
    ("azure-eastus", "azure", "virginia"), ("azure-southcentralus", "azure", "texas"),
    ("azure-westeurope", "azure", "amsterdam"), ("azure-uksouth", "azure", "london"),
    ("azure-swedencentral", "azure", "gavle"), ("azure-japaneast", "azure", "tokyo"),
    ("gcp-us-central1", "gcp", "iowa"), ("gcp-europe-west4", "gcp", "amsterdam"),
    ("gcp-asia-southeast1", "gcp", "singapore"),
    ("lambda-us-east-1", "lambda", "virginia"), ("lambda-us-west-1", "lambda", "california"),
    ("lambda-europe-central-1", "lambda", "frankfurt"),
    ("lambda-asia-northeast-1", "lambda", "tokyo"),
    ("coreweave-us-east", "coreweave", "virginia"), ("coreweave-us-central", "coreweave", "texas"),
    ("coreweave-gb-london", "coreweave", "london"),
    ("nebius-eu-north1", "nebius", "gavle"), ("nebius-eu-west1", "nebius", "paris"),
    ("nebius-us-central1", "nebius", "iowa"),
    ("runpod-us", "runpod", "texas"), ("runpod-eu", "runpod", "amsterdam"),
    ("hyperstack-canada", "hyperstack", "toronto"), ("hyperstack-norway", "hyperstack", "oslo"),
    ("tensorwave-us-west", "tensorwave", "california"),
]

# AWS p5.48xlarge regional premium over us-east-1 (market-facts B1); regions it does not
# list take the highest listed premium (+30 %), an assumption named in the source.
AWS_PREMIUM = {"aws-us-east-1": 1.0, "aws-us-west-2": 1.0, "aws-eu-north-1": 1.07,
               "aws-ca-central-1": 1.15, "aws-ap-south-1": 1.20, "aws-ap-northeast-1": 1.25,
               "aws-eu-west-2": 1.30, "aws-ap-southeast-2": 1.30}
AWS_OD = {"H100": 6.88, "H200": 7.91, "B200": 14.24, "A100-80GB": 3.43, "L40S": 2.24,
          "A10G": 1.006, "L4": 0.70}
AWS_SPOT = {"H100": (1.41, 3.22), "H200": (1.94, 3.03), "B200": (1.63, 3.55),
            "A100-80GB": (1.08, 1.25), "L40S": (0.81, 1.66)}
AWS_INTERRUPTION = {"H100": 0.175, "H200": 0.175, "B200": 0.175, "A100-80GB": 0.075,
                    "L40S": 0.075}  # Spot Advisor bands 2026-02-24: p5 15-20 %, p4d 5-10 %
AWS_SCARCE = {"aws-us-east-1", "aws-us-west-2", "aws-eu-north-1"}  # H200/B200 offered here
SRC_AWS = ("SkyPilot catalog v8 aws @00148f2a, cross-checked datareceipts 2026-11-09")
CAPACITY_SPOT = 64  # assumed depth of a spot pool per region and GPU type


def offers() -> list[dict]:
    rows: list[dict] = []

    def add(region, gpu, term, price, source, **kw):
        rows.append({"region": region, "gpu": gpu, "term": term,
                     "usd_per_gpu_hour": round(price, 4), **kw, "source": source})

    for region, provider, _ in REGIONS:
        if provider != "aws":
            continue
        p = AWS_PREMIUM.get(region, 1.30)
        prem = (f"× {p:.2f} regional premium of p5.48xlarge" if region in AWS_PREMIUM
                else "× 1.30, the highest listed p5 regional premium (region not listed)")
        for gpu, od in AWS_OD.items():
            if gpu in ("H200", "B200") and region not in AWS_SCARCE:
                continue
            if gpu == "L4" and region != "aws-us-east-1" and p > 1.2:
                continue
            src_od = (f"{SRC_AWS}: us-east-1 ${od}/GPU-h {prem}" if gpu != "L4" else
                      f"Mélange study (arXiv:2404.14527) L4 ${od}/h {prem}")
            add(region, gpu, "on_demand", od * p, src_od)
            # hyperscaler 1-yr reserved "35-40 % off" (digiterialabs), 3-yr: AWS RI/SP up to
            # 66-75 % off; we take 38 % and 55 %
            add(region, gpu, "reserved", od * p * 0.62,
                "derived: on-demand × 0.62 (1-yr reserved 35-40 % off, market-facts B1)",
                commit_months=12)
            add(region, gpu, "reserved", od * p * 0.45,
                "derived: on-demand × 0.45 (3-yr RI/SP up to 66-75 % off; 55 % taken)",
                commit_months=36)
            if gpu in AWS_SPOT:
                lo, hi = AWS_SPOT[gpu]
                add(region, gpu, "spot", (lo + hi) / 2 * p,
                    f"{SRC_AWS}: spot range ${lo}-{hi} across US AZs, midpoint {prem}",
                    interruption_rate=AWS_INTERRUPTION[gpu], max_gpus=CAPACITY_SPOT)
    az = "datareceipts 109-gpu-pricing 2026-11-09"
    for region, od_h100, od_a100 in (("azure-eastus", 12.29, 3.67),
                                     ("azure-southcentralus", 12.29, 3.67),
                                     ("azure-westeurope", 12.29 * 1.1, 3.67 * 1.1),
                                     ("azure-uksouth", 12.29 * 1.1, 3.67 * 1.1),
                                     ("azure-swedencentral", 12.29 * 1.1, 3.67 * 1.1),
                                     ("azure-japaneast", 12.29 * 1.15, 3.67 * 1.15)):
        eu = "" if od_h100 == 12.29 else f" × {od_h100 / 12.29:.2f} (assumed regional premium)"
        for gpu, od, what in (("H100", od_h100, "ND96isr_H100_v5 $98.32/8"),
                              ("A100-80GB", od_a100, "NC24ads_A100_v4 $3.67")):
            add(region, gpu, "on_demand", od, f"{az}: {what}{eu}")
            add(region, gpu, "spot", od * 0.34,
                "derived: on-demand × 0.34, the AWS H100 spot midpoint over on-demand "
                "(2.32/6.88, market-facts B1); no Azure spot price in the corpus",
                interruption_rate=0.15, max_gpus=CAPACITY_SPOT)
            add(region, gpu, "reserved", od * 0.62,
                "derived: on-demand × 0.62 (1-yr RI, 35-40 % off)", commit_months=12)
            add(region, gpu, "reserved", od * 0.40,
                "derived: on-demand × 0.40 (3-yr RI up to 72 % off; 60 % taken)",
                commit_months=36)
        if region in ("azure-eastus", "azure-westeurope"):
            add(region, "MI300X", "on_demand", 6.0, "cliffcenter.com 2026-05-18: Azure ~$6")
    gcp = "silybench-data gpu_prices.csv, Cloud Billing catalog 2026-09-26"
    for region, p in (("gcp-us-central1", 1.0), ("gcp-europe-west4", 1.1),
                      ("gcp-asia-southeast1", 1.15)):
        note = "" if p == 1.0 else f" × {p:.2f} (assumed regional premium)"
        add(region, "H100", "on_demand", 10.98 * p, f"{gcp}: a3-highgpu incl. host{note}")
        add(region, "H100", "spot", 6.57 * p, f"{gcp}: spot{note}", interruption_rate=0.15,
            max_gpus=CAPACITY_SPOT)
        add(region, "H100", "reserved", 10.98 * p * 0.72,
            "derived: on-demand × 0.72 (Flex CUD 1-yr ~28 % off)", commit_months=12)
        add(region, "H100", "reserved", 10.98 * p * 0.54,
            "derived: on-demand × 0.54 (Flex CUD 3-yr ~46 % off)", commit_months=36)
    # Lambda and Nebius on demand (and Nebius spot) come from their SkyPilot catalogs
    # through `planner market import` (import_catalogs below), not from here.
    cw = "coreweave.com/pricing via api-evangelist 2026-09-20"
    for region in ("coreweave-us-east", "coreweave-us-central", "coreweave-gb-london"):
        for gpu, od, spot in (("H100", 6.155, 2.46), ("H200", 6.305, 2.62),
                              ("B200", 8.60, 4.26), ("A100-80GB", 2.70, 1.21),
                              ("L40S", 2.25, None)):
            add(region, gpu, "on_demand", od, cw)
            if spot:
                add(region, gpu, "spot", spot, f"{cw}: spot", interruption_rate=0.1,
                    max_gpus=CAPACITY_SPOT)
            add(region, gpu, "reserved", od * 0.60,
                "derived: on-demand × 0.60 (CoreWeave reserved 'up to 60 %' off; 40 % for 1 yr)",
                commit_months=12)
            add(region, gpu, "reserved", od * 0.40,
                "derived: on-demand × 0.40 (CoreWeave reserved 'up to 60 %' off, 3 yr)",
                commit_months=36)
    rp = "runpod.io/pricing 2026-09-25 (silybench), community cloud"
    for region in ("runpod-us", "runpod-eu"):
        for gpu, od in (("H100", 2.69), ("H200", 3.59), ("B200", 5.98), ("A100-80GB", 1.39),
                        ("L40S", 0.79)):
            # an hourly marketplace: capacity is what hosts list; 32 GPUs per type assumed
            add(region, gpu, "on_demand", od, rp, max_gpus=32)
    hs = "Hyperstack price page 2026-08-26"
    for region in ("hyperstack-canada", "hyperstack-norway"):
        for gpu, od, monthly in (("H100", 3.20, 2.72), ("H200", 3.99, 2.79),
                                 ("B200", 6.00, 5.10), ("A100-80GB", 1.60, 1.36)):
            add(region, gpu, "on_demand", od, hs, max_gpus=128)
            # bare metal at a flat monthly rate, one-month minimum, ~48 h provisioning
            add(region, gpu, "monthly", monthly,
                f"{hs}: reserved-from rate, as a flat monthly bare-metal term (one-month "
                "minimum, ~48 h provisioning, market-facts)", commit_months=1,
                lead_time_days=2, max_gpus=256)
        add(region, "A100-80GB", "spot", 1.08, f"{hs}: spot", interruption_rate=0.1,
            max_gpus=CAPACITY_SPOT)
    add("tensorwave-us-west", "MI300X", "on_demand", 1.50,
        "TensorWave $1.50 (market-facts B1, 2026-08/09)", max_gpus=64)
    add("tensorwave-us-west", "MI300X", "reserved", 1.50 * 0.85,
        "derived: on-demand × 0.85 (neocloud reserved ~15 % off, Hyperstack 2.72 vs 3.20)",
        commit_months=12, max_gpus=512)
    # Build-to-order: scarce Blackwell and Hopper capacity, long lead time, minimum order.
    # Price: the neocloud 1-yr H100 reserved market rate ($2.35, SemiAnalysis Mar 2026)
    # scaled by the GPU's on-demand price over H100's at Nebius (7.15/3.85, 4.50/3.85).
    h100_reserved = 2.35
    for region, gpu, ratio, lead, months, minimum in (
            ("coreweave-us-east", "B200", 7.15 / 3.85, 180, 36, 64),
            ("nebius-us-central1", "B200", 7.15 / 3.85, 240, 24, 64),
            ("hyperstack-norway", "H200", 4.50 / 3.85, 120, 24, 32)):
        add(region, gpu, "build_to_order", h100_reserved * ratio,
            f"derived: neocloud 1-yr H100 reserved $2.35 (SemiAnalysis 2026-03) × {ratio:.3f} "
            f"(Nebius {gpu}/H100 on-demand); lead {lead} d (B200 4-10 months, "
            "gpuleaseindex/cliffcenter); minimum order of 8 nodes (assumed)",
            commit_months=months, lead_time_days=lead, min_gpus=minimum, max_gpus=1024)
    return rows


# -- the enterprise: workloads and their forecast -------------------------------------------
QUARTERS = [f"{y}Q{q}" for y in (2027, 2028) for q in (1, 2, 3, 4)]
US = "US;CA"

WORKLOADS = [
    # workload, kind, slo, residency, peak_to_average, peak_hours_share, egress GB/unit-h, pool
    ("pretrain-70b", "training", None, "US;CA;EU;NO", 1, 0, 0, None),
    ("finetune-8b", "training", None, "US;CA;EU;NO", 1, 0, 0, None),
    ("hparam-sweeps", "burst", None, "", 5, 0.2, 0, None),
    ("assistant-us", "inference", 40, US, 1.6, 0.3, 2e-5, "llama-70b"),
    ("assistant-latam", "inference", 130, "", 1.6, 0.3, 2e-5, "llama-70b"),
    ("assistant-eu", "inference", 30, "EU", 1.6, 0.3, 2e-5, "llama-70b"),
    ("assistant-uk", "inference", 20, "UK", 1.6, 0.3, 2e-5, "llama-70b"),
    ("assistant-apac", "inference", 60, "", 1.6, 0.3, 2e-5, "llama-70b"),
    ("eval-runs", "burst", None, "", 5, 0.2, 0, None),
    ("embeddings", "inference", 30, US, 1.6, 0.3, 1e-6, None),
    ("image-gen-eu", "inference", 50, "EU", 1.6, 0.3, 5.4, None),
]


def demand() -> list[dict]:
    rows = []

    def grow(first, rate):
        return [first * (1 + rate) ** i for i in range(len(QUARTERS))]

    def add(workload, levels, sites=None, periods=QUARTERS):
        for period, level in zip(periods, levels):
            if level <= 0:
                continue
            for site, share in (sites or {None: 1.0}).items():
                rows.append({"workload": workload, "period": period,
                             "amount": round(level * share, 1), "site": site})

    # a 70B pretraining run: 2T tokens over 2027Q2-Q4 = 2e12 / (9 × 730 × 3600) ≈ 84,600 /s
    add("pretrain-70b", [0, 84600, 84600, 84600, 0, 0, 0, 0])
    # fine-tuning every quarter's first month, 15B tokens ≈ 5,700 tokens/s over the month
    for q, period in enumerate(QUARTERS):
        y, n = int(period[:4]), int(period[-1])
        add("finetune-8b", [5700 * 1.1 ** q], periods=[f"{y}-{3 * (n - 1) + 1:02d}"])
    # sweeps: 20 % of the hours at 5× their average
    add("hparam-sweeps", grow(4000, 0.05))
    add("eval-runs", grow(20000, 0.05))
    # output tokens/s, growing 12 % a quarter
    add("assistant-us", grow(150000, 0.12),
        {"virginia": 0.4, "texas": 0.25, "california": 0.2, "iowa": 0.15})
    add("assistant-latam", grow(20000, 0.15), {"sao-paulo": 0.6, "queretaro": 0.4})
    add("assistant-eu", grow(60000, 0.12), {"frankfurt": 0.4, "paris": 0.35, "amsterdam": 0.25})
    add("assistant-uk", grow(20000, 0.10), {"london": 1.0})
    add("assistant-apac", grow(30000, 0.15), {"tokyo": 0.4, "singapore": 0.35, "sydney": 0.25})
    # embedding input tokens/s for search
    add("embeddings", grow(400000, 0.08), {"virginia": 0.6, "california": 0.4})
    # images/s generated for EU users
    add("image-gen-eu", grow(8, 0.10), {"frankfurt": 0.5, "paris": 0.5})
    return rows


EXISTING = [
    {"region": "aws-us-east-1", "gpu": "H100", "gpus": 64, "start_month": "2026-07",
     "end_month": "2027-06", "usd_per_gpu_hour": round(6.88 * 0.62, 4)},
    {"region": "azure-westeurope", "gpu": "A100-80GB", "gpus": 32, "start_month": "2026-01",
     "end_month": "2027-12", "usd_per_gpu_hour": round(3.67 * 1.1 * 0.62, 4)},
]

SETTINGS = [
    ("start_month", "2027-01"), ("horizon_months", "24"), ("hours_per_month", "730"),
    ("tail_policy", "full"), ("discount_rate_annual", "0.08"),
    ("unmet_penalty_usd_per_unit_hour", "50"), ("solver", "highs"), ("time_limit_s", "60"),
    ("mip_gap", "0.02"),
]


def links() -> list[dict]:
    with AZURE.open(newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    matrix = {r[0]: {header[j]: r[j] for j in range(1, len(r))} for r in rows[1:]}
    by_azure = {s[5]: s[0] for s in SITES}
    seen: dict[tuple[str, str], float] = {}
    for src, row in matrix.items():
        if src not in by_azure:
            continue
        for dst, value in row.items():
            if dst not in by_azure or dst == src or not value:
                continue
            a, b = sorted((by_azure[src], by_azure[dst]))
            ms = float(value)
            back = matrix.get(dst, {}).get(src)
            if back:
                ms = max(ms, float(back))  # symmetrise conservatively
            seen[(a, b)] = max(seen.get((a, b), 0.0), ms)
    return [{"site_a": a, "site_b": b, "rtt_ms": ms} for (a, b), ms in sorted(seen.items())]


def write(name: str, rows: list[dict], columns: list[str]) -> None:
    with (DATA / f"{name}.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="raise")
        w.writeheader()
        for r in rows:
            w.writerow({c: ("" if r.get(c) is None else r.get(c)) for c in columns})


# -- Lambda and Nebius from the public catalogs -----------------------------------------
CATALOG = ROOT.parent / "shared" / "external" / "skypilot-catalog"
CATALOG_DATE = "2026-11-01"  # when the catalog files beside us were taken
# what the catalogs do not say: capacity and spot interruptions (market/rules.csv)
MARKET_RULES = [
    {"provider": "lambda", "term": "on_demand", "max_gpus": 64,
     "source": "on-demand stock is limited; 64 GPUs per type assumed"},
    {"provider": "nebius", "term": "on_demand", "max_gpus": 256,
     "source": "256 GPUs per type assumed"},
    {"provider": "nebius", "term": "spot", "max_gpus": 64, "interruption_rate": 0.15,
     "source": "preemptible: 64 GPUs and 15 % of throughput lost to interruptions assumed "
               "(as the hyperscalers' spot)"},
]
# catalog GPU types the scenario does not model
NOT_MODELLED = ("A10", "A100", "A6000", "GH200", "RTX6000", "V100")


def import_catalogs() -> None:
    """Lambda's and Nebius's prices through the importer, as a user would refresh them."""
    import datetime as dt

    from planner.io.market import import_market

    market = DATA / "market"
    market.mkdir(exist_ok=True)
    write_to = {"rules": (MARKET_RULES, ["provider", "gpu", "term", "commit_months",
                                         "discount", "max_gpus", "interruption_rate",
                                         "source"]),
                "gpus": ([{"catalog_gpu": g, "gpu": "-"} for g in NOT_MODELLED],
                         ["catalog_gpu", "gpu"])}
    for name, (rows, columns) in write_to.items():
        with (market / f"{name}.csv").open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            w.writerows(rows)
    (market / "regions.csv").unlink(missing_ok=True)
    changes, issues = import_market(DATA, CATALOG, None, dt.date.fromisoformat(CATALOG_DATE))
    for issue in issues:
        print(issue)
    print(f"catalogs: {len(changes.added)} offers imported; regions not in the scenario: "
          f"{', '.join(changes.unplaced_regions)}")


def main() -> None:
    DATA.mkdir(exist_ok=True)
    write("settings", [{"key": k, "value": v} for k, v in SETTINGS], ["key", "value"])
    write("gpus", [dict(zip(["gpu", "memory_gb", "mem_bandwidth_tbps", "bf16_tflops",
                             "tdp_watts", "source"], g)) for g in GPUS],
          ["gpu", "memory_gb", "mem_bandwidth_tbps", "bf16_tflops", "tdp_watts", "source"])
    write("sites", [dict(zip(["site", "country", "jurisdiction", "lat", "lon"], s[:5]))
                    for s in SITES], ["site", "country", "jurisdiction", "lat", "lon"])
    write("links", links(), ["site_a", "site_b", "rtt_ms"])
    write("regions", [{"region": r, "provider": p, "site": s,
                       "egress_usd_per_gb": EGRESS.get(p, 0.0)} for r, p, s in REGIONS],
          ["region", "provider", "site", "egress_usd_per_gb"])
    write("offers", offers(), ["region", "gpu", "term", "usd_per_gpu_hour", "commit_months",
                               "upfront_usd_per_gpu", "lead_time_days", "max_gpus", "min_gpus",
                               "interruption_rate", "gpus_per_instance", "source",
                               "price_date"])
    cols = ["workload", "kind", "latency_slo_ms", "residency", "allow_spot", "max_spot_share",
            "peak_to_average", "peak_hours_share", "egress_gb_per_unit_hour", "single_region",
            "pool", "unmet_penalty_usd_per_unit_hour"]
    write("workloads", [
        {"workload": w, "kind": k, "latency_slo_ms": slo, "residency": res,
         "peak_to_average": p2a, "peak_hours_share": share, "egress_gb_per_unit_hour": egress,
         "pool": pool, "max_spot_share": 0.5 if k == "burst" else None,
         # an image left ungenerated is worth more than a token: $5000 per image/s-hour
         "unmet_penalty_usd_per_unit_hour": 5000 if w == "image-gen-eu" else None}
        for w, k, slo, res, p2a, share, egress, pool in WORKLOADS], cols)
    write("demand", demand(), ["workload", "period", "amount", "site"])
    write("existing", EXISTING, ["region", "gpu", "gpus", "start_month", "end_month",
                                 "usd_per_gpu_hour"])
    import_catalogs()
    print(f"wrote {DATA}; now run: planner throughput data models")


if __name__ == "__main__":
    main()
