"""The model's formulation, rule by rule, against reviewed snapshots (golden files).

One small scenario (`EVERY_RULE`) makes the builder emit every family of rows SPEC §2
asks for. Each family is written out as the user would read it — user names for the ids
the solver sees, terms sorted, coefficients to 9 significant figures — and compared
with its file in `tests/golden/formulation/`: a change to any rule's rows, or to the
objective or the variables' bounds, shows as a diff of that family alone. A family the
builder can emit without a file fails the last test, so a new rule cannot go unreviewed.

After an intended change, rewrite the files and read the diff before committing it:
    PLANNER_UPDATE_GOLDEN=1 python -m pytest -n 0 tests/test_formulation.py
"""

from __future__ import annotations

import ast
import os
import re
from collections import defaultdict
from pathlib import Path

import pulp
import pytest
from scenarios import scenario, write_csv

from planner.io.validate import load_scenario
from planner.model import builder as builder_module
from planner.model import formulation
from planner.model.builder import ModelBuilder, PlanningModel
from planner.model.candidates import find_candidates

GOLDEN = Path(__file__).parent / "golden" / "formulation"
UPDATE = os.environ.get("PLANNER_UPDATE_GOLDEN") == "1"

# Every rule on one small market: 3 months, 2 segments (chat's peak), 3 regions.
EVERY_RULE = scenario(
    settings={"horizon_months": 3, "discount_rate_annual": 0.1, "tail_policy": "prorate"},
    gpus=[{"gpu": "A"}, {"gpu": "B"}],
    sites=[{"site": "s1", "country": "US", "jurisdiction": "US"},
           {"site": "s2", "country": "US", "jurisdiction": "US"},
           {"site": "s3", "country": "DE", "jurisdiction": "EU"}],
    links=[{"site_a": "s1", "site_b": "s2", "rtt_ms": 10},
           {"site_a": "s2", "site_b": "s3", "rtt_ms": 80}],
    regions=[{"region": "r1", "provider": "p1", "site": "s1"},
             {"region": "r2", "provider": "p2", "site": "s2", "egress_usd_per_gb": 0.05},
             {"region": "r3", "provider": "p1", "site": "s3"}],
    offers=[
        # offer_capacity (pay-as-you-go)
        {"region": "r1", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2.0,
         "max_gpus": 16},
        # spot_share, derated by its interruption rate
        {"region": "r1", "gpu": "A", "term": "spot", "usd_per_gpu_hour": 0.8,
         "interruption_rate": 0.1},
        # minimum_commitment, offer_capacity of overlapping terms, an upfront, prorated
        {"region": "r2", "gpu": "A", "term": "reserved", "usd_per_gpu_hour": 1.5,
         "commit_months": 2, "max_gpus": 8, "min_gpus": 4, "upfront_usd_per_gpu": 100},
        # whole_instances (pay-as-you-go), egress from r2
        {"region": "r2", "gpu": "B", "term": "on_demand", "usd_per_gpu_hour": 3.0,
         "gpus_per_instance": 4},
        # whole_instances (commitments)
        {"region": "r3", "gpu": "B", "term": "monthly", "usd_per_gpu_hour": 2.5,
         "commit_months": 1, "gpus_per_instance": 2},
        {"region": "r3", "gpu": "A", "term": "on_demand", "usd_per_gpu_hour": 2.2},
    ],
    workloads=[
        # two demand sites (flows, flow_balance), an SLO, a pool, peaks, spot, egress
        {"workload": "chat", "kind": "inference", "latency_slo_ms": 20, "pool": "llm",
         "peak_to_average": 1.5, "peak_hours_share": 0.3, "allow_spot": "true",
         "max_spot_share": 0.5, "egress_gb_per_unit_hour": 0.001},
        {"workload": "batch", "kind": "inference", "pool": "llm", "residency": "US"},
        # single_region, single_region_choice
        {"workload": "train", "kind": "training", "residency": "EU;US"},
    ],
    throughput=[
        {"workload": "chat", "gpu": "A", "units_per_gpu": 10, "gpus_per_replica": 2},
        {"workload": "chat", "gpu": "B", "units_per_gpu": 25, "gpus_per_replica": 2},
        {"workload": "batch", "gpu": "A", "units_per_gpu": 12, "gpus_per_replica": 2},
        {"workload": "batch", "gpu": "B", "units_per_gpu": 30, "gpus_per_replica": 2},
        {"workload": "train", "gpu": "A", "units_per_gpu": 1},
        {"workload": "train", "gpu": "B", "units_per_gpu": 2},
    ],
    demand=[
        {"workload": "chat", "period": "2027-01", "amount": 20, "site": "s1"},
        {"workload": "chat", "period": "2027Q1", "amount": 15, "site": "s2"},
        {"workload": "batch", "period": "2027Q1", "amount": 8},
        {"workload": "train", "period": "2027-01", "amount": 8},
        {"workload": "train", "period": "2027-02", "amount": 8},
    ],
    # committed_capacity with GPUs already there
    existing=[{"region": "r2", "gpu": "A", "gpus": 2, "start_month": "2027-01",
               "end_month": "2027-02", "usd_per_gpu_hour": 1.0}],
)

