"""Independent plan checker: every rule of SPEC §2 and every cost, recomputed.

It reads only the scenario and the plan's tables (usage, supply, flows, unmet, contracts,
totals) and shares no code with the candidate, model, cost or plan modules, so a mistake
there cannot hide itself here. `check_plan` returns the list of violations (empty: valid).
"""

from __future__ import annotations

import math
from collections import defaultdict

import networkx as nx

from planner.io.scenario import Scenario

TOL = 1e-5
# Sums of a plan's units and GPUs are checked against whole numbers (replicas, GPUs)
# within an absolute tolerance and, for very large plans, this share of the number: the
# rounding of a sum of floats grows with its size (a load of 7.9 billion replicas summed
# from its flows came to 7,947,138,888.000002 against 7,947,138,888 replicas).
REL = 1e-12


def _over(x: float, limit: float, abs_: float = 1e-6) -> bool:
    """Whether `x` exceeds `limit` by more than rounding (abs_, or REL of the limit)."""
    return x > limit + max(abs_, REL * abs(limit))


def _close(a: float, b: float, rel: float = 1e-6, abs_: float = 1e-3) -> bool:
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def check_plan(scenario: Scenario, plan, restricted: bool = False) -> list[str]:
    """Every violation of SPEC §2 in `plan` (empty: valid). `restricted`: the plan was
    made under a policy or restriction (a what-if variant, a comparison plan), whose
    offers the scenario alone does not tell: demand left unmet beside room is not
    checked."""
    return _Checker(scenario, plan, restricted).run()


