"""Bad input, at random (SPEC §3): any few of a scenario's problems, together, are each
reported where they are (table, row, column), and nothing is reported that follows only
from another (a row left out for its own error is not also unknown, unreachable or
missing where other rows name it)."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from scenarios import write_csv, write_xlsx

from planner.io.load import load_raw
from planner.io.validate import validate

# A valid scenario in which every table names others: two linked sites with a region
# each and a third, without one, linked to the first, where an inference workload with
# a latency SLO has users; a training workload; a reserved, a monthly and two on-demand
# offers; a contract already signed.
MARKET = {
    "settings": [{"key": "start_month", "value": "2027-01"},
                 {"key": "horizon_months", "value": "3"}],
    "gpus": [{"gpu": "A"}, {"gpu": "B"}],
    "sites": [{"site": "s1", "country": "US", "jurisdiction": "US"},
              {"site": "s2", "country": "US", "jurisdiction": "US"},
              {"site": "s3", "country": "CA", "jurisdiction": "CA"}],
    "links": [{"site_a": "s1", "site_b": "s2", "rtt_ms": 10},
              {"site_a": "s1", "site_b": "s3", "rtt_ms": 20}],
    "regions": [{"region": "r1", "provider": "p", "site": "s1"},
                {"region": "r2", "provider": "q", "site": "s2"}],
    "offers": [{"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2},
               {"region": "r1", "gpu": "A", "term": "reserved", "usd_per_gpu_hour": 1,
                "commit_months": 12},
               {"region": "r2", "gpu": "B", "term": "on_demand", "usd_per_gpu_hour": 3},
               {"region": "r2", "gpu": "B", "term": "monthly", "usd_per_gpu_hour": 2.5,
                "commit_months": 1},
               {"region": "r1", "gpu": "B", "term": "spot", "usd_per_gpu_hour": 0.8,
                "interruption_rate": 0.1},
               {"region": "r2", "gpu": "A", "term": "build_to_order",
                "usd_per_gpu_hour": 1.2, "commit_months": 36, "min_gpus": 8,
                "max_gpus": 64, "gpus_per_instance": 8, "lead_time_days": 90}],
    "workloads": [{"workload": "w", "kind": "inference", "latency_slo_ms": 50},
                  {"workload": "t", "kind": "training"}],
    "throughput": [{"workload": "w", "gpu": "A", "units_per_gpu": 10},
                   {"workload": "w", "gpu": "B", "units_per_gpu": 12},
                   {"workload": "t", "gpu": "A", "units_per_gpu": 1},
                   {"workload": "t", "gpu": "B", "units_per_gpu": 1}],
    "demand": [{"workload": "w", "period": "2027-01", "amount": 10, "site": "s3"},
               {"workload": "w", "period": "2027-02", "amount": 12, "site": "s1"},
               {"workload": "t", "period": "2027Q1", "amount": 4, "site": "s1"}],
    "existing": [{"region": "r1", "gpu": "A", "gpus": 2, "start_month": "2026-10",
                  "end_month": "2027-02", "usd_per_gpu_hour": 1.5},
                 {"region": "r2", "gpu": "B", "gpus": 1, "start_month": "2027-01",
                  "end_month": "2027-01", "usd_per_gpu_hour": 2}],
}


def _cell(table: str, index: int, column: str, value, said: str | None = None):
    """A defect that sets one cell; said at that row (header = row 1) and column, or
    at the column `said`."""
    def apply(data):
        data[table][index][column] = value
        return table, index + 2, said or column
    return apply


def _peak_over_one(data):
    data["workloads"][0].update(peak_hours_share=0.5, peak_to_average=3)
    return "workloads", 2, "peak_hours_share"


def _duplicate_gpu(data):
    data["gpus"].append({"gpu": "A"})
    return "gpus", 4, "gpu"


def _ends_before_it_starts(index: int):
    def apply(data):
        data["existing"][index].update(start_month="2027-02", end_month="2026-12")
        return "existing", index + 2, "end_month"
    return apply


def _s3_unlinked(data):
    """s3 off the map: the SLO's demand there can never be met."""
    del data["links"][1]
    return "demand", 2, "site"