# The variables' kinds: PlanningModel's dicts of them, named `<kind>__<ids>`.
VARIABLE_KINDS = ("unmet", "flow", "supply", "replicas", "commit", "commit_on", "instances",
                  "commit_instances", "choose")
# An id as ModelIndex makes them (src before s: both start with s).
ID = re.compile(r"^(src|w|s|r|g|p|o)(\d+)$")


def _number(x: float) -> str:
    return f"{x:.9g}"


class Reading:
    """A built model's rows, objective and variables in the user's names."""

    def __init__(self, model: PlanningModel):
        self.model = model
        self.var_name = {}
        for kind in VARIABLE_KINDS:
            for key, var in getattr(model, kind).items():
                key = key if isinstance(key, tuple) else (key,)
                self.var_name[var.name] = f"{kind}[{', '.join(map(str, key))}]"
        self.id_name = {ident: name for (kind, name), ident in model.index.ids.items()}

    def _row_name(self, name: str) -> str:
        family, _, ids = name.partition("__")
        names = [self.id_name[t] if ID.match(t) else t for t in ids.split("_")]
        return f"{family}[{', '.join(names)}]"

    def _terms(self, expr) -> str:
        terms = sorted((self.var_name[v.name], a) for v, a in expr.items())
        return " ".join(f"{'-' if a < 0 else '+'} {_number(abs(a))} {name}"
                        for name, a in terms)

    def families(self) -> dict[str, str]:
        """family → its text: the constraint families, `objective` and `variables`."""
        sense = {pulp.LpConstraintLE: "<=", pulp.LpConstraintGE: ">=",
                 pulp.LpConstraintEQ: "="}
        rows = defaultdict(list)
        for name, c in self.model.prob.constraints.items():
            rows[name.partition("__")[0]].append(
                f"{self._row_name(name)}: {self._terms(c)} {sense[c.sense]} "
                f"{_number(-c.constant + 0.0)}")
        texts = {family: "\n".join(sorted(lines)) + "\n" for family, lines in rows.items()}
        objective = self.model.prob.objective
        texts["objective"] = (f"minimize {self._terms(objective)} "
                              f"+ {_number(objective.constant)}\n")
        lines = []
        for v in self.model.prob.variables():
            if v.name in self.var_name:
                up = "inf" if v.upBound is None else _number(v.upBound)
                lines.append(f"{self.var_name[v.name]}: {v.cat.lower()} "
                             f"[{_number(v.lowBound)}, {up}]")
        texts["variables"] = "\n".join(sorted(lines)) + "\n"
        return texts