class _Checker:
    def __init__(self, s: Scenario, plan, restricted: bool = False):
        self.s, self.plan = s, plan
        self.restricted = restricted
        self.st = s.settings
        self.problems: list[str] = []
        self.wl = {w.workload: w for w in s.workloads}
        self.offers = {}
        for o in s.offers:
            name = f"{o.region}/{o.gpu}/{o.term}"
            if o.term in ("monthly", "reserved", "build_to_order"):
                name += f"/{o.commit_months}"
            self.offers[name] = o
        self.tp = {(t.workload, t.gpu): t for t in s.throughput}
        self.region = {r.region: r for r in s.regions}
        self.site = {x.site: x for x in s.sites}

    def fail(self, message: str):
        self.problems.append(message)

    def run(self) -> list[str]:
        self._segments()
        self._demand_and_flows()
        self._supply()
        self._replicas()
        self._commitments()
        self._capacity()
        self._spot_share()
        self._single_region()
        if not self.restricted:
            self._unmet_beside_room()
        self._costs()
        return self.problems

    # -- time ------------------------------------------------------------------------------
    def _segments(self):
        shares = set()
        for d in self.s.demand:
            share = self.wl[d.workload].peak_hours_share
            if d.amount > 0 and 1e-9 < share < 1 - 1e-9:
                shares.add(round(share, 12))
        edges = [0.0] + sorted(shares) + [1.0]
        self.seg = [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]
        self.hours = [(b - a) * self.st.hours_per_month for a, b in self.seg]

    def _level(self, w, amount, k) -> float:
        share, ratio = w.peak_hours_share, w.peak_to_average
        if share <= 0:
            return amount
        if self.seg[k][1] <= share + 1e-9:
            return amount * ratio
        return 0.0 if share >= 1 else max(0.0, amount * (1 - share * ratio) / (1 - share))

    def _discount(self, month: float) -> float:
        return (1 + self.st.discount_rate_annual) ** (-month / 12)

    # -- rules -----------------------------------------------------------------------------
    def _demand_and_flows(self):
        p = self.plan
        graph = nx.Graph()
        graph.add_nodes_from(self.site)
        for link in self.s.links:
            old = graph.get_edge_data(link.site_a, link.site_b)
            if old is None or old["w"] > link.rtt_ms:
                graph.add_edge(link.site_a, link.site_b, w=link.rtt_ms)
        dist: dict[str, dict] = {}
        self.graph, self.dist = graph, dist
        served = defaultdict(float)
        for f in p.flows.itertuples():
            w = self.wl.get(f.workload)
            if w is None or f.region not in self.region:
                self.fail(f"flow of unknown workload or region: {f}")
                continue
            if f.units < -TOL:
                self.fail(f"negative flow {f}")
            served[(f.workload, f.site if isinstance(f.site, str) else None, f.month,
                    f.segment)] += f.units
            rsite = self.site[self.region[f.region].site]
            if w.residency and not (rsite.jurisdiction in w.residency
                                    or rsite.country in w.residency):
                self.fail(f"residency: {f.workload} served from {f.region} "
                          f"({rsite.jurisdiction}/{rsite.country})")
            if w.latency_slo_ms is not None:
                site = f.site if isinstance(f.site, str) else None
                if site is None:
                    self.fail(f"{f.workload} has a latency SLO but a flow without a site")
                    continue
                if site not in dist:
                    dist[site] = nx.single_source_dijkstra_path_length(graph, site, weight="w")
                ms = dist[site].get(rsite.site, math.inf)
                if ms > w.latency_slo_ms + 1e-9:
                    self.fail(f"latency: {f.workload} at {site} served from {f.region} "
                              f"at {ms} ms > SLO {w.latency_slo_ms} ms")
        unmet = defaultdict(float)
        for u in p.unmet.itertuples():
            site = u.site if isinstance(u.site, str) else None
            unmet[(u.workload, site, u.month, u.segment)] += u.units
        levels = {}
        for d in self.s.demand:
            w = self.wl[d.workload]
            for k in range(len(self.seg)):
                x = self._level(w, d.amount, k)
                if x > 1e-9:
                    levels[(d.workload, d.site, d.month, k)] = x
        self.levels = levels
        for key in set(served) | set(unmet):
            if key not in levels:
                norm = (key[0], key[1] if isinstance(key[1], str) else None, *key[2:])
                if norm not in levels and (served.get(key, 0) > TOL or unmet.get(key, 0) > TOL):
                    self.fail(f"service or unmet where there is no demand: {key}")
        for key, level in levels.items():
            got = served.get(key, 0.0) + unmet.get(key, 0.0)
            if not _close(got, level, rel=1e-6, abs_=1e-4):
                self.fail(f"demand {key}: level {level:g} but served {served.get(key, 0):g}"
                          f" + unmet {unmet.get(key, 0):g}")
        self.served_units = served

    def _supply(self):
        p = self.plan
        flows_wr = defaultdict(float)
        for f in p.flows.itertuples():
            flows_wr[(f.workload, f.region, f.month, f.segment)] += f.units
        supply_wr = defaultdict(float)
        self.load = defaultdict(float)
        for x in p.supply.itertuples():
            w = self.wl[x.workload]
            supply_wr[(x.workload, x.region, x.month, x.segment)] += x.units
            t = self.tp.get((x.workload, x.gpu))
            if t is None:
                self.fail(f"{x.workload} served on {x.gpu} without a throughput row")
                continue
            derate = 1.0
            if x.source != "committed":
                o = self.offers.get(x.source)
                if o is None or o.region != x.region or o.gpu != x.gpu:
                    self.fail(f"supply from unknown offer {x.source}")
                    continue
                if o.term not in ("spot", "on_demand"):
                    self.fail(f"supply names commitment offer {x.source} directly")
                if o.term == "spot":
                    if not w.allow_spot:
                        self.fail(f"spot used by {x.workload}, which does not allow it")
                    derate = 1 - o.interruption_rate
                if math.ceil(o.lead_time_days / 30 - 1e-9) > x.month:
                    self.fail(f"offer {x.source} used in month {x.month} before its lead time")
            pool = w.pool or f"~{w.workload}"
            self.load[(pool, x.region, x.gpu, x.source, x.month, x.segment)] += (
                x.units / (t.units_per_gpu * t.gpus_per_replica * derate))
        for key in set(flows_wr) | set(supply_wr):
            if not _close(flows_wr.get(key, 0), supply_wr.get(key, 0), abs_=1e-4):
                self.fail(f"flows into {key} ({flows_wr.get(key, 0):g}) differ from what "
                          f"the region supplies ({supply_wr.get(key, 0):g})")

    def _replicas(self):
        p = self.plan
        self.gpus_in_use = defaultdict(float)  # (source or (r,g,'committed'), m, k) -> GPUs
        size = {}
        for t in self.s.throughput:
            w = self.wl[t.workload]
            size[(w.pool or f"~{w.workload}", t.gpu)] = t.gpus_per_replica
        seen = set()
        for u in p.usage.itertuples():
            key = (u.pool, u.region, u.gpu, u.source, u.month, u.segment)
            seen.add(key)
            if u.replicas != int(u.replicas) or u.replicas < 0:
                self.fail(f"not a whole number of replicas: {key} {u.replicas}")
            if (u.pool, u.gpu) not in size or u.gpus != u.replicas * size[(u.pool, u.gpu)]:
                self.fail(f"GPUs {u.gpus} are not whole replicas of {u.pool} on {u.gpu}")
            if _over(self.load.get(key, 0.0), u.replicas):
                self.fail(f"load {self.load[key]:.6f} exceeds {u.replicas} replicas at {key}")
            src = (u.region, u.gpu, "committed") if u.source == "committed" else u.source
            self.gpus_in_use[(src, u.month, u.segment)] += u.gpus
        for key, x in self.load.items():
            if x > 1e-6 and key not in seen:
                self.fail(f"load without replicas at {key}")

    def _commitments(self):
        st = self.st
        self.active = defaultdict(float)  # (r, g, m) -> committed GPUs
        for c in self.plan.contracts.itertuples():
            if c.kind == "existing":
                continue
            o = self.offers.get(c.offer)
            if o is None or o.term not in ("monthly", "reserved", "build_to_order"):
                self.fail(f"commitment on unknown or pay-as-you-go offer {c.offer}")
                continue
            if c.commit_months != o.commit_months:
                self.fail(f"commitment {c.offer}: {c.commit_months} months, offer says "
                          f"{o.commit_months}")
            if c.start < math.ceil(o.lead_time_days / 30 - 1e-9) or c.start >= st.horizon_months:
                self.fail(f"commitment {c.offer} starts in month {c.start}, outside "
                          "lead time and horizon")
            if c.gpus != int(c.gpus) or c.gpus <= 0:
                self.fail(f"commitment {c.offer}: {c.gpus} GPUs is not a positive whole number")
            if c.gpus % o.gpus_per_instance:
                self.fail(f"commitment {c.offer}: {c.gpus} GPUs is not whole instances of "
                          f"{o.gpus_per_instance}")
            if o.min_gpus and c.gpus < o.min_gpus:
                self.fail(f"commitment {c.offer}: {c.gpus} GPUs below min_gpus {o.min_gpus}")
            for m in range(c.start, min(c.start + o.commit_months, st.horizon_months)):
                self.active[(o.region, o.gpu, m)] += c.gpus
        for e in self.s.existing:
            for m in range(st.horizon_months):
                if e.start <= m <= e.end:
                    self.active[(e.region, e.gpu, m)] += e.gpus
        for (src, m, k), gpus in self.gpus_in_use.items():
            if isinstance(src, tuple):
                r, g, _ = src
                if _over(gpus, self.active.get((r, g, m), 0)):
                    self.fail(f"committed GPUs in use at {r}/{g} month {m} segment {k}: "
                              f"{gpus} > {self.active.get((r, g, m), 0)} active")

    @staticmethod
    def _paid_gpus(o, gpus: float) -> float:
        """GPUs paid for `gpus` in use: whole instances of gpus_per_instance."""
        n = o.gpus_per_instance
        return math.ceil(gpus / n - 1e-9) * n if n > 1 else gpus

    def _capacity(self):
        for (src, m, k), gpus in self.gpus_in_use.items():
            if isinstance(src, str):
                o = self.offers[src]
                gpus = self._paid_gpus(o, gpus)
                if o.max_gpus is not None and _over(gpus, o.max_gpus):
                    self.fail(f"offer {src} uses {gpus} GPUs in month {m} segment {k}, "
                              f"max_gpus {o.max_gpus}")
        per_offer = defaultdict(float)
        for c in self.plan.contracts.itertuples():
            if c.kind == "new" and c.offer in self.offers:
                for m in range(c.start, c.start + c.commit_months):
                    per_offer[(c.offer, m)] += c.gpus
        for (key, m), gpus in per_offer.items():
            o = self.offers[key]
            if m < self.st.horizon_months and o.max_gpus is not None and gpus > o.max_gpus:
                self.fail(f"commitments on {key} hold {gpus} GPUs in month {m}, "
                          f"max_gpus {o.max_gpus}")

    def _spot_share(self):
        spot, total = defaultdict(float), defaultdict(float)
        for x in self.plan.supply.itertuples():
            total[(x.workload, x.month, x.segment)] += x.units
            o = self.offers.get(x.source)
            if o is not None and o.term == "spot":
                spot[(x.workload, x.month, x.segment)] += x.units
        for key, units in spot.items():
            share = self.wl[key[0]].max_spot_share
            if _over(units, share * total[key], 1e-5):
                self.fail(f"spot share of {key[0]} in month {key[1]} segment {key[2]}: "
                          f"{units / total[key]:.4f} > {share}")

    def _single_region(self):
        """Its units and the GPUs the plan gives it, in one region and GPU type."""
        where = defaultdict(set)
        for x in self.plan.supply.itertuples():
            if self.wl[x.workload].single_region and x.units > TOL:
                where[x.workload].add((x.region, x.gpu))
        for a in self.plan.assignments.itertuples():
            if a.workload in self.wl and self.wl[a.workload].single_region and a.gpus > TOL:
                where[a.workload].add((a.region, a.gpu))
        for w, places in where.items():
            if len(places) > 1:
                self.fail(f"single-region workload {w} runs in {sorted(places)}")

    def _unmet_beside_room(self):
        """Demand is left unmet only where nothing in reach could serve it: no unmet
        demand beside a pay-as-you-go offer within the workload's SLO, jurisdictions and
        lead time that had room for one more of its replicas in that month and segment,
        where that replica would serve what it can of the unmet units for less than their
        penalty (a single-region workload: at the region and GPU type it runs on)."""
        places = defaultdict(set)
        for x in self.plan.supply.itertuples():
            if x.units > TOL:
                places[x.workload].add((x.region, x.gpu))
        for u in self.plan.unmet.itertuples():
            if u.units <= 1e-4:
                continue
            w = self.wl[u.workload]
            site = u.site if isinstance(u.site, str) else None
            penalty = w.unmet_penalty_usd_per_unit_hour
            for o in self.s.offers:
                if o.term not in ("spot", "on_demand") or (w.workload, o.gpu) not in self.tp:
                    continue
                if o.term == "spot" and (not w.allow_spot or w.max_spot_share < 1):
                    continue  # spot may only carry a share
                if math.ceil(o.lead_time_days / 30 - 1e-9) > u.month:
                    continue
                if w.single_region and places[w.workload] and \
                        (o.region, o.gpu) not in places[w.workload]:
                    continue
                rsite = self.site[self.region[o.region].site]
                if w.residency and not (rsite.jurisdiction in w.residency
                                        or rsite.country in w.residency):
                    continue
                if w.latency_slo_ms is not None:
                    if site is None:
                        continue
                    if site not in self.dist:
                        self.dist[site] = nx.single_source_dijkstra_path_length(
                            self.graph, site, weight="w")
                    if self.dist[site].get(rsite.site, math.inf) > w.latency_slo_ms + 1e-9:
                        continue
                t = self.tp[(w.workload, o.gpu)]
                derate = 1 - o.interruption_rate if o.term == "spot" else 1.0
                units = min(u.units, t.units_per_gpu * t.gpus_per_replica * derate)
                name = f"{o.region}/{o.gpu}/{o.term}"
                used = self.gpus_in_use.get((name, u.month, u.segment), 0.0)
                # one more replica: the GPUs it adds to what is paid (whole instances)
                paid = self._paid_gpus(o, used + t.gpus_per_replica)
                added = paid - self._paid_gpus(o, used)
                replica = (added * o.usd_per_gpu_hour + units
                           * w.egress_gb_per_unit_hour
                           * self.region[o.region].egress_usd_per_gb)
                if replica >= units * penalty * (1 - 1e-9):
                    continue
                if o.max_gpus is None or paid <= o.max_gpus + 1e-9:
                    self.fail(f"unmet demand of {u.workload} at {site} in month {u.month} "
                              f"segment {u.segment} ({u.units:g} units) while {name} in "
                              f"reach had room ({used:g} of "
                              f"{'unlimited' if o.max_gpus is None else o.max_gpus} GPUs)")
                    break

    # -- money -----------------------------------------------------------------------------
    def _costs(self):
        st, p = self.st, self.plan
        hpm = st.hours_per_month
        by_term = defaultdict(float)
        disc_total = 0.0
        for (src, m, k), gpus in self.gpus_in_use.items():
            if isinstance(src, tuple):
                continue  # committed GPUs: paid by their contracts
            o = self.offers[src]
            usd = self._paid_gpus(o, gpus) * self.hours[k] * o.usd_per_gpu_hour
            by_term[o.term] += usd
            disc_total += usd * self._discount(m)
        for c in p.contracts.itertuples():
            if c.kind == "existing":
                continue
            o = self.offers[c.offer]
            n = o.commit_months
            months = n if st.tail_policy == "full" else max(
                0, min(n, st.horizon_months - c.start))
            monthly = c.gpus * hpm * o.usd_per_gpu_hour
            upfront = c.gpus * o.upfront_usd_per_gpu * months / n
            by_term[o.term] += monthly * months + upfront
            disc_total += sum(monthly * self._discount(c.start + j) for j in range(months))
            disc_total += upfront * self._discount(c.start)
        for e in self.s.existing:
            for m in range(st.horizon_months):
                if e.start <= m <= e.end:
                    usd = e.gpus * hpm * e.usd_per_gpu_hour
                    by_term["existing"] += usd
                    disc_total += usd * self._discount(m)
        egress = 0.0
        for x in p.supply.itertuples():
            usd = (x.units * self.hours[x.segment] * self.wl[x.workload].egress_gb_per_unit_hour
                   * self.region[x.region].egress_usd_per_gb)
            egress += usd
            disc_total += usd * self._discount(x.month)
        penalty_disc, unit_hours = 0.0, 0.0
        for u in p.unmet.itertuples():
            h = u.units * self.hours[u.segment]
            unit_hours += h
            penalty_disc += (h * self.wl[u.workload].unmet_penalty_usd_per_unit_hour
                             * self._discount(u.month))
        total = sum(by_term.values()) + egress
        t = p.totals
        for term, usd in by_term.items():
            if not _close(usd, t["cost_by_term_usd"].get(term, 0.0)):
                self.fail(f"cost of {term}: recomputed {usd:.2f}, plan says "
                          f"{t['cost_by_term_usd'].get(term, 0.0):.2f}")
        checks = [("egress_usd", egress), ("total_cost_usd", total),
                  ("unmet_unit_hours", unit_hours),
                  ("objective_usd", disc_total + penalty_disc)]
        for key, value in checks:
            if not _close(value, t[key]):
                self.fail(f"{key}: recomputed {value:.4f}, plan says {t[key]:.4f}")
        solver = t.get("solver_objective_usd")
        if solver is not None and not _close(solver, disc_total + penalty_disc, rel=1e-5):
            self.fail(f"solver objective {solver:.4f} differs from the recomputed "
                      f"{disc_total + penalty_disc:.4f}")
        parts = (t["plan_cost_usd"] + t["idle_committed_usd"] + t["after_horizon_usd"]
                 + t["upfront_usd"] + t["egress_usd"])
        if not _close(parts, total):
            self.fail(f"plan costs + idle + payments after the horizon + upfront + egress = "
                      f"{parts:.2f} ≠ total {total:.2f}")