def _no_links_table(data):
    del data["links"]
    return "links", None, None


def _no_amount_column(data):
    for row in data["demand"]:
        row.pop("amount")
    return "demand", 1, "amount"


# Each on a row of its own, or beside another on purpose, so that any of them may come
# together (but those in CLASHES).
DEFECTS = {
    "duplicate gpu": _duplicate_gpu,
    "not a country code": _cell("sites", 1, "country", "USA"),
    "rtt not a number": _cell("links", 1, "rtt_ms", "abc"),  # s3's only link
    "blank provider": _cell("regions", 1, "provider", ""),
    "negative price": _cell("offers", 0, "usd_per_gpu_hour", -1),
    "commitment without months": _cell("offers", 1, "commit_months", ""),
    "unknown gpu": _cell("offers", 2, "gpu", "Z"),
    "unknown term": _cell("offers", 3, "term", "weekly"),
    "peak over one": _peak_over_one,
    "unknown kind": _cell("workloads", 1, "kind", "serving"),
    "units not a number": _cell("throughput", 0, "units_per_gpu", "x"),
    "unknown workload": _cell("throughput", 2, "workload", "nope"),
    "not a month": _cell("demand", 0, "period", "2027-13"),
    "unknown site": _cell("demand", 1, "site", "nowhere"),
    "negative amount": _cell("demand", 2, "amount", -5),
    "ends before it starts": _ends_before_it_starts(0),
    "minimum over the cap": _cell("offers", 5, "max_gpus", 4, said="min_gpus"),
    # two on one row, and on the rows of other problems: each is said beside the other
    "interruption over one": _cell("offers", 4, "interruption_rate", 1.5),
    "instances of none": _cell("offers", 4, "gpus_per_instance", 0),
    "ends before it starts, on a row": _ends_before_it_starts(1),  # of unknown region
    "s3 unlinked": _s3_unlinked,  # on the row of "not a month"
    "duplicate pair": _cell("throughput", 3, "workload", "w"),
    "unknown region": _cell("existing", 1, "region", "r9"),
    "no links table": _no_links_table,
    "no amount column": _no_amount_column,
}
# (a map with a row left out for its own error says of no site that it is off the map)
CLASHES = [{"no links table", "rtt not a number"}, {"no amount column", "negative amount"},
           *({"s3 unlinked", name} for name in ("rtt not a number", "no links table",
                                                 "not a country code", "blank provider"))]


def _errors(data, fmt: str) -> tuple[bool, set[tuple]]:
    with tempfile.TemporaryDirectory() as folder:
        path = (write_csv(Path(folder) / "scn", data) if fmt == "csv"
                else write_xlsx(Path(folder) / "scn.xlsx", data))
        scenario, issues = validate(load_raw(path))
    return scenario is not None, {(i.table, i.row, i.column) for i in issues
                                  if i.severity == "error"}


def test_the_market_is_valid():
    for fmt in ("csv", "xlsx"):
        assert _errors(MARKET, fmt) == (True, set())


@settings(max_examples=40, deadline=None, derandomize=True)
# problems that once hid another, or said one that followed from another
@example(names=["blank provider", "rtt not a number"], fmt="csv")
@example(names=["not a month", "s3 unlinked"], fmt="csv")
@example(names=["unknown region", "ends before it starts, on a row"], fmt="xlsx")
@given(names=st.lists(st.sampled_from(sorted(DEFECTS)), min_size=1, max_size=4,
                      unique=True),
       fmt=st.sampled_from(["csv", "xlsx"]))
def test_every_problem_is_said_where_it_is_and_nothing_else(names, fmt):
    assume(not any(clash <= set(names) for clash in CLASHES))
    data = copy.deepcopy(MARKET)
    places = {DEFECTS[name](data) for name in names}
    valid, errors = _errors(data, fmt)
    label = (lambda t: f"{t}.csv") if fmt == "csv" else (lambda t: f"sheet {t}")
    expected = {(label(table), row, column) for table, row, column in places}
    assert not valid
    assert errors == expected, (names, errors)