@pytest.fixture(scope="module")
def families(tmp_path_factory) -> dict[str, str]:
    folder = write_csv(tmp_path_factory.mktemp("every_rule"), EVERY_RULE)
    s = load_scenario(folder)
    return Reading(ModelBuilder(s, find_candidates(s)).build()).families()


def _names_in_builder() -> tuple[dict[str, set[str]], set[str]]:
    """(the row families each of the builder's methods emits, the variable kinds): the
    `<name>__` prefixes of the names its rows (`_add`, `_row`) and its variables (`_var`,
    `add_variable`) get."""
    rows, variables = defaultdict(set), set()
    tree = ast.parse(Path(builder_module.__file__).read_text())
    builder = next(node for node in tree.body
                   if isinstance(node, ast.ClassDef) and node.name == "ModelBuilder")
    for method in builder.body:
        if not isinstance(method, ast.FunctionDef):
            continue
        for call in ast.walk(method):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                continue
            into = {"_add": rows[method.name], "_row": rows[method.name],
                    "_var": variables, "add_variable": variables}.get(call.func.attr)
            for arg in call.args if into is not None else ():
                if isinstance(arg, ast.JoinedStr) and isinstance(arg.values[0],
                                                                 ast.Constant):
                    match = re.match(r"([a-z_]+)__", arg.values[0].value)
                    if match:
                        into.add(match.group(1))
    return {name: found for name, found in rows.items() if found}, variables


ROWS_BY_METHOD, EMITTED_KINDS = _names_in_builder()
ROW_FAMILIES = set().union(*ROWS_BY_METHOD.values())


def test_every_variable_is_named_in_the_users_terms(families):
    # each variable the model has is one of PlanningModel's kinds, so the snapshots
    # leave none out
    assert "variables" in families
    assert all(line.split("[")[0] in VARIABLE_KINDS
               for line in families["variables"].splitlines())


@pytest.mark.parametrize("family", sorted(ROW_FAMILIES | {"objective", "variables"}))
def test_each_family_of_rows_matches_its_snapshot(families, family):
    golden = GOLDEN / f"{family}.txt"
    assert family in families, f"the scenario makes no {family} rows: extend EVERY_RULE"
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(families[family])
    assert golden.exists(), f"{golden} is missing: write it with PLANNER_UPDATE_GOLDEN=1"
    assert families[family] == golden.read_text(), (
        f"the {family} rows changed; if meant, rewrite with PLANNER_UPDATE_GOLDEN=1 "
        "and review the diff")


def test_every_family_the_builder_can_emit_has_a_snapshot():
    assert EMITTED_KINDS == set(VARIABLE_KINDS), "the variables' kinds changed"
    assert len(ROW_FAMILIES) >= 10, "the builder's rows were not found"
    files = {p.stem for p in GOLDEN.glob("*.txt")} - {"objective", "variables"}
    assert ROW_FAMILIES - files == set(), "families of rows with no snapshot"
    assert files - ROW_FAMILIES == set(), "snapshots of rows the builder no longer makes"


def test_each_rule_is_documented_where_it_is_built():
    # STYLE.md: a docstring with the rule's meaning and inequality where its rows are
    # made, under the name its rows carry
    for name, families in ROWS_BY_METHOD.items():
        doc = getattr(ModelBuilder, name).__doc__ or ""
        for family in families:
            assert re.search(rf"\b{family}\b", doc), f"{name} does not document {family}"


def test_the_readme_shows_the_formulation_as_the_builder_documents_it():
    readme = formulation.README.read_text()
    assert readme == formulation.readme_with(formulation.formulation(), readme), (
        "README.md's formulation differs from the builder's docstrings: "
        "python -m planner.model.formulation --readme")
    text = formulation.formulation()
    for family in ROW_FAMILIES | {"objective"}:
        assert re.search(rf"\b{family}\b", text), f"the formulation leaves out {family}"
