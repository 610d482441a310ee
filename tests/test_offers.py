"""`planner offers` (SPEC §4 v2): the market cheapest first, filtered, from a site."""

from __future__ import annotations

import csv
import io
import json

import pytest
from scenarios import scenario, write_csv
from typer.testing import CliRunner

from planner.cli import app

# hours_per_month 100. Effective rates: on demand $3; reserved 12 months at $1 + $600
# upfront: 1 + 600 / (12 × 100) = $1.50; monthly $2 (no upfront); B's on demand in far
# region $0.50 but 80 ms away.
MARKET = scenario(
    settings={"hours_per_month": 100},
    gpus=[{"gpu": "A"}, {"gpu": "B"}],
    sites=[{"site": "ny", "country": "US", "jurisdiction": "US"},
           {"site": "sf", "country": "US", "jurisdiction": "US"}],
    links=[{"site_a": "ny", "site_b": "sf", "rtt_ms": 80}],
    regions=[{"region": "east", "provider": "p1", "site": "ny"},
             {"region": "west", "provider": "p2", "site": "sf"}],
    offers=[
        {"region": "east", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 3,
         "source": "p1 price page", "price_date": "2026-12-01"},
        {"region": "east", "gpu": "A", "term": "reserved", "usd_per_gpu_hour": 1,
         "commit_months": 12, "upfront_usd_per_gpu": 600, "max_gpus": 64},
        {"region": "east", "gpu": "A", "term": "monthly", "usd_per_gpu_hour": 2,
         "commit_months": 1, "gpus_per_instance": 8, "lead_time_days": 14},
        {"region": "west", "gpu": "B", "term": "on_demand", "usd_per_gpu_hour": 0.5},
    ],
    throughput=[{"workload": "w", "gpu": "A", "units_per_gpu": 1}])


def _offers(tmp_path, *args):
    folder = write_csv(tmp_path / "market", MARKET)
    return CliRunner().invoke(app, ["offers", str(folder), *args])


def test_json_lists_every_offer_cheapest_effective_rate_first(tmp_path):
    res = _offers(tmp_path, "--format", "json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [(r["region"], r["gpu"], r["term"]) for r in rows] == [
        ("west", "B", "on_demand"), ("east", "A", "reserved"), ("east", "A", "monthly"),
        ("east", "A", "on_demand")]
    reserved = rows[1]
    assert reserved["effective_usd_per_gpu_hour"] == pytest.approx(1.5)
    assert reserved["usd_per_gpu_hour"] == 1 and reserved["commit_months"] == 12
    assert reserved["max_gpus"] == 64
    assert rows[2]["gpus_per_instance"] == 8 and rows[2]["lead_time_days"] == 14
    assert rows[3]["source"] == "p1 price page" and rows[3]["price_date"] == "2026-12-01"
    assert rows[0]["provider"] == "p2"
    assert all("rtt_ms" not in r for r in rows)
    assert set(rows[0]) == {"gpu", "provider", "region", "term", "usd_per_gpu_hour",
                            "effective_usd_per_gpu_hour", "commit_months",
                            "gpus_per_instance", "max_gpus", "lead_time_days", "source",
                            "price_date"}


def test_filters_match_names_whatever_their_case(tmp_path):
    res = _offers(tmp_path, "--gpu", "a", "--term", "ON_DEMAND", "--format", "csv")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [(r["region"], r["gpu"], r["term"]) for r in rows] == [("east", "A", "on_demand")]
    assert rows[0]["lead_time_days"] == "0"  # whole days as typed, not 0.0
    res = _offers(tmp_path, "--region", "West", "--format", "json")
    assert [r["region"] for r in json.loads(res.stdout)] == ["west"]


def test_from_a_site_within_an_slo(tmp_path):
    res = _offers(tmp_path, "--from", "NY", "--format", "json")
    rows = json.loads(res.stdout)
    assert {r["region"]: r["rtt_ms"] for r in rows} == {"west": 80, "east": 0}
    res = _offers(tmp_path, "--from", "ny", "--slo", "50", "--format", "json")
    assert {r["region"] for r in json.loads(res.stdout)} == {"east"}


def test_latencies_read_as_their_links_add_up(tmp_path):
    # an outside audit: links of 1.1 and 2.2 ms listed 3.3000000000000003 (their float
    # sum) in offers' and latency's JSON and CSV, and the site itself 0 beside 10.0
    tables = dict(MARKET, sites=[*MARKET["sites"],
                                 {"site": "mid", "country": "US", "jurisdiction": "US"}],
                  links=[{"site_a": "ny", "site_b": "mid", "rtt_ms": 1.1},
                         {"site_a": "mid", "site_b": "sf", "rtt_ms": 2.2}])
    folder = write_csv(tmp_path / "market", tables)
    res = CliRunner().invoke(app, ["offers", str(folder), "--from", "ny", "--format",
                                   "json"])
    assert res.exit_code == 0, res.output
    assert {r["region"]: r["rtt_ms"] for r in json.loads(res.stdout)} == \
        {"west": 3.3, "east": 0.0}
    assert '"rtt_ms": 3.3\n' in res.stdout and '"rtt_ms": 0.0\n' in res.stdout
    res = CliRunner().invoke(app, ["latency", str(folder), "ny", "--format", "CSV"])
    assert res.exit_code == 0, res.output
    rows = {r["region"]: r["latency_ms"] for r in csv.DictReader(io.StringIO(res.stdout))}
    assert rows == {"east": "0.0", "west": "3.3"}


