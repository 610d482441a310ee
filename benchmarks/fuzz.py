"""Robustness, by hand: the commands on generated markets with random valid changes.

    python benchmarks/fuzz.py [--count N] [--seed S] [--time-limit S]
                              [--modes solve,whatif,samples,table,bad] [--keep DIR]

Each case generates a market (`planner generate`'s 4x3x2 to 20x8x6), changes it at
random within what SPEC §2 allows — settings (prorate, discounting, the penalty, hours
a month, the gap), offers (whole instances, minimum orders, upfronts, caps of 0-3 GPUs,
lead times, a build-to-order copy of a reserved offer), workloads (spot and its share,
single region, residency, peaks below the average), demand (zeros, one huge amount,
quarters), a `demand_scenarios` table, and one case in three written as one .xlsx
workbook with date cells — and runs one command on it in a fresh process:

* `solve --focus` (4 s): FOCUS's EffectiveCost sums to total_cost_usd, bound_usd is at
  most objective_usd, mip_gap is SPEC §4's formula, and `optimal` exactly when the gap
  is within the scenario's `mip_gap`;
* `whatif` (8 s);
* `solve --stochastic --samples 3` and with a random `demand_scenarios` table (8 s):
  the scenarios' probabilities sum to 1, CVaR is at least the expected cost, the bound
  at most the objective, EVPI at least 0 or null;
* `bad`: one to three defects that SPEC §3 calls bad input (a cell not a number, a
  negative one, an unknown reference, a duplicate id, a term with the wrong
  commit_months, a peak over 1, a period that is neither a month nor a quarter, a word
  not among a column's choices, a share over 1, a required cell blank, a required column
  or table missing, demand with an SLO at a site off the map, an existing contract that
  ends before it starts), then one of the commands above: exit 2, no traceback, nothing
  on stdout, no output file written, and every defect named by an error line with its
  table, row and column; errors said elsewhere are shown.

A case fails on exit status 1 or 3, a traceback, a broken property, or a command past
its time limit and 10 % that does not say so; exit 2 (bad input) prints the errors,
which should be right (a table scaling one workload and period twice, a minimum order
above the generated market's cap). It prints one line a case and a count at the end; it
asserts nothing in the test suite (the checker runs inside every solve). Stop 57 ran
some 170 cases: it found two refusals of valid input; stop 58 some 300 bad ones: it
found a missing links table said again in every demand row (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import openpyxl
import pandas as pd

from planner.io.generate import generate
from planner.io.schema import COMMITMENT_TERMS

SIZES = [(4, 3, 2), (6, 4, 3), (8, 5, 4), (20, 8, 6)]
# columns written to a workbook as text, whatever they hold
TEXT_COLUMNS = {"workload", "site", "region", "gpu", "key", "value", "site_a", "site_b",
                "pool", "residency", "source", "scenario", "provider", "country",
                "jurisdiction", "term", "kind", "period", "start_month", "end_month"}


class Market:
    """A generated scenario's tables as text, changed in place and written back."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.changes: list[str] = []

    def table(self, name: str) -> pd.DataFrame:
        return pd.read_csv(self.folder / f"{name}.csv", dtype=str, keep_default_na=False)

    def write(self, name: str, df: pd.DataFrame) -> None:
        df.to_csv(self.folder / f"{name}.csv", index=False)

    def settings(self, rng: random.Random) -> float:
        """Random settings; returns the scenario's mip_gap."""
        st = self.table("settings")
        for key, chance, values in (("tail_policy", .3, ["prorate"]),
                                    ("discount_rate_annual", .3, ["0.1", "0.5"]),
                                    ("unmet_penalty_usd_per_unit_hour", .2,
                                     ["0.001", "1e6"]),
                                    ("hours_per_month", .2, ["720", "1"]),
                                    ("mip_gap", .2, ["0", "0.5"])):
            if rng.random() < chance:
                value = rng.choice(values)
                st = pd.concat([st[st.key != key],
                                pd.DataFrame([{"key": key, "value": value}])])
                self.changes.append(f"{key}={value}")
        self.write("settings", st)
        return float(dict(zip(st.key, st.value)).get("mip_gap", 0.0001))

    def offers(self, rng: random.Random) -> None:
        of = self.table("offers")
        for c in ("gpus_per_instance", "min_gpus", "upfront_usd_per_gpu", "max_gpus",
                  "lead_time_days", "commit_months"):
            if c not in of:
                of[c] = ""
        changed = 0
        for i in of.index:
            r, committed = rng.random(), of.loc[i, "term"] in COMMITMENT_TERMS
            if r < .1:
                of.loc[i, "gpus_per_instance"] = rng.choice(["2", "4", "8"])
            elif r < .15 and committed:
                of.loc[i, "min_gpus"] = rng.choice(["3", "16", "100"])
            elif r < .2 and committed:
                of.loc[i, "upfront_usd_per_gpu"] = rng.choice(["1000", "50000"])
            elif r < .25 and not of.loc[i, "min_gpus"]:  # a cap under a minimum order
                of.loc[i, "max_gpus"] = rng.choice(["0", "1", "3"])  # is bad input
            elif r < .3:
                of.loc[i, "lead_time_days"] = rng.choice(["31", "60", "400"])
            else:
                continue
            changed += 1
        self.changes.append(f"{changed} offers changed")
        reserved = of[of.term == "reserved"]
        if len(reserved) and rng.random() < .3:
            row = reserved.iloc[rng.randrange(len(reserved))].copy()
            row["term"], row["commit_months"] = "build_to_order", "36"
            row["lead_time_days"], row["gpus_per_instance"] = "90", "8"
            of = pd.concat([of, pd.DataFrame([row])])
            self.changes.append("build to order")
        self.write("offers", of)

    def workloads(self, rng: random.Random) -> None:
        wl = self.table("workloads")
        for c in ("allow_spot", "max_spot_share", "single_region", "residency",
                  "unmet_penalty_usd_per_unit_hour"):
            if c not in wl:
                wl[c] = ""
        changed = 0
        for i in wl.index:
            r = rng.random()
            if r < .15:
                wl.loc[i, "allow_spot"] = "true"
                wl.loc[i, "max_spot_share"] = rng.choice(["0.3", "1", "0"])
            elif r < .25 and wl.loc[i, "kind"] != "training":
                wl.loc[i, "single_region"] = "true"
            elif r < .35:
                wl.loc[i, "residency"] = rng.choice(["EU", "US;JP", "DE", "ZZ"])
            elif r < .45:
                wl.loc[i, "peak_to_average"] = rng.choice(["0.5", "0", "0.9"])
                wl.loc[i, "peak_hours_share"] = rng.choice(["0.5", "0.3"])
            elif r < .5:
                wl.loc[i, "unmet_penalty_usd_per_unit_hour"] = rng.choice(["0", "5"])
            else:
                continue
            changed += 1
        self.changes.append(f"{changed} workloads changed")
        self.write("workloads", wl)

    def demand(self, rng: random.Random) -> None:
        dm = self.table("demand")
        if rng.random() < .3:
            dm.loc[dm.index[: max(1, len(dm) // 4)], "amount"] = "0"
            self.changes.append("zeros")
        if rng.random() < .2:
            dm.loc[dm.index[0], "amount"] = "1e7"
            self.changes.append("a huge amount")
        if rng.random() < .3:  # a quarter's first month's amount for the quarter
            quarter = (dm.period.str[:4] + "Q"
                       + ((dm.period.str[5:7].astype(int) - 1) // 3 + 1).astype(str))
            dm = dm.assign(period=quarter).drop_duplicates(["workload", "site", "period"])
            self.changes.append("quarters")
        self.write("demand", dm)

    def scenarios(self, rng: random.Random) -> None:
        """A random demand_scenarios table: each scenario's probability on one of its
        rows, a multiplier for all, and rows for one workload, period or both."""
        dm = self.table("demand")
        workloads, periods = sorted(set(dm.workload)), sorted(set(dm.period))
        count = rng.randint(1, 4)
        weights = [rng.random() + 0.05 for _ in range(count)]
        shares = [round(w / sum(weights), 6) for w in weights]
        shares[-1] = round(1 - sum(shares[:-1]), 6)
        rows = []
        for j, share in enumerate(shares):
            own = [{"scenario": f"s{j}", "probability": "", "workload": "", "period": "",
                    "multiplier": rng.choice([0, 0.5, 1, 1.5, 3])}]
            scaled = {("", "")}  # a workload and period scaled twice is bad input
            for _ in range(rng.randint(0, 3)):
                cell = (rng.choice(workloads + [""]), rng.choice(periods + [""]))
                if cell not in scaled:
                    scaled.add(cell)
                    own.append({"scenario": f"s{j}", "probability": "",
                                "workload": cell[0], "period": cell[1],
                                "multiplier": rng.choice([0, 0.7, 2])})
            own[rng.randrange(len(own))]["probability"] = share
            rows += own
        self.write("demand_scenarios", pd.DataFrame(rows))
        self.changes.append(f"{count} scenarios in {len(rows)} rows")

    def as_workbook(self) -> Path:
        """The scenario as one workbook, months as date cells, numbers as numbers."""
        wb = openpyxl.Workbook()
        wb.remove(wb.active)
        for f in sorted(self.folder.glob("*.csv")):
            df = pd.read_csv(f, dtype=str, keep_default_na=False)
            ws = wb.create_sheet(f.stem)
            ws.append(list(df.columns))
            for row in df.itertuples(index=False):
                ws.append([_cell(c, v) for c, v in zip(df.columns, row)])
        path = self.folder.with_suffix(".xlsx")
        wb.save(path)
        self.changes.append("workbook")
        return path


# -- bad input (mode `bad`) ---------------------------------------------------------------
# Each defect breaks one cell, column or table of a valid market in a way SPEC §3 calls
# bad input, and returns where the error must be said: (table, row as the user sees it
# or None, column or None). Rows are appended, never inserted, so that an earlier
# defect's row keeps its number.


def _row(df: pd.DataFrame, i) -> int:
    return df.index.get_loc(i) + 2  # the header is row 1


def _pick(rng: random.Random, df: pd.DataFrame, mask=None):
    rows = df.index[mask] if mask is not None else df.index
    return rows[rng.randrange(len(rows))] if len(rows) else None


def _set_cell(name: str, places, value):
    """A defect that sets one cell of a random row: at `places`, a (table, column) or a
    list to draw one from; to `value`, a text ({column} stands for the column's name) or
    a list to draw one from."""
    def defect(m: Market, rng):
        table, column = rng.choice(places) if isinstance(places, list) else places
        df = m.table(table)
        if column not in df:
            df[column] = ""
        i = _pick(rng, df)
        if i is None:
            return None
        df.loc[i, column] = (rng.choice(value) if isinstance(value, list)
                             else value.format(column=column))
        m.write(table, df)
        return table, _row(df, i), column
    defect.__name__ = name
    return defect


_not_a_number = _set_cell(
    "_not_a_number", [("offers", "usd_per_gpu_hour"), ("demand", "amount"),
                      ("throughput", "units_per_gpu"), ("links", "rtt_ms")],
    ["abc", "1,5", "$3", "nan", "inf", "--2"])
_negative = _set_cell(
    "_negative", [("offers", "usd_per_gpu_hour"), ("demand", "amount"),
                  ("throughput", "units_per_gpu"), ("links", "rtt_ms"),
                  ("existing", "gpus")],
    "-3")
_unknown_reference = _set_cell(
    "_unknown_reference", [("demand", "workload"), ("demand", "site"), ("offers", "gpu"),
                           ("offers", "region"), ("regions", "site"), ("throughput", "gpu"),
                           ("throughput", "workload"), ("links", "site_b"),
                           ("existing", "region")],
    "no-such-{column}")
_bad_period = _set_cell("_bad_period", ("demand", "period"),
                        ["2027-13", "2027Q5", "soon", "27-01", "2027/01"])
_share_over_one = _set_cell(
    "_share_over_one", [("offers", "interruption_rate"), ("workloads", "max_spot_share"),
                        ("workloads", "peak_hours_share")], "1.5")
_blank_required = _set_cell(
    "_blank_required", [("regions", "provider"), ("sites", "country"), ("offers", "term"),
                        ("demand", "amount"), ("throughput", "units_per_gpu")], "")


def _duplicate(m: Market, rng):
    name, column = rng.choice([("gpus", "gpu"), ("sites", "site"), ("regions", "region"),
                               ("workloads", "workload")])
    df = m.table(name)
    df = pd.concat([df, df.loc[[_pick(rng, df)]]], ignore_index=True)
    m.write(name, df)
    return name, len(df) + 1, column


def _term_and_months(m: Market, rng):
    df = m.table("offers")
    if "commit_months" not in df:
        df["commit_months"] = ""
    committed = df.term.isin(COMMITMENT_TERMS)
    if rng.random() < .5 and committed.any():
        i = _pick(rng, df, committed)
        df.loc[i, "commit_months"] = rng.choice(["", "0"])
    else:
        i = _pick(rng, df, ~committed)
        df.loc[i, "commit_months"] = "12"
    m.write("offers", df)
    return "offers", _row(df, i), "commit_months"


def _peak_over_one(m: Market, rng):
    df = m.table("workloads")
    i = _pick(rng, df)
    df.loc[i, "peak_hours_share"], df.loc[i, "peak_to_average"] = "0.5", "3"
    m.write("workloads", df)
    return "workloads", _row(df, i), None


def _bad_choice(m: Market, rng):
    name, column, value = rng.choice([("offers", "term", "weekly"),
                                      ("workloads", "kind", "serving"),
                                      ("workloads", "allow_spot", "perhaps"),
                                      ("settings", "value", "2027-1x")])
    df = m.table(name)
    if column not in df:
        df[column] = ""
    i = (df.index[df.key == "start_month"][0] if name == "settings"
         else _pick(rng, df))
    df.loc[i, column] = value
    m.write(name, df)
    return name, _row(df, i), None if name == "settings" else column


def _missing_column(m: Market, rng):
    name, column = rng.choice([("demand", "amount"), ("offers", "usd_per_gpu_hour"),
                               ("regions", "site"), ("throughput", "units_per_gpu")])
    m.write(name, m.table(name).drop(columns=[column]))
    return name, None, column


def _missing_table(m: Market, rng):
    name = rng.choice(["links", "gpus", "throughput", "demand"])
    (m.folder / f"{name}.csv").unlink()
    return name, None, None


def _unreachable_site(m: Market, rng):
    """A site with no link, and demand there of a workload with a latency SLO."""
    sites = m.table("sites")
    sites = pd.concat([sites, pd.DataFrame([{"site": "island", "country": "IS",
                                             "jurisdiction": "EU"}])], ignore_index=True)
    m.write("sites", sites)
    wl, dm = m.table("workloads"), m.table("demand")
    slo = wl[wl.latency_slo_ms != ""].workload if "latency_slo_ms" in wl else []
    if not len(slo):
        return None
    row = dm[dm.workload == slo.iloc[0]].iloc[0].copy()
    row["site"] = "island"
    dm = pd.concat([dm, pd.DataFrame([row])], ignore_index=True)
    m.write("demand", dm)
    return "demand", len(dm) + 1, "site"


def _existing_backwards(m: Market, rng):
    df = m.table("existing")
    i = _pick(rng, df)
    if i is None:
        return None
    df.loc[i, "start_month"], df.loc[i, "end_month"] = "2027-06", "2027-02"
    m.write("existing", df)
    return "existing", _row(df, i), None


# a table missing a required column has its rows left out: each cell, each name of
# another table's row, each row's own rules and whether two rows are the same are still
# checked (the last unless the column missing is of the rows' key)
DEFECTS = [_not_a_number, _negative, _unknown_reference, _duplicate, _term_and_months,
           _peak_over_one, _bad_period, _bad_choice, _share_over_one, _blank_required,
           _missing_column, _missing_table, _unreachable_site, _existing_backwards]


def _said(where: tuple, error: str, workbook: bool) -> bool:
    """Whether the error line names the defect's place."""
    table, row, column = where
    return ((table if workbook else f"{table}.csv") in error
            and (row is None or f"row {row}," in error)
            and (column is None or column in error))


def _unsaid(where: list[tuple], stderr: str, workbook: bool) -> tuple[list[str], str]:
    """The defects whose place no error line names, and the errors at no defect's
    place (said, for a reader to judge: a generated change may be bad input too)."""
    errors = [line for line in stderr.splitlines() if line.startswith("error")]
    unsaid = [f"{w[0]} row {w[1]} column {w[2]} not said" for w in where
              if not any(_said(w, e, workbook) for e in errors)]
    others = [e for e in errors if not any(_said(w, e, workbook) for w in where)]
    return unsaid, f"{len(others)} other errors: {'; '.join(others[:2])}" if others else ""


def _cell(column: str, text: str):
    if text == "":
        return None
    month = len(text) == 7 and text[4] == "-"
    if column in ("period", "start_month", "end_month") and month:
        try:
            return dt.datetime(int(text[:4]), int(text[5:]), 1)
        except ValueError:  # not a month: stays text, for the validator to refuse
            return text
    if column in TEXT_COLUMNS:
        return text
    try:
        return float(text)
    except ValueError:
        return text


def _broken_solve(out: str, focus: Path, mip_gap: float) -> list[str]:
    j = json.loads(out)
    broken = []
    effective = pd.read_csv(focus).EffectiveCost.sum()
    total = j["total_cost_usd"]
    if abs(effective - total) > 1e-6 * max(1.0, abs(total)) + 0.01:
        broken.append(f"FOCUS sums to {effective}, total_cost_usd {j['total_cost_usd']}")
    if j["bound_usd"] > j["objective_usd"] * (1 + 1e-9) + 1e-6:
        broken.append(f"bound {j['bound_usd']} over objective {j['objective_usd']}")
    changeable = j["objective_usd"] - j["unservable_penalty_usd"]
    if changeable > 1e-6:
        gap = (j["objective_usd"] - j["bound_usd"]) / changeable
        if abs(j["mip_gap"] - gap) > 1e-6:
            broken.append(f"mip_gap {j['mip_gap']}, SPEC's formula {gap}")
    if (j["status"] == "optimal") != (j["mip_gap"] <= mip_gap + 1e-12):
        broken.append(f"status {j['status']} at gap {j['mip_gap']} (asked {mip_gap})")
    return broken


def _broken_stochastic(out: str) -> list[str]:
    st = json.loads(out)["stochastic"]
    broken = []
    total = sum(s["probability"] for s in st["scenarios"])
    if abs(total - 1) > 1e-6:
        broken.append(f"probabilities sum to {total}")
    if st["cvar_usd"] < st["expected_cost_usd"] * (1 - 1e-9) - 1e-6:
        broken.append("CVaR under the expected cost")
    if st["bound_usd"] > st["objective_usd"] * (1 + 1e-9) + 1e-6:
        broken.append("bound over the objective")
    if st["evpi_usd"] is not None and st["evpi_usd"] < -1e-6:
        broken.append(f"EVPI {st['evpi_usd']}")
    return broken


def _unsaid_overrun(wall: float, limit: float, stderr: str) -> list[str]:
    """A command past its time limit and the 10 % SPEC §4 allows must say so (the
    writing alone, or what it must do at the least, takes longer here). 0.5 s is left
    for the process's start and end, which its own clock does not see whole."""
    said = "past --time-limit" in stderr or "leaves no time to plan" in stderr
    if wall > 1.1 * limit + 0.5 and not said:
        return [f"{wall:.1f} s at --time-limit {limit:g}, and not said"]
    return []


def run_case(seed: int, modes: list[str], root: Path,
             limit: float | None = None) -> tuple[str, list[str], str]:
    """(what ran, what broke, the errors of a bad input) for one case; of a case made
    bad on purpose, the errors said besides its defects'. `limit`: every command's
    --time-limit (else 4 s for solve, 8 s for the others)."""
    rng = random.Random(seed)
    case = root / f"case{seed}"
    shutil.rmtree(case, ignore_errors=True)
    w, r, m = rng.choice(SIZES)
    market = Market(case / "scn")
    generate(market.folder, w, r, m, seed % 7 + 1)
    mip_gap = market.settings(rng)
    market.offers(rng)
    market.workloads(rng)
    market.demand(rng)
    mode = rng.choice(modes)
    if mode == "table":
        market.scenarios(rng)
    where = []
    if mode == "bad":
        chosen = rng.sample(DEFECTS, rng.randint(1, 3))
        if _missing_table in chosen:  # nothing else of a missing table is said
            chosen = [_missing_table]
        done = [(d, w) for d, w in ((d, d(market, rng)) for d in chosen) if w]
        market.changes.append(", ".join(f"{d.__name__[1:]} {w}" for d, w in done))
        dropped = {(w[0], w[2]) for d, w in done if d is _missing_column}
        # a site no link names is off the map whatever else the map's rows get wrong,
        # unless a column of their sites is missing (a row may then join any site)
        map_unread = any(d is _missing_column and w[0] in ("links", "regions")
                         for d, w in done)
        where = [w for d, w in done if not (d is _unreachable_site and map_unread)
                 and not (d is not _missing_column and (w[0], w[2]) in dropped)]
        mode = rng.choice(["solve", "whatif", "samples"])
        if not where:
            return f"bad {mode}", [], "no defect applied"
    workbook = rng.random() < 1 / 3
    scenario = market.as_workbook().name if workbook else "scn"
    limit = limit or (4 if mode == "solve" else 8)
    args = {"solve": ["solve", scenario, "--json", "-o", "p.xlsx", "--focus", "f.csv"],
            "whatif": ["whatif", scenario, "--json", "-o", "w.xlsx"],
            "samples": ["solve", scenario, "--stochastic", "--samples", "3", "--json",
                        "-o", "s.xlsx"],
            "table": ["solve", scenario, "--stochastic", "--json", "-o", "s.xlsx"]}[mode]
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "planner", *args, "--time-limit",
                           f"{limit:g}"], capture_output=True, text=True, timeout=600,
                          cwd=case)
    wall = time.perf_counter() - started
    what = (f"{'bad ' if where else ''}{mode} {w}x{r}x{m} {wall:.1f}s "
            f"({', '.join(market.changes)})")
    if done.returncode not in (0, 2) or "Traceback" in done.stderr:
        return what, [f"exit {done.returncode}: {done.stderr[-1500:]}"], ""
    overrun = _unsaid_overrun(wall, limit, done.stderr) if done.returncode == 0 else []
    if where:
        written = [f.name for f in case.iterdir() if f.suffix in (".xlsx", ".csv")
                   and f.stem in ("p", "f", "w", "s")]
        broken = ([f"exit {done.returncode}, not 2"] if done.returncode != 2 else [])
        broken += [f"{name} written" for name in written]
        broken += ["stdout not empty"] if done.stdout.strip() else []
        unsaid, others = _unsaid(where, done.stderr, workbook)
        return what, broken + unsaid, others
    if done.returncode == 2:
        errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
        return what, [], "; ".join(errors[:3])
    if mode == "solve":
        return what, overrun + _broken_solve(done.stdout, case / "f.csv", mip_gap), ""
    if mode in ("samples", "table"):
        return what, overrun + _broken_stochastic(done.stdout), ""
    return what, overrun, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0, help="the first case's seed")
    parser.add_argument("--modes", default="solve,whatif,samples,table",
                        help="any of solve, whatif, samples, table and bad")
    parser.add_argument("--keep", type=Path, help="folder to keep the cases in")
    parser.add_argument("--time-limit", type=float,
                        help="every command's (default: 4 s for solve, 8 s for the others)")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="planner-fuzz-"))
    modes = args.modes.split(",")
    failed = refused = 0
    for seed in range(args.seed, args.seed + args.count):
        what, broken, errors = run_case(seed, modes, root, args.time_limit)
        failed += bool(broken)
        refused += bool(errors)
        verdict = "FAILED " + " | ".join(broken) if broken else (
            f"bad input: {errors}" if errors else "ok")
        print(f"case {seed}: {what}: {verdict}", flush=True)
    kept = args.keep is not None or failed
    print(f"{args.count} cases: {failed} failed, {refused} refused as bad input"
          + (f" (cases in {root})" if kept else ""))
    if not kept:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
