"""The mixed-integer program (SPEC §2), built with PuLP.

Index names: w workload, p pool (a workload without a pool is its own), s demand site,
r region, g GPU type, o offer, src a source of GPUs at (r, g): a pay-as-you-go offer's key
or COMMITTED (every commitment and existing contract at (r, g), pooled), m month,
k segment, t a commitment's start month.

Variables
  unmet[w,s,m,k]        ≥ 0  units of demand left unmet
  flow[w,s,r,m,k]       ≥ 0  units of demand at s served from r (only for workloads
                             with several demand sites; otherwise supply serves s directly)
  supply[w,r,g,src,m,k] ≥ 0  units of w delivered by GPUs of src
  replicas[p,r,g,src,m,k] ∈ ℤ≥0  replicas of pool p running on src
  commit[o,t]           ∈ ℤ≥0  GPUs committed on offer o from month t
  commit_on[o,t]        ∈ {0,1} the commitment is signed (offers with min_gpus)
  instances[o,m,k]      ∈ ℤ≥0  whole instances rented on a pay-as-you-go offer sold in
                             instances of n > 1 GPUs (gpus_per_instance): paid per GPU
  commit_instances[o,t] ∈ ℤ≥0  whole instances committed on such an offer
  choose[w,r,g]         ∈ {0,1} the one region and GPU type of a single-region workload

Every rule is a method `add_<rule>` whose docstring gives its meaning and inequality;
constraint names are `<rule>__<ids>` with ids from `ModelIndex` (safe for any solver).
"""

from __future__ import annotations

import gc
import math
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field

import pulp
from pulp import LpAffineExpression as Expr
from pulp import LpConstraint

from planner.io.scenario import Scenario
from planner.model.candidates import Candidates
from planner.model.costs import counted_per_gpu
from planner.model.space import COMMITTED, ModelSpace, Restrictions  # noqa: F401 (re-exported)

EPS = 1e-9


