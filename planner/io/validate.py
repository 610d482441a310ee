"""Turn raw tables into a typed `Scenario`, reporting every problem at once (SPEC §3).

Three passes, each collecting issues rather than stopping at the first:
1. tables and columns: missing, unknown, duplicated;
2. cells: type, range, blanks against the schema's defaults (planner.io.parse);
3. rules between rows and tables: ids, references, terms, peaks, reachability.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections import defaultdict
from pathlib import Path

import networkx as nx

from planner.io.issues import Collector, Issue, ScenarioError
from planner.io.load import RawScenario, RawTable, load_raw
from planner.io.parse import (
    BLANK,
    CONTROL_IN_ID,
    CellError,
    parse_cell,
    storable,
    typed_rows,
)
from planner.io.scenario import (
    Demand,
    DemandScenario,
    Existing,
    Gpu,
    Link,
    Offer,
    Region,
    Scenario,
    Settings,
    Site,
    Throughput,
    Workload,
)
from planner.io.schema import (
    COMMITMENT_TERMS,
    PAY_AS_YOU_GO,
    SETTINGS,
    SETTINGS_BY_NAME,
    TABLES,
    TABLES_BY_NAME,
)

EPS = 1e-9
# A demand amount this many times the median of its workload's other amounts, or needing
# more GPUs than exist (tens of millions were shipped by 2026), is warned about.
IMPLAUSIBLE_RATIO = 1000.0
MOST_GPUS = 1e8


def _unknown_column_text(table: RawTable, name: str, out: Collector) -> None:
    """An ignored column is still copied into the workbook's input sheets: its text must
    be storable there."""
    for number, cells in table.rows:
        v = cells.get(name)
        if isinstance(v, str):
            try:
                storable(v)
            except CellError as e:
                out.error(table.label, number, name, str(e))


def validate(raw: RawScenario) -> tuple[Scenario | None, list[Issue]]:
    """Check a raw scenario; return the typed scenario (None if any error) and all issues."""
    issues: list[Issue] = list(raw.issues)
    out = Collector(issues)
    if any(i.table == "scenario" for i in issues):
        return None, issues

    rows: dict[str, list] = {}
    labels: dict[str, str] = {}
    for schema in TABLES:
        table = raw.tables.get(schema.name)
        labels[schema.name] = table.label if table else raw.label_of(schema.name)
        if table is not None and schema.optional and not table.columns and not table.rows:
            table = None  # an empty file (not even a header) of a table that may be absent
        if table is None:
            if not schema.optional and schema.name not in raw.unreadable:
                out.error(labels[schema.name], None, None, "required table is missing")
            rows[schema.name] = []
            continue
        missing = [c.name for c in schema.columns if c.required and c.name not in table.columns]
        for name in missing:
            out.error(table.label, 1, name, "required column is missing")
        for name in table.columns:
            if CONTROL_IN_ID.search(name):
                out.error(table.label, 1, repr(name), "a column name holds a control "
                          "character")
            elif name not in schema.column_names:
                out.warn(table.label, 1, name, f"unknown column '{name}'; ignored")
                _unknown_column_text(table, name, out)
        # a table missing a required column: its rows' other cells are checked all the
        # same (every problem at once), and the rows are left out
        rows[schema.name] = typed_rows(table, schema, out, set(missing))

    # (settings that could not be read are not also missing, setting by setting)
    settings = None if "settings" in raw.unreadable else \
        _settings(rows["settings"], labels["settings"], out)
    # a table that could not be read, or is missing, is not known to name nothing: a
    # reference to it is not reported as unknown (one error, not one per row)
    absent = set(raw.unreadable) | {s.name for s in TABLES if s.name not in raw.tables}
    builder = _Builder(rows, labels, settings, out, _named(raw), absent)
    scenario_parts = builder.build()
    errors = [i for i in issues if i.severity == "error"]
    if errors or settings is None:
        return None, _sorted(issues)
    tables_as_read = {
        name: (t.label, t.columns, [cells for _, cells in t.rows])
        for name, t in raw.tables.items()
    }
    scenario = Scenario(
        name=raw.name,
        settings=settings,
        warnings=tuple(_sorted(issues)),
        tables_as_read=tables_as_read,
        **scenario_parts,
    )
    return scenario, _sorted(issues)


def table_labels(raw: RawScenario, tables) -> set[str]:
    """How the user knows each of `tables` (named as in TABLES), found or missing."""
    return {raw.tables[n].label if n in raw.tables else raw.label_of(n) for n in tables}


def errors_in(raw: RawScenario, tables) -> list[Issue]:
    """The errors `validate` finds in `tables` of `raw`, those of its other tables left
    out: what a command that reads or writes those tables alone must refuse (market
    import, throughput)."""
    if any(i.table == "scenario" for i in raw.issues):
        return []  # not read at all: said by the command that read it
    labels = table_labels(raw, tables)
    return [i for i in validate(raw)[1] if i.severity == "error" and i.table in labels]


def _sorted(issues: list[Issue]) -> list[Issue]:
    order = {t.name: i for i, t in enumerate(TABLES)}

    def key(i: Issue):
        name = i.table.split(".")[0].replace("sheet ", "").lower()
        return (order.get(name, -1), i.table, i.row or 0, i.column or "", i.message)

    # stable: problems in the order of the tables, then rows
    return sorted(dict.fromkeys(issues), key=key)


def _settings(rows, label: str, out: Collector) -> Settings | None:
    found: dict[str, object] = {}
    where: dict[str, int] = {}
    for number, values, ok in rows:
        if not ok:
            continue
        key = str(values["key"]).strip().lower()
        col = SETTINGS_BY_NAME.get(key)
        if col is None:
            out.warn(label, number, "key", f"unknown setting '{values['key']}'; ignored")
            continue
        if key in found:
            out.error(label, number, "key", f"setting '{key}' is given twice "
                      f"(also row {where[key]})")
            continue
        where[key] = number
        try:
            v = parse_cell(col, values["value"])
        except CellError as e:
            out.error(label, number, "value", f"{key}: {e}")
            found[key] = None
            continue
        if v is BLANK and col.required:
            out.error(label, number, "value", f"required setting '{key}' has no value")
            found[key] = None
            continue
        found[key] = col.default if v is BLANK else v
    complete = True
    for col in SETTINGS:
        if col.required and found.get(col.name) is None:
            if col.name not in found:
                out.error(label, None, "key", f"required setting '{col.name}' is missing")
            complete = False
    if not complete:
        return None
    # a bad optional setting (said above) takes its default here, so that the rules that
    # read the settings still check the other tables (an outside audit: time_limit_s
    # 'abc' had hidden a demand row given twice)
    kwargs = {c.name: found.get(c.name, c.default) for c in SETTINGS}
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    kwargs["horizon_months"] = int(kwargs["horizon_months"])
    return Settings(**kwargs)


class PoolReplicaSizes:
    """Workloads of one pool share its replicas, so on each GPU type their throughput
    rows have one gpus_per_replica (SPEC §2): the first size seen of each (pool, GPU
    type), and the rows that differ from it. Both the validator and `planner
    throughput` (whose table must pass it) hold rows to it."""

    def __init__(self):
        self.first: dict[tuple[str, str], tuple[int, object]] = {}

    def clash(self, pool: str, gpu: str, size: int, who) -> tuple[int, object] | None:
        """The first (size, who) of `pool` on `gpu` where `size` is another, else None
        (a first row is recorded with `who`: whatever names it in a message)."""
        first = self.first.setdefault((pool, gpu), (size, who))
        return first if first[0] != size else None


class _Builder:
    """Cross-row and cross-table rules, building the typed rows as it goes."""

    def __init__(self, rows, labels, settings: Settings | None, out: Collector,
                 named: dict[str, set], absent: set[str] = frozenset()):
        self.rows, self.labels, self.settings, self.out = rows, labels, settings, out
        self.named = named  # _named: what each table names, valid rows or not
        self.absent = absent  # tables unreadable or missing: names unknown
        self.duplicates: list[tuple] = []  # (table, row number, values) left out

    def _unique(self, table: str, key_of, what: str):
        """Rows whose key is new; duplicates reported with the first row's number. A row
        left out for a cell that did not parse still has its key checked where the key's
        cells did parse: two rows of one id are a problem of their own (every problem
        at once, SPEC §3)."""
        seen: dict = {}
        for number, values, ok in self.rows[table]:
            try:
                key = key_of(values)
            except KeyError:  # a cell of its key did not parse, or its column is missing
                continue
            if key is None or (isinstance(key, tuple) and None in key):
                continue  # a blank cell of its key, an error of its own: not a duplicate
            if key in seen:
                self.out.error(self.labels[table], number, what.split(",")[0].strip(),
                               f"duplicate {what} {key!r} (first at row {seen[key]})")
                if ok:  # (a row left out is checked as such: _references_of_rows_left_out)
                    self.duplicates.append((table, number, values))
                continue
            seen[key] = number
            if ok:
                yield number, values

    def _ref(self, table, number, column, value, known, what) -> bool:
        """Whether `value` names a valid `what`; an error if it names none at all (a
        row that names an invalid one is left out silently: that row's problems are
        reported where they are, not once more in every row that refers to it)."""
        if value is None or value in known:
            return True
        if value not in self.named.get(what, ()) and _NAMED_BY[what][0] not in self.absent:
            self.out.error(self.labels[table], number, column, f"unknown {what} '{value}'")
        return False

    def _refs(self, table, number, values, known: dict) -> bool:
        """Whether every name of the row `values` of `table` that refers to another table
        (_REFERENCES) names a valid row of it (`known`, by what it names); each that
        does not is reported (`_ref`). A cell that did not parse is not checked."""
        ok = True
        for column, what in _REFERENCES.get(table, ()):
            if values.get(column) is not None:
                ok &= self._ref(table, number, column, values[column], known[what], what)
        return ok

    def build(self) -> dict:
        gpus = [Gpu(**v) for _, v in self._unique("gpus", lambda v: v["gpu"], "gpu")]
        gpu_names = {g.gpu for g in gpus}
        sites = self._sites()
        site_names = {s.site for s in sites}
        links = self._links(site_names)
        regions = self._regions(site_names)
        region_names = {r.region for r in regions}
        offers = self._offers(region_names, gpu_names)
        workloads, checked = self._workloads(sites)
        workload_names = {w.workload for w in workloads}
        throughput = self._throughput(workload_names, gpu_names, checked)
        demand = self._demand(workloads, checked, site_names, sites, links, regions)
        self._implausible_demand(throughput)
        self._demand_with_no_throughput(workload_names)
        existing = self._existing(region_names, gpu_names)
        self._references_of_rows_left_out({"gpu": gpu_names, "site": site_names,
                                           "region": region_names,
                                           "workload": workload_names})
        return dict(
            gpus=tuple(gpus), sites=tuple(sites), links=tuple(links), regions=tuple(regions),
            offers=tuple(offers), workloads=tuple(workloads), throughput=tuple(throughput),
            demand=tuple(demand), existing=tuple(existing),
            demand_scenarios=tuple(self._demand_scenarios(workload_names)),
        )

    def _references_of_rows_left_out(self, known: dict[str, set]) -> None:
        """The names a row refers to, checked also where the row is left out for another
        problem (a cell that does not parse, a duplicate): every problem at once."""
        left_out = [(table, number, values) for table in _REFERENCES
                    for number, values, ok in self.rows[table] if not ok]
        for table, number, values in left_out + self.duplicates:
            self._refs(table, number, values, known)

    def _sites(self):
        sites = []
        for number, v in self._unique("sites", lambda v: v["site"], "site"):
            country = self._country(number, v)
            if country is not None:
                sites.append(Site(v["site"], country, str(v["jurisdiction"]).strip().upper(),
                                  v["lat"], v["lon"]))
        for number, v in self._left_out("sites"):
            self._country(number, v)
        return sites

    def _country(self, number: int, v: dict) -> str | None:
        """The site row's country code, upper case (None: none, or not a valid one)."""
        if v.get("country") is None:
            return None
        country = str(v["country"]).strip().upper()
        if not re.fullmatch(r"[A-Z]{2}", country):
            self.out.error(self.labels["sites"], number, "country",
                           f"'{v['country']}' is not an ISO 3166 alpha-2 code (two letters)")
            return None
        if country in _RESERVED_COUNTRIES:
            self.out.warn(self.labels["sites"], number, "country",
                          f"'{country}' is reserved in ISO 3166, not a country's code"
                          + (" (the United Kingdom's is GB)" if country == "UK" else "")
                          + f": a residency must name it '{country}' to match")
        elif country not in _countries():
            self.out.error(self.labels["sites"], number, "country",
                           f"'{v['country']}' is no country's ISO 3166 alpha-2 code")
            return None
        return country

    def _links(self, site_names):
        links = []
        label = self.labels["links"]
        for number, v in self._unique(
            "links", lambda v: tuple(sorted((v["site_a"], v["site_b"]))), "site_a, site_b pair"
        ):
            ok = self._refs("links", number, v, {"site": site_names})
            if self._link_rules(label, number, v) and ok:
                links.append(Link(v["site_a"], v["site_b"], v["rtt_ms"]))
        for number, v in self._left_out("links"):
            self._link_rules(label, number, v)
        return links

    def _link_rules(self, label: str, number: int, v: dict) -> bool:
        """A link row's own rule; whether it keeps it."""
        if v.get("site_a") is not None and v.get("site_a") == v.get("site_b"):
            self.out.error(label, number, "site_b", "a link joins a site to itself")
            return False
        return True

    def _regions(self, site_names):
        regions = []
        for number, v in self._unique("regions", lambda v: v["region"], "region"):
            if self._refs("regions", number, v, {"site": site_names}):
                regions.append(Region(**v))
        return regions

    def _offers(self, region_names, gpu_names):
        offers = []
        label = self.labels["offers"]

        def key(v):  # commit_months as written: a pay-as-you-go row's is said as such
            return (v["region"], v["gpu"], v["term"], v["commit_months"] or 0)

        for number, v in self._unique("offers", key, "region, gpu, term, commit_months"):
            ok = self._refs("offers", number, v, {"region": region_names, "gpu": gpu_names})
            if self._offer_rules(label, number, v) and ok:
                fields = dict(v)
                fields["commit_months"] = int(v["commit_months"] or 0)
                fields["source"] = v["source"] or ""
                offers.append(Offer(**fields))
        for number, v in self._left_out("offers"):
            self._offer_rules(label, number, v)
        return offers

    def _left_out(self, table: str):
        """(row number, the cells that parsed) of the rows of `table` left out for a cell
        that did not parse or for repeating an earlier row's key (once `_unique` has
        run): their own rules are checked all the same, on the cells they have (every
        problem at once, SPEC §3)."""
        partial = [(number, v) for number, v, ok in self.rows[table] if not ok]
        return sorted(partial + [(number, v) for t, number, v in self.duplicates
                                 if t == table], key=lambda row: row[0])

    def _offer_rules(self, label: str, number: int, v: dict) -> bool:
        """An offer row's own rules, on the cells it has; whether it keeps them all
        (warnings aside)."""
        ok = True
        term, months = v.get("term"), v.get("commit_months")
        low, cap = v.get("min_gpus"), v.get("max_gpus")
        if term in COMMITMENT_TERMS:
            if "commit_months" in v and (not months or months < 1):
                self.out.error(label, number, "commit_months",
                               f"a {term} commitment needs commit_months ≥ 1")
                ok = False
        elif term is not None and months:
            self.out.error(label, number, "commit_months",
                           f"{term} is pay-as-you-go and takes no commit_months "
                           f"(got {months})")
            ok = False
        if cap is not None and low is not None and low > cap:
            self.out.error(label, number, "min_gpus",
                           f"min_gpus {low} exceeds max_gpus {cap}")
            ok = False
        size = v.get("gpus_per_instance") or 1
        if cap is not None and 0 < cap < size:
            self.out.warn(label, number, "max_gpus",
                          f"max_gpus {cap} holds no whole instance of {size} "
                          "GPUs (gpus_per_instance): no plan can use this offer")
        if term in PAY_AS_YOU_GO and low:
            self.out.warn(label, number, "min_gpus",
                          "min_gpus applies to commitments only; ignored")
        if term in PAY_AS_YOU_GO and v.get("upfront_usd_per_gpu"):
            self.out.warn(label, number, "upfront_usd_per_gpu",
                          "an upfront payment applies to commitments only; ignored")
        if term is not None and term != "spot" and v.get("interruption_rate"):
            self.out.warn(label, number, "interruption_rate",
                          "interruption_rate applies to spot only; ignored")
        if v.get("price_date") and self.settings:
            self._stale(label, number, v["price_date"])
        return ok

    def _stale(self, label: str, number: int, price_date: dt.date):
        """Warn about a price read more than stale_price_days before the plan starts."""
        st = self.settings
        start = dt.date(*st.start_month, 1)
        age = (start - price_date).days
        if age > st.stale_price_days:
            self.out.warn(label, number, "price_date",
                          f"price dated {price_date.isoformat()} is {age} days older than "
                          f"start_month {st.month(0)} (stale after {st.stale_price_days} days)")

    def _workloads(self, sites):
        """The valid workloads, and by name every workload to check the rows naming it
        against: also those left out for a problem of their own (a rule, or a cell that
        did not parse: its other cells still count), so that their rows are checked all
        the same: every problem at once (SPEC §3)."""
        places = {s.jurisdiction for s in sites} | {s.country for s in sites}
        # and those of sites left out for a problem of their own (a latitude of 95 had
        # also made the residency naming its jurisdiction "no site's": an audit)
        places |= {str(v[c]).strip().upper() for _, v in self._left_out("sites")
                   for c in ("jurisdiction", "country") if v.get(c) is not None}
        label = self.labels["workloads"]
        default_penalty = (self.settings.unmet_penalty_usd_per_unit_hour
                           if self.settings else 1000.0)
        workloads: list[Workload] = []
        checked: dict[str, Workload] = {}
        complete = [(n, v, True) for n, v in self._unique("workloads",
                                                          lambda v: v["workload"], "workload")]
        partial = [(n, v, False) for n, v in self._left_out("workloads")
                   if v.get("workload") is not None]
        for number, v, ok in complete + partial:
            share, ratio = v.get("peak_hours_share"), v.get("peak_to_average")
            if share is not None and ratio is not None and share * ratio > 1 + EPS:
                self.out.error(label, number, "peak_hours_share",
                               f"peak_hours_share × peak_to_average = {share * ratio:g} "
                               "exceeds 1")
                ok = False
            elif share and ratio is not None and ratio < 1 - EPS:
                if share >= 1 - EPS:
                    self.out.error(label, number, "peak_to_average",
                                   f"{ratio:g} is below 1 with peak_hours_share 1: no "
                                   "hours are left off-peak to keep the month's average "
                                   "at its amount")
                    ok = False
                else:
                    self.out.warn(label, number, "peak_to_average",
                                  f"{ratio:g} is below 1: the workload is quieter in the "
                                  f"peak hours (the first {share * 100:g} % of each "
                                  "month) and busier in the others")
            residency = tuple(
                dict.fromkeys(p.strip().upper() for p in (v.get("residency") or "").split(";")
                              if p.strip())
            )
            for place in residency:
                if place not in places and "sites" not in self.absent:
                    self.out.warn(label, number, "residency",
                                  f"'{place}' is neither the jurisdiction nor the country of "
                                  "any site")
            kind = v.get("kind")
            allow_spot = v.get("allow_spot")
            single = v.get("single_region")
            penalty = v.get("unmet_penalty_usd_per_unit_hour")
            workload = Workload(
                workload=v["workload"], kind=kind, latency_slo_ms=v.get("latency_slo_ms"),
                residency=residency,
                allow_spot=allow_spot if allow_spot is not None else kind == "burst",
                max_spot_share=v.get("max_spot_share", 1.0),
                peak_to_average=ratio if ratio is not None else 1.0,
                peak_hours_share=share if share is not None else 0.0,
                egress_gb_per_unit_hour=v.get("egress_gb_per_unit_hour", 0.0),
                single_region=single if single is not None else kind == "training",
                pool=v.get("pool") or None,
                unmet_penalty_usd_per_unit_hour=(
                    penalty if penalty is not None else default_penalty),
            )
            checked.setdefault(workload.workload, workload)
            if ok:
                workloads.append(workload)
        return workloads, checked

    def _throughput(self, workload_names, gpu_names, checked: dict[str, Workload]):
        """Rows of valid workloads (`workload_names`); those of every workload `checked`
        are checked."""
        label = self.labels["throughput"]
        pools = {w.workload: w.pool for w in checked.values() if w.pool}
        sizes = PoolReplicaSizes()
        rows = []
        for number, v in self._unique(
            "throughput", lambda v: (v["workload"], v["gpu"]), "workload, gpu pair"
        ):
            ok = self._refs("throughput", number, v,
                            {"workload": checked, "gpu": gpu_names})
            pool = pools.get(v["workload"])
            if ok and pool:
                size = v["gpus_per_replica"]
                first = sizes.clash(pool, v["gpu"], size, (number, v["workload"]))
                if first is not None:
                    (size0, (number0, workload0)) = first
                    self.out.error(
                        label, number, "gpus_per_replica",
                        f"pool '{pool}' on {v['gpu']}: {size} GPUs per replica, but "
                        f"{workload0} (row {number0}) has {size0}")
                    ok = False
            if ok and v["workload"] in workload_names:
                rows.append(Throughput(v["workload"], v["gpu"], v["units_per_gpu"],
                                       int(v["gpus_per_replica"])))
        return rows

    def _whole_map(self, sites, links, regions) -> bool:
        """Whether the network map has every row of its tables. One with a table or a
        row left out may leave a site unconnected only for that: its own errors are
        said, not also one in every demand row there. (A duplicate row leaves out
        nothing: its first row stands.)"""
        def whole(name, kept):
            duplicates = sum(t == name for t, _, _ in self.duplicates)
            return name not in self.absent and len(kept) + duplicates == len(self.rows[name])

        return all(whole(name, kept) for name, kept in (
            ("sites", sites), ("links", links), ("regions", regions)))

    def _reachable_at_most(self) -> set[str] | None:
        """Where the map lacks rows: the sites (casefolded) that its rows, those left out
        included, could connect to a region's site at most — every link row joins its two
        names and every region row's name is a region's site, known, valid or not. A
        site outside it is unreachable whatever those rows' errors are, so it is said
        with them (every problem at once, SPEC §3). None where a table is missing or a
        row names no site it can be read as (it could join any)."""
        if {"sites", "links", "regions"} & set(self.absent):
            return None
        graph = nx.Graph()
        for _, v, _ in self.rows["links"]:
            if not isinstance(v.get("site_a"), str) or not isinstance(v.get("site_b"), str):
                return None
            graph.add_edge(v["site_a"].casefold(), v["site_b"].casefold())
        region_sites = set()
        for _, v, _ in self.rows["regions"]:
            if not isinstance(v.get("site"), str):
                return None
            region_sites.add(v["site"].casefold())
        graph.add_nodes_from(region_sites)
        return {site for component in nx.connected_components(graph)
                if component & region_sites for site in component}

    def _demand_site(self, number: int, v: dict, w: Workload, reachable) -> bool:
        """A demand row's site, where its workload `w` has a latency SLO: given, and on
        the map with a region (`reachable`: None where the map is not whole); whether
        the row keeps these rules."""
        if w.latency_slo_ms is None or "site" not in v:  # no SLO, or a site unread
            return True
        if v["site"] is None:
            self.out.error(self.labels["demand"], number, "site",
                           f"workload '{w.workload}' has a latency SLO, so its demand "
                           "needs the site of its users")
            return False
        if reachable is not None and v["site"] not in reachable \
                and v["site"].casefold() not in reachable:
            self.out.error(self.labels["demand"], number, "site",
                           f"site '{v['site']}' is not connected to any region on the "
                           "network map, so the latency SLO can never be met")
            return False
        return True

    def _demand(self, workloads, checked: dict[str, Workload], site_names, sites, links,
                regions):
        label = self.labels["demand"]
        by_name = checked  # rows of workloads left out are checked all the same
        valid = {w.workload for w in workloads}
        s = self.settings
        if self._whole_map(sites, links, regions):
            reachable = _reachable_from_regions(sites, links, regions)
        else:
            reachable = self._reachable_at_most()
        rows: list[Demand] = []
        seen: dict[tuple, int] = {}

        def first_given(key: tuple, month: str, number: int) -> bool:
            """Record the row of a (workload, site, month) cell; one given before is said."""
            if key in seen:
                self.out.error(label, number, "period",
                               f"demand of '{key[0]}' at {key[1] or 'no site'} in {month} "
                               f"is given twice (also row {seen[key]})")
                return False
            seen[key] = number
            return True

        outside = partly = 0  # demand rows wholly, and quarters partly, outside
        for number, v, ok in self.rows["demand"]:
            w = by_name.get(v.get("workload"))
            if not ok:  # left out for a cell: its site is checked all the same
                if w is not None and (v.get("site") is None or v["site"] in site_names):
                    self._demand_site(number, v, w, reachable)
                continue  # its references: _references_of_rows_left_out
            ok = self._refs("demand", number, v, {"workload": by_name, "site": site_names})
            if w is None or not ok or not self._demand_site(number, v, w, reachable):
                continue
            kind, (year, part) = v["period"]
            if s is None:
                # no horizon to place it in: a row given twice is said all the same, by
                # its calendar months (an outside audit: a start_month missing had hidden
                # it)
                months = ([(year, 3 * part - 2 + i) for i in range(3)] if kind == "quarter"
                          else [(year, part)])
                for year, month in months:
                    first_given((w.workload, v["site"], (year, month)),
                                f"{year}-{month:02d}", number)
                continue
            first = _month_index(s, (year, 3 * part - 2) if kind == "quarter" else (year, part))
            count = 3 if kind == "quarter" else 1
            inside = [m for m in range(first, first + count) if 0 <= m < s.horizon_months]
            if not inside:
                outside += 1
            elif len(inside) < count:
                partly += 1
            for month in inside:
                if (first_given((w.workload, v["site"], month), s.month(month), number)
                        and w.workload in valid):
                    rows.append(Demand(w.workload, month, v["amount"], v["site"]))
        if outside or partly:
            # SPEC §2: rows outside the horizon are ignored and counted in one warning
            self.out.warn(label, None, "period", "; ".join(
                [f"{outside} row(s) of demand lie outside the horizon; ignored"] * bool(outside)
                + [f"{partly} quarter row(s) lie partly outside it; their months outside "
                   "ignored"] * bool(partly)))
        if not rows and s is not None and not any(
                i.severity == "error" for i in self.out.issues):
            # (with errors, its rows may have been left out for them: said already)
            self.out.warn(label, None, None, "no demand inside the horizon: the plan "
                          "buys nothing (is the forecast empty?)")
        return rows

    def _demand_with_no_throughput(self, workload_names: set[str]) -> None:
        """Warn about a workload with demand but no throughput row: no GPU type can
        serve it, so all of it goes unmet at its penalty (an outside audit: validate said
        nothing, solve reported it unmet), at its first demand row. A row left out for
        an error of its own still names its workload, and a throughput table that could
        not be read names none unknown (no warning on top of the error)."""
        if "throughput" in self.absent:
            return
        named = {v.get("workload") for _, v, _ in self.rows["throughput"]}
        first: dict[str, int] = {}
        for number, v, ok in self.rows["demand"]:
            w = v.get("workload")
            if ok and v["amount"] > 0 and w in workload_names and w not in named:
                first.setdefault(w, number)
        for w, number in first.items():
            self.out.warn(self.labels["demand"], number, "workload",
                          f"'{w}' has no throughput row: no GPU type can serve it, and all "
                          f"its demand is left unmet at its penalty")

    def _implausible_demand(self, throughput) -> None:
        """Warn about amounts that look mistyped, naming the cell: far above the
        workload's other amounts (IMPLAUSIBLE_RATIO × their median), or needing more GPUs
        than the world has (MOST_GPUS at the best throughput of any GPU type)."""
        label = self.labels["demand"]
        best: dict[str, float] = {}
        for t in throughput:
            best[t.workload] = max(best.get(t.workload, 0.0), t.units_per_gpu)
        amounts: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for number, v, ok in self.rows["demand"]:
            if ok and v["amount"] > 0:
                amounts[v["workload"]].append((number, v["amount"]))
        for w, cells in amounts.items():
            values = sorted(x for _, x in cells)
            for number, x in cells:
                others = [y for y in values if y != x] or values
                median = others[len(others) // 2]
                if len(cells) > 1 and x > IMPLAUSIBLE_RATIO * median:
                    self.out.warn(label, number, "amount",
                                  f"{x:g} is {x / median:,.0f} times the median ({median:g}) "
                                  f"of {w}'s other amounts: mistyped?")
                elif w in best and x / best[w] > MOST_GPUS:
                    self.out.warn(label, number, "amount",
                                  f"{x:g} needs {x / best[w]:.3g} GPUs at the best "
                                  f"throughput of {w} ({best[w]:g} per GPU): mistyped?")

    def _existing(self, region_names, gpu_names):
        label = self.labels["existing"]
        s = self.settings
        rows = []
        for number, v, ok in self.rows["existing"]:
            backwards = (v.get("start_month") and v.get("end_month")
                         and v["end_month"] < v["start_month"])
            if backwards:
                self.out.error(label, number, "end_month", "end_month is before start_month")
            if not ok:
                continue  # its references: _references_of_rows_left_out
            known = self._refs("existing", number, v,
                               {"region": region_names, "gpu": gpu_names})
            if backwards or not known or s is None:
                continue
            rows.append(Existing(v["region"], v["gpu"], int(v["gpus"]),
                                 _month_index(s, v["start_month"]),
                                 _month_index(s, v["end_month"]), v["usd_per_gpu_hour"]))
        return rows

    def _demand_scenarios(self, workload_names) -> list[DemandScenario]:
        """Scenarios of `solve --stochastic`: each with one probability, stated on at least
        one of its rows (the others blank or the same), the probabilities summing to 1, no
        two rows of a scenario for the same workload and period."""
        label = self.labels["demand_scenarios"]
        s = self.settings
        found: dict[str, dict] = {}
        first_row: dict[str, int] = {}  # where each scenario is first named
        stated: dict[str, int] = {}  # where its probability is first stated
        unreadable: set[str] = set()  # scenarios with a probability that did not parse
        conflicting: set[int] = set()  # rows whose probability differs from its first
        # rows that did not parse count too: their scenario's probability still counts
        # towards the sum (else the sum is off by it, a second, false, problem)
        for number, v, ok in self.rows["demand_scenarios"]:
            name, probability = v.get("scenario"), v.get("probability")
            if name is None:
                continue
            first_row.setdefault(name, number)
            entry = found.setdefault(name, {"probability": None, "multipliers": {}})
            if probability is None:
                if (label, number, "probability") in self.out.in_error:
                    unreadable.add(name)  # said already: not also "no probability"
                continue
            if entry["probability"] is None:
                entry["probability"], stated[name] = probability, number
            elif abs(entry["probability"] - probability) > EPS:  # (whatever else
                # the row has wrong: an audit's clash was hidden by a bad period)
                self.out.error(label, number, "probability",
                               f"scenario '{name}' has probability "
                               f"{entry['probability']:g} on row {stated[name]}, "
                               f"{probability:g} here")
                conflicting.add(number)
        for name, entry in found.items():
            if entry["probability"] is None:
                if name not in unreadable:
                    self.out.error(label, first_row[name], "probability",
                                   f"scenario '{name}' has no probability on any of its "
                                   "rows")
                entry["probability"] = 0.0
        outside = 0  # rows whose period lies wholly outside the horizon
        for number, v, ok in self.rows["demand_scenarios"]:
            if not ok:
                continue
            name = v["scenario"]
            if v["workload"] is not None:
                ok = self._refs("demand_scenarios", number, v,
                                {"workload": workload_names})
            if number in conflicting:
                ok = False  # said above
            if not ok or s is None:
                continue
            months: list[int | None] = [None]
            if v["period"] is not None:
                kind, (year, part) = v["period"]
                first = _month_index(s, (year, 3 * part - 2) if kind == "quarter"
                                     else (year, part))
                months = [m for m in range(first, first + (3 if kind == "quarter" else 1))
                          if 0 <= m < s.horizon_months]
                outside += not months
            for month in months:
                key = (v["workload"], month)
                if key in found[name]["multipliers"]:
                    self.out.error(label, number, "period",
                                   f"scenario '{name}' scales this workload and period twice")
                    break
                found[name]["multipliers"][key] = v["multiplier"]
        if outside:  # as demand's (SPEC §2): ignored, and said once
            self.out.warn(label, None, "period",
                             f"{outside} row(s) lie outside the horizon; ignored")
        total = sum(x["probability"] for x in found.values())
        # a probability that did not parse (1.2, -0.2: said on its row) leaves the sum
        # unknown: not also "sum to 0, not 1"
        if found and not unreadable and abs(total - 1.0) > 1e-6:
            self.out.error(label, None, "probability",
                           f"the scenarios' probabilities sum to {total:g}, not 1")
        return [DemandScenario(name, x["probability"],
                               tuple(sorted(x["multipliers"].items(), key=str)))
                for name, x in found.items()]


# per table, its columns that name a row of another table, and what they name
_REFERENCES = {
    "links": (("site_a", "site"), ("site_b", "site")), "regions": (("site", "site"),),
    "offers": (("region", "region"), ("gpu", "gpu")),
    "throughput": (("workload", "workload"), ("gpu", "gpu")),
    "demand": (("workload", "workload"), ("site", "site")),
    "existing": (("region", "region"), ("gpu", "gpu")),
    "demand_scenarios": (("workload", "workload"),),
}
# what a reference names -> (its table, the column holding the name)
_NAMED_BY = {"gpu": ("gpus", "gpu"), "site": ("sites", "site"),
             "region": ("regions", "region"), "workload": ("workloads", "workload")}


def _named(raw: RawScenario) -> dict[str, set]:
    """Every gpu, site, region and workload a table names, in rows valid or not (and in
    tables missing a required column)."""
    out: dict[str, set] = {}
    for what, (table_name, column_name) in _NAMED_BY.items():
        table = raw.tables.get(table_name)
        column = next(c for c in TABLES_BY_NAME[table_name].columns if c.name == column_name)
        names = set()
        for _, cells in (table.rows if table else []):
            try:
                v = parse_cell(column, cells.get(column_name))
            except CellError:
                continue
            if v is not BLANK:
                names.add(v)
        out[what] = names
    return out


def _month_index(settings: Settings, year_month: tuple[int, int]) -> int:
    """Index of (year, month) counted from the start of the horizon (may be negative)."""
    y0, m0 = settings.start_month
    return (year_month[0] - y0) * 12 + year_month[1] - m0


# ISO 3166's exceptionally reserved codes (UK, EU …), used as countries in practice:
# accepted, with a warning that a residency of GB does not match UK
_RESERVED_COUNTRIES = {"AC", "CP", "DG", "EA", "EU", "EZ", "FX", "IC", "SU", "TA", "UK",
                       "UN"}


@functools.cache
def _countries() -> frozenset[str]:
    """ISO 3166-1's alpha-2 codes (pycountry) and XK, Kosovo's in common use."""
    import pycountry

    return frozenset({c.alpha_2 for c in pycountry.countries} | {"XK"})


def _reachable_from_regions(sites, links, regions) -> set[str]:
    """Sites connected by some path to the site of at least one region."""
    from planner.model.graph import build_graph

    graph = build_graph(sites, links)
    region_sites = {r.site for r in regions if r.site in graph}
    reach: set[str] = set()
    for component in nx.connected_components(graph):
        if component & region_sites:
            reach |= component
    return reach


def load_scenario(path: str | Path) -> Scenario:
    """Load and validate; raise ScenarioError with every issue when there is any error."""
    scenario, issues = validate(load_raw(path))
    if scenario is None:
        raise ScenarioError(issues)
    return scenario