@pytest.mark.parametrize("args, message", [
    (["--gpu", "Z"], "unknown GPU type 'Z'"),
    (["--from", "paris"], "unknown site 'paris'"),
    (["--term", "weekly"], "unknown term 'weekly'"),
    (["--format", "xml"], "--format"),
    (["--slo", "10"], "--slo needs --from"),
])
def test_unknown_names_are_bad_input(tmp_path, args, message):
    res = _offers(tmp_path, *args)
    assert res.exit_code == 2
    assert message in res.output


def test_the_table_shows_rates_to_four_decimals(tmp_path):
    res = _offers(tmp_path)
    assert res.exit_code == 0, res.output
    assert "1.0000" in res.stdout and "1.5000" in res.stdout and "4 offer(s)" in res.output


def test_for_a_workload_cheapest_per_unit_within_its_rules(tmp_path):
    # w serves 1 unit per GPU on A only (no throughput on B: west's $0.50 is out), with a
    # 50 ms SLO: from ny, east (0 ms) is in reach; from sf it is 80 ms away: nothing is.
    # A's offers per unit: reserved 1.50 (with its upfront), monthly 2.00, on demand 3.00.
    market = dict(MARKET, workloads=[{"workload": "w", "kind": "inference",
                                      "latency_slo_ms": 50}],
                  demand=[{"workload": "w", "period": "2027-01", "amount": 1, "site": "ny"}])
    folder = write_csv(tmp_path / "slo", market)

    def listed(*args):
        res = CliRunner().invoke(app, ["offers", str(folder), "--format", "json", *args])
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)

    rows = listed("--workload", "W", "--from", "NY")
    assert [(r["gpu"], r["term"], r["usd_per_unit_hour"], r["rtt_ms"]) for r in rows] == [
        ("A", "reserved", 1.5, 0), ("A", "monthly", 2.0, 0), ("A", "on_demand", 3.0, 0)]
    assert listed("--workload", "w", "--from", "sf") == []
    # --slo overrides the workload's own
    assert len(listed("--workload", "w", "--from", "sf", "--slo", "100")) == 3


def test_a_name_as_written_wins_over_one_that_differs_in_case(tmp_path):
    # GPU types 'A' and 'a': --gpu A lists A's offers, --gpu a a's; 'B' matches b alone
    # whatever the case; a name two types match only in case is refused (exit 2)
    market = dict(MARKET, gpus=[{"gpu": "A"}, {"gpu": "a"}, {"gpu": "B"}],
                  offers=[*MARKET["offers"],
                          {"region": "west", "gpu": "a", "term": "spot",
                           "usd_per_gpu_hour": 0.1}])
    folder = write_csv(tmp_path / "market", market)
    runner = CliRunner()

    def listed(gpu):
        res = runner.invoke(app, ["offers", str(folder), "--gpu", gpu, "--format", "json"])
        assert res.exit_code == 0, res.output
        return sorted((r["gpu"], r["term"]) for r in json.loads(res.stdout))

    assert listed("A") == [("A", "monthly"), ("A", "on_demand"), ("A", "reserved")]
    assert listed("a") == [("a", "spot")]
    assert listed("b") == [("B", "on_demand")]
    # 'Gx' and 'gX': 'GX' is neither as written and matches both
    market = dict(MARKET, gpus=[{"gpu": "Gx"}, {"gpu": "gX"}],
                  offers=[{"region": "east", "gpu": "Gx", "term": "on_demand",
                           "usd_per_gpu_hour": 1}],
                  throughput=[{"workload": "w", "gpu": "Gx", "units_per_gpu": 1}])
    folder = write_csv(tmp_path / "market2", market)
    res = runner.invoke(app, ["offers", str(folder), "--gpu", "GX"])
    assert res.exit_code == 2 and "matches Gx, gX" in res.output
    assert runner.invoke(app, ["offers", str(folder), "--gpu", "Gx"]).exit_code == 0


def test_for_a_workload_spot_only_where_its_share_allows_some(tmp_path):
    # spot allowed but at most 0 % of its units: no spot offer can serve it
    market = dict(MARKET, offers=[*MARKET["offers"], {"region": "east", "gpu": "A",
                                                      "term": "spot", "usd_per_gpu_hour": 0.1}],
                  workloads=[{"workload": "w", "kind": "inference", "allow_spot": "true",
                              "max_spot_share": 0}],
                  demand=[{"workload": "w", "period": "2027-01", "amount": 1, "site": "ny"}])
    folder = write_csv(tmp_path / "spot", market)
    res = CliRunner().invoke(app, ["offers", str(folder), "--format", "json",
                                   "--workload", "w"])
    assert res.exit_code == 0, res.output
    assert "spot" not in {r["term"] for r in json.loads(res.stdout)}


def test_offers_and_latency_say_the_scenarios_warnings(tmp_path):
    # SPEC §2: unknown columns are said, never silently used; offers and latency had said
    # none (an outside audit: an upfront typed on an on-demand row, ignored, unsaid)
    tables = dict(MARKET)
    tables["gpus"] = [dict(row, colour="blue") for row in MARKET["gpus"]]
    folder = write_csv(tmp_path / "scn", tables)
    site = MARKET["sites"][0]["site"]
    for args in (["offers", str(folder), "--format", "json"],
                 ["latency", str(folder), site, "--format", "json"]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        assert "unknown column 'colour'" in res.stderr, args
        json.loads(res.stdout)  # stdout stays the listing alone