@dataclass
class ModelIndex:
    """Short solver-safe ids for the user's names (PuLP rewrites '-', ' ', '/' …)."""

    ids: dict[tuple[str, str], str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def __call__(self, kind: str, name) -> str:
        key = (kind, str(name))
        if key not in self.ids:
            self.ids[key] = f"{kind}{self.counts[kind]}"
            self.counts[kind] += 1
        return self.ids[key]


@dataclass
class PlanningModel:
    scenario: Scenario
    candidates: Candidates
    prob: pulp.LpProblem
    unmet: dict = field(default_factory=dict)
    flow: dict = field(default_factory=dict)
    supply: dict = field(default_factory=dict)
    replicas: dict = field(default_factory=dict)
    commit: dict = field(default_factory=dict)
    commit_on: dict = field(default_factory=dict)
    choose: dict = field(default_factory=dict)
    instances: dict = field(default_factory=dict)
    commit_instances: dict = field(default_factory=dict)
    constant_usd: float = 0.0  # sunk cost of existing contracts (discounted)
    index: ModelIndex = field(default_factory=ModelIndex)
    # rule → key → constraint (a rule's row at a key is built once, its terms added to it)
    rows: dict = field(default_factory=lambda: defaultdict(dict))
    # workload -> (region, GPU type, source) -> first month it may serve (ModelBuilder)
    sources: dict = field(default_factory=dict)
    # (region, GPU type, month) -> GPUs of existing contracts (ModelBuilder)
    existing_gpus: dict = field(default_factory=dict)
    # (workload, site, month, segment) -> units no source can serve, left out of the
    # model; of these cells, those beyond every source's capacity and those with no
    # source in reach in any month (the unservable: SPEC §4 v2) (ModelSpace._levels)
    out_of_model: dict = field(default_factory=dict)
    beyond_capacity: set = field(default_factory=set)
    never: set = field(default_factory=set)

    def integer_variables(self) -> list[pulp.LpVariable]:
        """Every integer or binary variable, from the model's own index (PuLP's
        `variables()` walks every constraint and sorts all names on each call)."""
        return [*self.replicas.values(), *self.commit.values(), *self.commit_on.values(),
                *self.choose.values(), *self.instances.values(),
                *self.commit_instances.values()]

    def stats(self) -> dict[str, int]:
        variables = self.prob.variables()
        return {
            "variables": len(variables),
            "integer variables": sum(1 for v in variables if v.cat != pulp.LpContinuous),
            "constraints": len(self.prob.constraints),
            "nonzeros": sum(len(c) for c in self.prob.constraints.values()),
        }


def build_model(scenario: Scenario, candidates: Candidates,
                restrictions: Restrictions | None = None) -> PlanningModel:
    """Build the model of `scenario` from its candidates, within `restrictions`."""
    return ModelBuilder(scenario, candidates, restrictions).build()


class ModelBuilder(ModelSpace):
    """The PuLP model over every candidate cell or a chosen subset of them (a model
    solved whole, `--export-model`), on the space (planner.model.space) it extends."""

    def __init__(self, scenario: Scenario, candidates: Candidates,
                 restrictions: Restrictions | None = None):
        super().__init__(scenario, candidates, restrictions)
        self.index = ModelIndex()  # the same names in every build

    # -- helpers -------------------------------------------------------------------------
    def _var(self, name: str, cat=pulp.LpContinuous, up=None) -> pulp.LpVariable:
        # PuLP 4.0's way (constructing LpVariable warns on every one: 0.6 M at 200x40x24)
        return self.m.prob.add_variable(name, 0, up, cat)

    def _add(self, terms, sense, rhs: float, name: str, rule: str | None = None, key=None):
        c = LpConstraint(Expr(terms), sense, name, rhs)
        self.m.prob.addConstraint(c)
        if rule is not None:
            self.m.rows[rule][key] = c

    def _id(self, kind, name):
        return self.m.index(kind, name)

    # -- stages --------------------------------------------------------------------------
    def build(self, cells: set | None = None, months=None) -> PlanningModel:
        """The model over `cells` (supply keys; None: every candidate cell), with the
        demand of `months` only (None: every month; a month's own MIP)."""
        with paused_gc():
            return self._build(cells, months)

    def _build(self, cells: set | None, months) -> PlanningModel:
        self.m = PlanningModel(self.s, self.c,
                               pulp.LpProblem(_safe(self.s.name), pulp.LpMinimize),
                               index=self.index,  # the same names in every build
                               sources=self.sources, existing_gpus=self.existing_gpus,
                               out_of_model=self.out_of_model,
                               beyond_capacity=self.beyond_capacity, never=self.never)
        self.add_unmet(months)
        self.add_commitments()
        self._add_cells(self.cells() if cells is None else self.in_build_order(cells))
        self.add_commitment_capacity()
        self.add_minimum_commitment()
        self.add_whole_commitment_instances()
        return self.m

    def _add_cells(self, cells) -> None:
        supply = self.add_supply(cells)
        flows = self.add_flows(supply)
        self.add_demand(supply, flows)
        replicas = self.add_replicas(supply)
        self.add_committed_capacity(replicas)
        self.add_offer_capacity(replicas)
        self.add_spot_share(supply)
        self.add_single_region(supply)
        self.add_costs(supply, replicas)

    def _row(self, rule: str, key, name: str, sense, rhs: float, terms):
        """Create the row of `rule` at `key`, or add `terms` to it when it exists."""
        row = self.m.rows[rule].get(key)
        if row is None:
            row = LpConstraint(Expr(terms), sense, name, rhs)
            self.m.prob.addConstraint(row)
            self.m.rows[rule][key] = row
        else:
            for v, a in terms:
                row.expr.addterm(v, a)

    def add_unmet(self, months=None):
        """Unmet demand for every demand cell (of `months`), and its demand row (supply
        joins later)."""
        m = self.m
        terms = []
        for (w, site, month, k), level in self.level.items():
            if months is not None and month not in months:
                continue
            ids = f"{self._id('w', w)}_{self._id('s', site)}_m{month}_k{k}"
            v = m.unmet[(w, site, month, k)] = self._var(f"unmet__{ids}")
            penalty = self.s.workload_by_name[w].unmet_penalty_usd_per_unit_hour
            terms.append((v, penalty * self.hours[k] * self.settings.discount(month)))
            self._add([(v, 1.0)], pulp.LpConstraintEQ, level, f"demand__{ids}",
                      "demand", (w, site, month, k))
        m.constant_usd = constant = self.existing_usd + self.out_of_model_usd
        m.prob.setObjective(Expr(terms, constant=constant))

    def add_supply(self, cells) -> list[tuple]:
        """Supply variables for the cells not yet in the model."""
        m, new = self.m, []
        for key in cells:
            if key in m.supply:
                continue
            w, r, g, src, month, k = key
            m.supply[key] = self._var(
                f"supply__{self._id('w', w)}_{self._id('r', r)}_{self._id('g', g)}_"
                f"{self._id('src', src)}_m{month}_k{k}")
            new.append(key)
        return new

    def add_flows(self, supply: list[tuple]) -> list[tuple]:
        """Flows from each region newly supplying a workload with several demand sites to
        each of its sites within the SLO. Flows run only to regions with supply in that
        month and segment: any other flow would be zero by flow balance."""
        m, c = self.m, self.c
        regions: dict[tuple, set[str]] = defaultdict(set)
        for (w, r, g, src, month, k) in supply:
            if len(self.sites_of[w]) > 1:
                regions[(w, month, k)].add(r)
        new = []
        for (w, month, k), found in regions.items():
            for site in self.sites_of[w]:
                if (w, site, month, k) not in self.level:
                    continue
                for r in sorted(found.intersection(c.regions_for_site[(w, site)])):
                    key = (w, site, r, month, k)
                    m.flow[key] = self._var(
                        f"flow__{self._id('w', w)}_{self._id('s', site)}_"
                        f"{self._id('r', r)}_m{month}_k{k}")
                    new.append(key)
        return new

    def add_demand(self, supply: list[tuple], flows: list[tuple]):
        """demand: every unit of demand is served from a region within the SLO or unmet.

        For each (w, s, m, k) with level L > 0:
            Σ_r flow[w,s,r,m,k] + unmet[w,s,m,k] = L
        flow_balance: what a region supplies flows to the sites it serves; for each
        (w, r, m, k):  Σ_s flow[w,s,r,m,k] = Σ_{g,src} supply[w,r,g,src,m,k].
        A workload with one demand site has no flow variables: its supply (restricted to
        regions within the SLO of that site) serves the site directly.
        """
        m = self.m
        served: dict[tuple, list] = defaultdict(list)
        balance: dict[tuple, list] = defaultdict(list)
        for key in supply:
            w, r, g, src, month, k = key
            if len(self.sites_of[w]) == 1:
                served[(w, self.sites_of[w][0], month, k)].append((m.supply[key], 1.0))
            else:
                balance[(w, r, month, k)].append((m.supply[key], 1.0))
        for key in flows:
            w, site, r, month, k = key
            served[(w, site, month, k)].append((m.flow[key], 1.0))
            balance[(w, r, month, k)].append((m.flow[key], -1.0))
        for (w, site, month, k), terms in served.items():
            self._row("demand", (w, site, month, k), "", pulp.LpConstraintEQ, 0.0, terms)
        for key in sorted(balance, key=str):
            w, r, month, k = key
            ids = f"{self._id('w', w)}_{self._id('r', r)}_m{month}_k{k}"
            self._row("flow_balance", key, f"flow_balance__{ids}", pulp.LpConstraintEQ, 0.0,
                      balance[key])

    def add_replicas(self, supply: list[tuple]) -> list[tuple]:
        """replicas: GPUs come in whole replicas; a pool's replicas carry its loads.

        For each (p, r, g, src, m, k):
            Σ_{w∈p} supply[w,r,g,src,m,k] / (units_per_gpu[w,g] · gpus_per_replica[g]
                                              · (1 − interruption_rate[src]))
                ≤ replicas[p,r,g,src,m,k]
        """
        s, m = self.s, self.m
        loads: dict[tuple, list] = defaultdict(list)
        for key in supply:
            w, r, g, src, month, k = key
            p = s.workload_by_name[w].pool_name
            loads[(p, r, g, src, month, k)].append(
                (m.supply[key], 1.0 / self.per_replica(w, g, src)))
        new = []
        for key, terms in loads.items():
            p, r, g, src, month, k = key
            ids = (f"{self._id('p', p)}_{self._id('r', r)}_{self._id('g', g)}_"
                   f"{self._id('src', src)}_m{month}_k{k}")
            if key not in m.replicas:
                m.replicas[key] = self._var(f"replicas__{ids}", pulp.LpInteger,
                                                up=self.replica_bound(key))
                terms = terms + [(m.replicas[key], -1.0)]
                new.append(key)
            self._row("replicas", key, f"replicas__{ids}", pulp.LpConstraintLE, 0.0, terms)
        return new

    def add_commitments(self):
        """Commitment variables: GPUs committed on each offer from each start month
        t ≥ ceil(lead_time_days / 30) in the horizon, at (r, g) whose committed GPUs some
        candidate cell may use (built or not, so a restricted model prices committed
        capacity like the full one), at most what the busiest segment there needs."""
        m = self.m
        fixed = self.restrictions.fixed_commitments
        horizon = self.settings.horizon_months
        self.active: dict[tuple, list] = defaultdict(list)  # (r, g, month) → commitments
        for (r, g) in sorted(self.committed_used):
            for o in self.commit_offers.get((r, g), []):
                # committing the minimum can pay even when fewer GPUs are needed
                up = max(math.ceil(self.busiest.get((r, g), 0.0) - 1e-9), o.min_gpus)
                n = o.gpus_per_instance  # whole instances: up and max_gpus rounded to n
                up = -(-up // n) * n
                if o.max_gpus is not None:
                    up = min(up, o.max_gpus // n * n)
                if up <= 0 and fixed is None:
                    continue
                for t in range(o.first_month, horizon):
                    ids = f"{self._id('o', o.key)}_t{t}"
                    if fixed is not None:
                        if (o.key, t) not in fixed:
                            continue
                        q = fixed[(o.key, t)]
                        var = m.prob.add_variable(f"commit__{ids}", q, q, pulp.LpInteger)
                    else:
                        var = self._var(f"commit__{ids}", pulp.LpInteger, up=up)
                    m.commit[(o.key, t)] = var
                    for month in range(t, min(t + o.commit_months, horizon)):
                        self.active[(r, g, month)].append((var, -1.0))
        for (key, t), q in sorted((fixed or {}).items()):
            if (key, t) not in m.commit:  # signed, paid, but of no use to this variant
                ids = f"{self._id('o', key)}_t{t}"
                m.commit[(key, t)] = m.prob.add_variable(f"commit__{ids}", q, q,
                                                         pulp.LpInteger)
        terms = []
        for (key, t), v in m.commit.items():
            payments, upfront = counted_per_gpu(self.s.offer_by_key[key], t, self.settings,
                                                discounted=True)
            terms.append((v, payments + upfront))
        for v, a in terms:
            m.prob.objective.addterm(v, a)

    def add_committed_capacity(self, replicas: list[tuple]):
        """committed_capacity: replicas on committed GPUs fit in the active commitments.

        For each (r, g, m, k):
            Σ_p gpus_per_replica[p,g] · replicas[p,r,g,committed,m,k]
                ≤ Σ_{o at (r,g), t ≤ m < t + commit_months[o]} commit[o,t] + existing[r,g,m]
        A row exists wherever committed replicas are (elsewhere it would only say
        −Σ commit ≤ existing, always true: at 1000x100x36 such rows held most of a part's
        nonzeros).
        """
        m = self.m
        usage: dict[tuple, list] = defaultdict(list)
        for key in replicas:
            p, r, g, src, month, k = key
            if src == COMMITTED:
                usage[(r, g, month, k)].append(
                    (m.replicas[key], float(self.gpus_per_replica[(p, g)])))
        for (r, g, month, k) in sorted(usage, key=str):
            ids = f"{self._id('r', r)}_{self._id('g', g)}_m{month}_k{k}"
            key = (r, g, month, k)
            terms = usage.get(key, [])
            if key not in m.rows["committed_capacity"]:
                terms = terms + self.active.get((r, g, month), [])
            left = self.existing_gpus[(r, g, month)]
            self._row("committed_capacity", key, f"committed_capacity__{ids}",
                      pulp.LpConstraintLE, float(left), terms)

    def add_offer_capacity(self, replicas: list[tuple]):
        """offer_capacity: no pay-as-you-go offer is used beyond max_gpus in any month and
        segment: Σ_p gpus_per_replica · replicas[p,r,g,o,m,k] ≤ max_gpus[o].

        whole_instances: on an offer sold in instances of n > 1 GPUs the GPUs in use are
        paid in whole instances: Σ_p gpus_per_replica · replicas[p,r,g,o,m,k]
        ≤ n · instances[o,m,k], with instances ≤ floor(max_gpus / n)."""
        m = self.m
        payg: dict[tuple, list] = defaultdict(list)
        whole: dict[tuple, list] = defaultdict(list)
        for key in replicas:
            p, r, g, src, month, k = key
            if src == COMMITTED:
                continue
            term = (m.replicas[key], float(self.gpus_per_replica[(p, g)]))
            if self.payg_offer[src].gpus_per_instance > 1:
                whole[(src, month, k)].append(term)
            elif self.payg_offer[src].max_gpus is not None:
                payg[(src, month, k)].append(term)
        for (src, month, k), terms in whole.items():
            o = self.payg_offer[src]
            ids = f"{self._id('o', src)}_m{month}_k{k}"
            if (src, month, k) not in m.instances:
                up = None if o.max_gpus is None else o.max_gpus // o.gpus_per_instance
                v = m.instances[(src, month, k)] = self._var(f"instances__{ids}",
                                                             pulp.LpInteger, up=up)
                terms = terms + [(v, -float(o.gpus_per_instance))]
                m.prob.objective.addterm(v, o.gpus_per_instance * self.hours[k]
                                         * o.usd_per_gpu_hour * self.settings.discount(month))
            self._row("whole_instances", (src, month, k), f"whole_instances__{ids}",
                      pulp.LpConstraintLE, 0.0, terms)
        for (src, month, k), terms in payg.items():
            self._row("offer_capacity", (src, month, k),
                      f"offer_capacity__{self._id('o', src)}_m{month}_k{k}",
                      pulp.LpConstraintLE, float(self.payg_offer[src].max_gpus), terms)

    def add_commitment_capacity(self):
        """offer_capacity of commitments: in each month, the GPUs of one offer committed
        and active are at most max_gpus: Σ_{t ≤ m < t + commit_months} commit[o,t] ≤ max."""
        m = self.m
        by_offer: dict[str, list[tuple[int, pulp.LpVariable]]] = defaultdict(list)
        for (key, t), v in m.commit.items():
            by_offer[key].append((t, v))
        for key, starts in by_offer.items():
            o = self.s.offer_by_key[key]
            if o.max_gpus is None:
                continue
            for month in self.settings.months:
                terms = [(v, 1.0) for t, v in starts if t <= month < t + o.commit_months]
                if len(terms) > 1 or (terms and terms[0][0].upBound > o.max_gpus):
                    self._add(terms, pulp.LpConstraintLE, float(o.max_gpus),
                              f"offer_capacity__{self._id('o', key)}_m{month}")

    def add_minimum_commitment(self):
        """minimum_commitment: a commitment on an offer with min_gpus k is 0 or ≥ k.

        commit[o,t] ≥ k · commit_on[o,t]
        minimum_commitment_on: nothing is committed on a commitment not signed;
        commit[o,t] ≤ upper · commit_on[o,t]
        """
        m = self.m
        for (key, t), v in m.commit.items():
            o = self.s.offer_by_key[key]
            if o.min_gpus <= 1:
                continue
            ids = f"{self._id('o', key)}_t{t}"
            if v.upBound < o.min_gpus:
                v.upBound = 0  # cannot reach the minimum: never signed
                continue
            on = self._var(f"commit_on__{ids}", pulp.LpBinary)
            m.commit_on[(key, t)] = on
            self._add([(v, 1.0), (on, -float(o.min_gpus))], pulp.LpConstraintGE, 0.0,
                      f"minimum_commitment__{ids}")
            self._add([(v, 1.0), (on, -float(v.upBound))], pulp.LpConstraintLE, 0.0,
                      f"minimum_commitment_on__{ids}")

    def add_whole_commitment_instances(self):
        """whole_instances of commitments: on an offer sold in instances of n > 1 GPUs a
        commitment is whole instances: commit[o,t] = n · commit_instances[o,t]."""
        m = self.m
        for (key, t), v in m.commit.items():
            n = self.s.offer_by_key[key].gpus_per_instance
            if n <= 1:
                continue
            ids = f"{self._id('o', key)}_t{t}"
            up = None if v.upBound is None else int(v.upBound) // n
            whole = m.commit_instances[(key, t)] = self._var(
                f"commit_instances__{ids}", pulp.LpInteger, up=up)
            self._add([(v, 1.0), (whole, -float(n))], pulp.LpConstraintEQ, 0.0,
                      f"whole_instances__{ids}")

    def add_spot_share(self, supply: list[tuple]):
        """spot_share: spot delivers at most max_spot_share of a workload's served units.

        For each (w, m, k) with some spot supply:  Σ_spot supply ≤ share · Σ_all supply
        """
        m = self.m
        new: dict[tuple, list] = defaultdict(list)
        for key in supply:
            w, r, g, src, month, k = key
            if self.s.workload_by_name[w].max_spot_share < 1.0:
                new[(w, month, k)].append(key)
        for (w, month, k), keys in new.items():
            share = self.s.workload_by_name[w].max_spot_share
            if (w, month, k) not in m.rows["spot_share"]:
                if not any(self._is_spot(key[3]) for key in keys):
                    continue
                # the row is new: every supply of (w, m, k) joins it, built before or now
                keys = [(w, *x, month, k) for x in self.sources[w]
                        if (w, *x, month, k) in m.supply]
            terms = [(m.supply[key], (1.0 - share) if self._is_spot(key[3]) else -share)
                     for key in keys]
            self._row("spot_share", (w, month, k),
                      f"spot_share__{self._id('w', w)}_m{month}_k{k}", pulp.LpConstraintLE,
                      0.0, terms)

    def _is_spot(self, src: str) -> bool:
        return src != COMMITTED and self.payg_offer[src].term == "spot"

    def add_single_region(self, supply: list[tuple]):
        """single_region: a training workload runs on one GPU type in one region.

        For each (r, g, m, k):
            Σ_src supply[w,r,g,src,m,k] ≤ level[w,m,k] · choose[w,r,g]
        single_region_choice: Σ_{r,g} choose[w,r,g] ≤ 1
        """
        m = self.m
        by_rg: dict[tuple, list] = defaultdict(list)
        for key in supply:
            w, r, g, src, month, k = key
            if self.s.workload_by_name[w].single_region:
                by_rg[(w, r, g, month, k)].append((m.supply[key], 1.0))
        chosen: dict[str, list] = defaultdict(list)
        for (w, r, g, month, k), terms in by_rg.items():
            key = (w, r, g)
            if key not in m.choose:
                ids = f"{self._id('w', w)}_{self._id('r', r)}_{self._id('g', g)}"
                m.choose[key] = self._var(f"choose__{ids}", pulp.LpBinary)
                chosen[w].append((m.choose[key], 1.0))
            if (w, r, g, month, k) not in m.rows["single_region"]:
                terms = terms + [(m.choose[key], -self.total_level[(w, month, k)])]
            ids = f"{self._id('w', w)}_{self._id('r', r)}_{self._id('g', g)}_m{month}_k{k}"
            self._row("single_region", (w, r, g, month, k), f"single_region__{ids}",
                      pulp.LpConstraintLE, 0.0, terms)
        for w, terms in chosen.items():
            self._row("single_region_choice", w, f"single_region_choice__{self._id('w', w)}",
                      pulp.LpConstraintLE, 1.0, terms)

    def add_costs(self, supply: list[tuple], replicas: list[tuple]):
        """objective: the least total of pay-as-you-go GPUs, new commitments, egress and
        unmet-demand penalty, each cost weighed by δ(m) = (1 + d)^(−m/12) in the month m
        it is paid (d: discount_rate_annual; h[k]: the hours of segment k in a month;
        price[o]: usd_per_gpu_hour):

            Σ replicas[p,r,g,o,m,k] · gpus_per_replica[p,g] · h[k] · price[o] · δ(m)
          + Σ instances[o,m,k] · n[o] · h[k] · price[o] · δ(m)
          + Σ commit[o,t] · counted[o,t]
          + Σ supply[w,r,g,src,m,k] · egress_gb_per_unit_hour[w] · egress_usd_per_gb[r]
                                    · h[k] · δ(m)
          + Σ unmet[w,s,m,k] · unmet_penalty[w] · h[k] · δ(m)
          + the sunk cost of existing contracts and the penalty of demand no source can
            serve (constants)

        over pay-as-you-go offers o (replicas: offers sold GPU by GPU; instances: those
        sold in instances of n[o] GPUs); counted[o,t]: a GPU's payments in the months
        counted under the tail policy, and its upfront (its share, under `prorate`), each
        weighed by δ of the month paid (planner.model.costs). (This method adds the
        pay-as-you-go GPU-hours and egress of the cells it builds; the other terms are
        set as the model is built.)"""
        objective = self.m.prob.objective
        for key in replicas:
            p, r, g, src, month, k = key
            # GPUs sold in instances are paid per instance (add_offer_capacity)
            if src != COMMITTED and self.payg_offer[src].gpus_per_instance == 1:
                objective.addterm(self.m.replicas[key], self.replica_cost(p, g, src, month, k))
        for key in supply:
            w, r, g, src, month, k = key
            cost = self.supply_cost(w, r, month, k)
            if cost > 0:
                objective.addterm(self.m.supply[key], cost)


@contextmanager
def paused_gc():
    """Python's cyclic garbage collector paused for the block: a model's build makes
    hundreds of thousands of objects (PuLP variables, expressions, rows), none of them
    garbage, and every collection of the oldest generation walks all of them (the default
    scenario's model 2.1-2.6 s with it paused, 3.1-3.9 s without; its 13,938 cover cuts
    0.5 s, 2.1 s without). The collector runs again after the block."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name) or "scenario"
