"""Property tests on random small scenarios (hypothesis).

* the independent checker accepts every plan (solving.solve_tables asserts it);
* a plan never costs more than the pay-as-you-go-only plan of the same scenario;
* on tiny instances the optimum equals a brute-force enumeration.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from solving import solve_tables

from planner.model.builder import Restrictions
from planner.model.solution import Solution

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

money = st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0])


@st.composite
def scenarios(draw):
    """A small but complete scenario exercising most rules at once."""
    horizon = draw(st.integers(1, 4))
    n_sites = draw(st.integers(1, 3))
    sites = [{"site": f"s{i}", "country": c, "jurisdiction": j}
             for i, (c, j) in enumerate(draw(st.lists(
                 st.sampled_from([("US", "US"), ("DE", "EU"), ("GB", "UK")]),
                 min_size=n_sites, max_size=n_sites)))]
    links = [{"site_a": f"s{i}", "site_b": f"s{i + 1}",
              "rtt_ms": draw(st.sampled_from([5, 20, 60]))} for i in range(n_sites - 1)]
    regions = [{"region": f"r{i}", "provider": f"p{i % 2}",
                "site": f"s{draw(st.integers(0, n_sites - 1))}",
                "egress_usd_per_gb": draw(st.sampled_from([0, 0, 0.1]))}
               for i in range(draw(st.integers(1, 3)))]
    gpus = ["A", "B"][: draw(st.integers(1, 2))]
    offers, seen = [], set()
    for _ in range(draw(st.integers(1, 6))):
        r = draw(st.sampled_from(regions))["region"]
        g = draw(st.sampled_from(gpus))
        term = draw(st.sampled_from(["on_demand", "spot", "monthly", "reserved",
                                     "build_to_order"]))
        months = {"monthly": 1, "reserved": draw(st.sampled_from([3, 6])),
                  "build_to_order": 2}.get(term, 0)
        if (r, g, term, months) in seen:
            continue
        seen.add((r, g, term, months))
        row = {"region": r, "gpu": g, "term": term, "usd_per_gpu_hour": draw(money)}
        if months:
            row["commit_months"] = months
            row["min_gpus"] = draw(st.sampled_from([0, 0, 2]))
            row["upfront_usd_per_gpu"] = draw(st.sampled_from([0, 50]))
        if term == "build_to_order":
            row["lead_time_days"] = 31
        if term == "spot":
            row["interruption_rate"] = draw(st.sampled_from([0, 0.1, 0.25]))
        if draw(st.booleans()):
            row["max_gpus"] = max(draw(st.integers(1, 4)), row.get("min_gpus", 0))
        offers.append(row)
    workloads, throughput, demand = [], [], []
    for i in range(draw(st.integers(1, 3))):
        w = f"w{i}"
        kind = draw(st.sampled_from(["inference", "burst", "training"]))
        row = {"workload": w, "kind": kind,
               "unmet_penalty_usd_per_unit_hour": draw(st.sampled_from([5, 50]))}
        if kind == "burst":  # 0.5: quieter in the shared peak hours than in the others
            row.update(peak_hours_share=0.25,
                       peak_to_average=draw(st.sampled_from([2, 4, 0.5])))
        if kind == "inference" and draw(st.booleans()):
            row["latency_slo_ms"] = draw(st.sampled_from([10, 30]))
            row["egress_gb_per_unit_hour"] = 0.01
        if draw(st.booleans()):
            row["residency"] = draw(st.sampled_from(["EU", "US", "UK;EU"]))
        if kind != "training" and draw(st.booleans()):
            row["max_spot_share"] = 0.5
        workloads.append(row)
        for g in gpus:
            if draw(st.booleans()) or g == gpus[0]:
                throughput.append({"workload": w, "gpu": g,
                                   "units_per_gpu": draw(st.sampled_from([5, 10])),
                                   "gpus_per_replica": draw(st.sampled_from([1, 1, 2]))})
        site = draw(st.sampled_from(sites))["site"]
        for m in range(horizon):
            amount = draw(st.sampled_from([0, 4, 10, 25]))
            if amount:
                demand.append({"workload": w, "period": f"2027-{m + 1:02d}",
                               "amount": amount, "site": site})
    return {
        "settings": [{"key": "start_month", "value": "2027-01"},
                     {"key": "horizon_months", "value": str(horizon)},
                     {"key": "hours_per_month", "value": "100"},
                     {"key": "tail_policy", "value": draw(st.sampled_from(["full", "prorate"]))}],
        "gpus": [{"gpu": g} for g in gpus], "sites": sites, "links": links,
        "regions": regions, "offers": offers, "workloads": workloads,
        "throughput": throughput, "demand": demand,
    }


@SETTINGS
@given(tables=scenarios())
def test_checker_accepts_plans_never_dearer_than_pay_as_you_go(tmp_path_factory, tables):
    tmp = tmp_path_factory.mktemp("prop")
    plan = solve_tables(tmp, tables)
    payg = solve_tables(tmp, tables,
                        restrictions=Restrictions(terms={"spot": None, "on_demand": None}))
    assert plan.totals["objective_usd"] <= payg.totals["objective_usd"] + 1e-6


# -- brute force on tiny instances ----------------------------------------------------------

@st.composite
def tiny(draw):
    """One month, one segment, no network: each workload picks whole replicas per offer."""
    offers = []
    for i, term in enumerate(draw(st.lists(st.sampled_from(["on_demand", "spot", "monthly"]),
                                           min_size=1, max_size=3, unique=True))):
        row = {"region": "r1", "gpu": draw(st.sampled_from(["A", "B"])), "term": term,
               "usd_per_gpu_hour": draw(money)}
        if term == "monthly":
            row["commit_months"] = 1
            row["min_gpus"] = draw(st.sampled_from([0, 3]))
        if term == "spot":
            row["interruption_rate"] = draw(st.sampled_from([0, 0.5]))
        if draw(st.booleans()):
            row["max_gpus"] = max(draw(st.integers(1, 3)), row.get("min_gpus", 0))
        offers.append(row)
    workloads = [{"workload": f"w{i}", "kind": draw(st.sampled_from(["burst", "inference"])),
                  "unmet_penalty_usd_per_unit_hour": draw(st.sampled_from([0.1, 1, 10]))}
                 for i in range(draw(st.integers(1, 2)))]
    throughput = [{"workload": w["workload"], "gpu": g, "units_per_gpu": draw(
        st.sampled_from([4, 10])), "gpus_per_replica": draw(st.sampled_from([1, 2]))}
        for w in workloads for g in ("A", "B")]
    demand = [{"workload": w["workload"], "period": "2027-01",
               "amount": draw(st.sampled_from([3, 10, 18]))} for w in workloads]
    return {
        "settings": [{"key": "start_month", "value": "2027-01"},
                     {"key": "horizon_months", "value": "1"},
                     {"key": "hours_per_month", "value": "100"}],
        "gpus": [{"gpu": "A"}, {"gpu": "B"}],
        "sites": [{"site": "s1", "country": "US", "jurisdiction": "US"}], "links": [],
        "regions": [{"region": "r1", "provider": "p", "site": "s1"}],
        "offers": offers, "workloads": workloads, "throughput": throughput, "demand": demand,
    }


def replica_ranges(tables) -> list[int]:
    """Per (workload, offer) pair of `brute_force`, the most replicas worth trying:
    enough to serve the whole demand alone."""
    workloads = {w["workload"]: w for w in tables["workloads"]}
    tp = {(t["workload"], t["gpu"]): t for t in tables["throughput"]}
    demand = {d["workload"]: d["amount"] for d in tables["demand"]}
    out = []
    for w in workloads:
        for o in tables["offers"]:
            if o["term"] != "spot" or workloads[w]["kind"] == "burst":
                t = tp[(w, o["gpu"])]
                derate = 1 - o.get("interruption_rate", 0) if o["term"] == "spot" else 1
                out.append(math.ceil(demand[w] / (t["units_per_gpu"] * t["gpus_per_replica"]
                                                  * derate)))
    return out


def brute_force(tables) -> float:
    """Least cost by enumerating replicas of every workload on every offer (0 to enough
    to serve the whole demand alone)."""
    hours = 100
    workloads = {w["workload"]: w for w in tables["workloads"]}
    tp = {(t["workload"], t["gpu"]): t for t in tables["throughput"]}
    demand = {d["workload"]: d["amount"] for d in tables["demand"]}
    pairs = [(w, o) for w in workloads for o in tables["offers"]
             if o["term"] != "spot" or workloads[w]["kind"] == "burst"]
    best = math.inf
    for counts in itertools.product(*(range(n + 1) for n in replica_ranges(tables))):
        gpus_on = {}
        served = {w: 0.0 for w in workloads}
        for (w, o), n in zip(pairs, counts):
            t = tp[(w, o["gpu"])]
            key = id(o)
            gpus_on[key] = gpus_on.get(key, 0) + n * t["gpus_per_replica"]
            derate = 1 - o.get("interruption_rate", 0) if o["term"] == "spot" else 1
            served[w] += n * t["gpus_per_replica"] * t["units_per_gpu"] * derate
        total, ok = 0.0, True
        for o in tables["offers"]:
            n = gpus_on.get(id(o), 0)
            if o.get("max_gpus") is not None and n > o["max_gpus"]:
                ok = False
            if o["term"] == "monthly" and 0 < n < o.get("min_gpus", 0):
                n = o["min_gpus"]  # a commitment below the minimum is raised to it
                if o.get("max_gpus") is not None and n > o["max_gpus"]:
                    ok = False
            total += n * hours * o["usd_per_gpu_hour"]
        if not ok:
            continue
        for w, level in demand.items():
            total += max(0.0, level - served[w]) * hours * \
                workloads[w]["unmet_penalty_usd_per_unit_hour"]
        best = min(best, total)
    return best


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(tables=tiny())
def test_tiny_optimum_equals_brute_force(tmp_path_factory, tables):
    assume(math.prod(n + 1 for n in replica_ranges(tables)) <= 50_000)
    plan = solve_tables(tmp_path_factory.mktemp("tiny"), tables)
    assert plan.totals["objective_usd"] == pytest.approx(brute_force(tables), abs=1e-4)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(tables=scenarios())
def test_pruning_dominated_offers_never_changes_the_optimum(tmp_path_factory, tables):
    from scenarios import write_csv

    from planner.check import check_plan
    from planner.io.validate import load_scenario
    from planner.model.builder import build_model
    from planner.model.candidates import find_candidates
    from planner.report.plan import extract_plan
    from planner.solve.whole import solve

    s = load_scenario(write_csv(tmp_path_factory.mktemp("dom"), tables))
    objectives = []
    for prune in (True, False):
        model = build_model(s, find_candidates(s, prune_dominated=prune))
        result = solve(model, gap=1e-9)
        assert check_plan(s, extract_plan(model, Solution.of_model(model), result)) == []
        objectives.append(result.objective)
    assert objectives[0] == pytest.approx(objectives[1], rel=1e-7, abs=1e-6)


def test_dearer_offers_are_pruned_as_dominated(tmp_path):
    """r1 on-demand at $2 is unlimited: on-demand at $3 and spot at $2.5 in r2 (same site,
    same GPU) can never be better; spot at $1 in r1 stays."""
    from scenarios import scenario, write_csv

    from planner.io.validate import load_scenario
    from planner.model.candidates import find_candidates

    tables = scenario(
        regions=[{"region": "r1", "provider": "p", "site": "s1"},
                 {"region": "r2", "provider": "q", "site": "s1"}],
        offers=[{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2},
                {"region": "r2", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 3},
                {"region": "r2", "gpu": "A", "term": "spot", "usd_per_gpu_hour": 2.5},
                {"region": "r1", "gpu": "A", "term": "spot", "usd_per_gpu_hour": 1.0}],
        workloads=[{"workload": "w", "kind": "burst"}])
    c = find_candidates(load_scenario(write_csv(tmp_path / "s", tables)))
    assert c.pruned[("w", "r2/A/on_demand")] == "dominated by r1/A/on_demand"
    assert c.pruned[("w", "r2/A/spot")] == "dominated by r1/A/on_demand"
    assert {o.key for o in c.offers["w"]} == {"r1/A/on_demand", "r1/A/spot"}
