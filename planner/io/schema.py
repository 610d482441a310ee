"""The input tables of a scenario (SPEC §2), as data.

One `Column` per column: its type, whether it is required, its default, unit and meaning.
The loader, the validator and the template workbook all read this one description, so a
column added here is loaded, checked and documented in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

TERMS = ("spot", "on_demand", "monthly", "reserved", "build_to_order")
PAY_AS_YOU_GO = ("spot", "on_demand")
COMMITMENT_TERMS = ("monthly", "reserved", "build_to_order")
KINDS = ("training", "inference", "burst")
TAIL_POLICIES = ("full", "prorate")
SOLVERS = ("highs", "cbc")


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # id, text, float, int, bool, month, date, period, enum
    required: bool = False
    default: object = None
    unit: str = ""
    doc: str = ""
    choices: tuple[str, ...] = ()
    minimum: float | None = None  # inclusive lower bound
    maximum: float | None = None  # inclusive upper bound
    positive: bool = False  # strictly greater than zero
    allow_blank: bool = False  # a required column whose cells may be blank


@dataclass(frozen=True)
class Table:
    name: str
    row_is: str
    columns: tuple[Column, ...]
    optional: bool = False

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def _c(name, type_, **kw) -> Column:
    return Column(name, type_, **kw)


TABLES: tuple[Table, ...] = (
    Table(
        "settings",
        "one setting",
        (
            _c("key", "text", required=True, doc="setting name, see the README sheet"),
            _c("value", "text", required=True, allow_blank=True,
               doc="setting value; blank: the default"),
        ),
    ),
    Table(
        "gpus",
        "a GPU type",
        (
            _c("gpu", "id", required=True, doc="GPU type name, e.g. H100"),
            _c("memory_gb", "float", unit="GB", minimum=0, doc="memory per GPU"),
            _c("mem_bandwidth_tbps", "float", unit="TB/s", minimum=0, doc="memory bandwidth"),
            _c("bf16_tflops", "float", unit="TFLOPS", minimum=0, doc="dense BF16 throughput"),
            _c("tdp_watts", "float", unit="W", minimum=0, doc="thermal design power"),
            _c("source", "text", doc="where the figures come from"),
        ),
    ),
    Table(
        "sites",
        "a place on the network map",
        (
            _c("site", "id", required=True, doc="site name (a metro or campus)"),
            _c("country", "text", required=True, doc="ISO 3166 alpha-2 country code"),
            _c("jurisdiction", "text", required=True, doc="data jurisdiction, e.g. EU, UK, US"),
            _c("lat", "float", unit="degrees", minimum=-90, maximum=90, doc="latitude"),
            _c("lon", "float", unit="degrees", minimum=-180, maximum=180, doc="longitude"),
        ),
    ),
    Table(
        "links",
        "a network link between two sites",
        (
            _c("site_a", "id", required=True, doc="one end (a site)"),
            _c("site_b", "id", required=True, doc="other end (a site)"),
            _c("rtt_ms", "float", required=True, unit="ms", minimum=0, doc="round-trip latency"),
        ),
    ),
    Table(
        "regions",
        "a provider's location where capacity is bought",
        (
            _c("region", "id", required=True, doc="region name, unique across providers"),
            _c("provider", "text", required=True, doc="provider name"),
            _c("site", "id", required=True, doc="site of the region on the network map"),
            _c("egress_usd_per_gb", "float", default=0.0, unit="USD/GB", minimum=0,
               doc="price of data leaving the region"),
        ),
    ),
    Table(
        "offers",
        "a price for one GPU type in one region on one term",
        (
            _c("region", "id", required=True, doc="region (regions table)"),
            _c("gpu", "id", required=True, doc="GPU type (gpus table)"),
            _c("term", "enum", required=True, choices=TERMS, doc="contract term"),
            _c("usd_per_gpu_hour", "float", required=True, unit="USD/GPU-hour", minimum=0,
               doc="price per GPU-hour"),
            # (at most 50 years: 1e8 months had passed and held every cost's month by
            # month sum for 10 s, 1e12 for minutes)
            _c("commit_months", "int", unit="months", minimum=0, maximum=600,
               doc="length of a commitment; blank for spot and on_demand"),
            _c("upfront_usd_per_gpu", "float", default=0.0, unit="USD/GPU", minimum=0,
               doc="paid once per committed GPU in the start month"),
            _c("lead_time_days", "float", default=0.0, unit="days", minimum=0,
               doc="days from signing to use; first month = ceil(days / 30)"),
            _c("max_gpus", "int", unit="GPUs", minimum=0, doc="capacity; blank: unlimited"),
            # (at most 10^8, more GPUs than exist: 1e20 passed and the plan lost demand
            # to the float arithmetic)
            _c("min_gpus", "int", default=0, unit="GPUs", minimum=0, maximum=100_000_000,
               doc="smallest commitment; 0: any"),
            _c("interruption_rate", "float", default=0.0, minimum=0, maximum=0.999999,
               doc="share of spot throughput lost to interruptions"),
            _c("gpus_per_instance", "int", default=1, unit="GPUs", positive=True,
               maximum=100_000_000,
               doc="GPUs are bought on this offer in whole instances of this many"),
            _c("source", "text", doc="where the price comes from"),
            _c("price_date", "date", doc="when the price was read (YYYY-MM-DD)"),
        ),
    ),
    Table(
        "workloads",
        "a workload to serve",
        (
            _c("workload", "id", required=True, doc="workload name"),
            _c("kind", "enum", required=True, choices=KINDS, doc="training, inference or burst"),
            _c("latency_slo_ms", "float", unit="ms", minimum=0,
               doc="largest transit latency from users to region; blank: no limit"),
            _c("residency", "text",
               doc="';'-separated jurisdictions or country codes allowed; blank: anywhere"),
            _c("allow_spot", "bool", doc="may use spot; blank: true for burst, else false"),
            _c("max_spot_share", "float", default=1.0, minimum=0, maximum=1,
               doc="largest share of served units on spot in any hour"),
            # below 1 the shared peak hours are the workload's quiet ones (a batch that
            # runs mostly off-peak): warned about, as a share typed in this column would be
            _c("peak_to_average", "float", default=1.0, minimum=0,
               doc="level in the peak hours over the month's average (below 1: quieter "
                   "in the peak hours, busier in the others)"),
            _c("peak_hours_share", "float", default=0.0, minimum=0, maximum=1,
               doc="share of each month's hours at peak (the first ones)"),
            _c("egress_gb_per_unit_hour", "float", default=0.0, unit="GB/unit-hour", minimum=0,
               doc="data leaving the serving region per unit served for an hour"),
            _c("single_region", "bool",
               doc="one GPU type in one region; blank: true for training, else false"),
            _c("pool", "text", doc="workloads with the same pool share replicas"),
            _c("unmet_penalty_usd_per_unit_hour", "float", unit="USD/unit-hour", minimum=0,
               doc="cost of a unit of demand left unmet for an hour; blank: setting"),
        ),
    ),
    Table(
        "throughput",
        "how much of a workload one GPU type delivers",
        (
            _c("workload", "id", required=True, doc="workload (workloads table)"),
            _c("gpu", "id", required=True, doc="GPU type (gpus table)"),
            _c("units_per_gpu", "float", required=True, unit="units", positive=True,
               doc="units of the workload one GPU delivers"),
            _c("gpus_per_replica", "int", default=1, unit="GPUs", minimum=1,
               doc="GPUs in one replica"),
        ),
    ),
    Table(
        "demand",
        "the forecast",
        (
            _c("workload", "id", required=True, doc="workload (workloads table)"),
            _c("period", "period", required=True, doc="month 2027-01 or quarter 2027Q1"),
            _c("amount", "float", required=True, unit="units", minimum=0,
               doc="average level in the period"),
            _c("site", "id", doc="where the users are; required with a latency SLO"),
        ),
    ),
    Table(
        "existing",
        "a contract already signed",
        (
            _c("region", "id", required=True, doc="region (regions table)"),
            _c("gpu", "id", required=True, doc="GPU type (gpus table)"),
            _c("gpus", "int", required=True, unit="GPUs", minimum=0, doc="GPUs committed"),
            _c("start_month", "month", required=True, doc="first month, YYYY-MM"),
            _c("end_month", "month", required=True, doc="last month (inclusive), YYYY-MM"),
            _c("usd_per_gpu_hour", "float", required=True, unit="USD/GPU-hour", minimum=0,
               doc="contract price"),
        ),
        optional=True,
    ),
    Table(
        "demand_scenarios",
        "a demand multiplier in one scenario of `solve --stochastic`",
        (
            _c("scenario", "id", required=True, doc="scenario name"),
            _c("probability", "float", required=True, allow_blank=True, minimum=0,
               maximum=1, doc="the scenario's probability, on at least one of its rows "
                              "(the others blank or the same); all sum to 1"),
            _c("workload", "id", doc="workload it scales; blank: every workload"),
            _c("period", "period", doc="month or quarter it scales; blank: every month"),
            _c("multiplier", "float", required=True, minimum=0,
               doc="demand × this in the scenario"),
        ),
        optional=True,
    ),
)

TABLES_BY_NAME = {t.name: t for t in TABLES}

HORIZON_MOST = 240

# Settings are rows of the settings table; each key is typed like a column.
SETTINGS: tuple[Column, ...] = (
    _c("start_month", "month", required=True, doc="first month of the horizon, YYYY-MM"),
    # 20 years: past it the model only grows (10,000 months took 35 s and 925 MB to
    # plan six months of demand), and no contract or forecast reaches that far
    _c("horizon_months", "int", required=True, unit="months", minimum=1,
       maximum=HORIZON_MOST, doc=f"months planned (at most {HORIZON_MOST})"),
    _c("hours_per_month", "float", default=730.0, unit="hours", positive=True, maximum=744,
       doc="hours in every month (at most 744: 31 days)"),
    _c("tail_policy", "enum", default="full", choices=TAIL_POLICIES,
       doc="full: whole obligation counts; prorate: only months inside the horizon"),
    _c("discount_rate_annual", "float", default=0.0, minimum=0, doc="annual discount rate"),
    _c("unmet_penalty_usd_per_unit_hour", "float", default=1000.0, unit="USD/unit-hour",
       minimum=0, doc="default cost of unmet demand"),
    _c("solver", "enum", default="highs", choices=SOLVERS, doc="highs or cbc"),
    _c("time_limit_s", "float", default=60.0, unit="s", positive=True,
       doc="the budget of the whole command, loading to the last file written "
           "(comparison plans and what-if variants included)"),
    _c("mip_gap", "float", default=0.0001, minimum=0, maximum=1, doc="relative MIP gap"),
    _c("stale_price_days", "int", default=180, unit="days", minimum=0,
       doc="an offer whose price_date is older than this before start_month is warned about"),
)

SETTINGS_BY_NAME = {c.name: c for c in SETTINGS}
