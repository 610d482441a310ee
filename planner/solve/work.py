"""What each step of a solve is reckoned to take, in seconds, from what it did.

A budget on a work clock (planner.solve.budget.Work) is spent by these reckonings, not
by the wall clock, so that a run stopped by its budget stops at the same step on every
run and any machine. Each reckoning counts only what is the same on every run: cells,
columns, nonzeros, simplex iterations. The rates were fitted (2026-11-26) on this
project's machine (2 cores; one thread each) to the steps of the decomposition on the
default scenario and the generated 50x40x24, 200x40x24 and 1000x100x36 markets, and
err towards more than the wall clock saw: a reckoning short of it lets the wall clock's
safety stop decide, which no longer gives the same plan on every run.

Those are the fitted machine's seconds. Every reckoning here is in this machine's: the
fitted machine's times its pace (`set_pace`, measured once per machine:
planner.solve.pace), and what a budget holds (`lp_iterations_within`, `nodes_within`)
is read back through it. A command sets the pace once, before its first step, and hands
it to its workers (planner.cluster), so that their reckonings are its own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

_pace = 1.0  # wall seconds here per second of the fitted machine


def set_pace(pace: float) -> None:
    """Reckon from now on at `pace` (planner.solve.pace.machine_pace)."""
    global _pace
    _pace = float(pace)


def pace() -> float:
    """Wall seconds here per second of the fitted machine (1 until a command sets it)."""
    return _pace


class at_pace:
    """`fn` run at `pace` (default: the pace now) wherever it runs: in a process of its
    own (planner.beside) or on a cluster's worker (planner.cluster), whose reckonings
    are then the command's, not that process's default."""

    def __init__(self, fn: Callable, pace: float | None = None):
        self.fn, self.pace = fn, _pace if pace is None else pace

    def __call__(self, *args, **kwargs):
        set_pace(self.pace)
        return self.fn(*args, **kwargs)


def _paced(reckoning: Callable[..., float]) -> Callable[..., float]:
    """`reckoning` (the fitted machine's seconds) in this machine's seconds."""
    @functools.wraps(reckoning)
    def here(*args, **kwargs) -> float:
        return _pace * reckoning(*args, **kwargs)
    return here


def _part(cost: float, size: float, full: float) -> float:
    """A step's fixed cost, as much of it as a model of `size` pays: all of it from
    `full` on, in proportion below. The fixed costs were fitted on the default scenario
    and larger, where they stand for a step's setting up; a model of a few cells pays
    almost none of it (a stochastic command's scenarios of a 1-workload market: a cut
    reckoned 0.2 s took 6 ms, an evaluation 0.11 s took 0.03 s, on the fitted machine's
    scale, and 30 scenarios at --time-limit 30 were reckoned past it and ended at 5 s
    with one schedule compared)."""
    return cost * min(1.0, size / full)


# -- stages before the solve ----------------------------------------------------------------


@_paced
def load_s(scenario) -> float:
    """Starting the command and loading `scenario`: 0.6 s for the interpreter and
    imports, then 15 µs an input row (from the process's start to the scenario loaded:
    the default scenario, 1.2 k rows, 0.35 s; 200x40x24, 9.6 k rows, 0.33 s;
    1000x100x36, 69 k rows, 1.4 s)."""
    tables = ("gpus", "sites", "links", "regions", "offers", "workloads", "throughput",
              "demand", "existing", "demand_scenarios")
    return 0.6 + 1.5e-5 * sum(len(getattr(scenario, t)) for t in tables)


@_paced
def process_start_s() -> float:
    """A process of the command's own (planner.beside) started and its imports done,
    before the call it was handed runs: 0.7 s (measured under load on a machine of pace
    1.8-4: 0.6-0.9 s at pace 1, as `load_s`'s fixed 0.6 s)."""
    return 0.7


@_paced
def model_index_s(cells: int) -> float:
    """The region graph, the candidates and the model's index of `cells` supply cells
    (default 38.7 k cells 0.03 s; 200x40x24 1.67 M cells 0.55-0.85 s; 1000x100x36
    30 M cells ~5 s; below 40 k cells less of the fixed 0.05 s: 4 cells 0.4 ms, 1.9 k
    cells 6 ms on a machine of pace ~2.1)."""
    return 0.01 + _part(0.04, cells, 40_000) + 3.0e-7 * cells


@_paced
def extract_s(rows: int) -> float:
    """A solution turned into the plan's tables of about `rows` rows. Measured at pace
    0.77 (2026-11-27, stop 48): the default scenario 0.046 s for 6.3 k rows, 50x40x24
    0.089 s for 27 k, 200x40x24 0.37 s for 135 k, 1000x100x36 2.07 s for 731 k,
    reckoned 1.09-1.27 times that. The rate before, 0.05 s and 14 µs a row, fitted when
    the tables took 5.2 s for 370 k rows, reckoned them 2.3-3.8 times: a stochastic
    solve of the default scenario's size, 1.3 s, was reckoned 0.3 s too long. Below
    3 k rows, less of the fixed 0.04 s (at pace ~2.1: 6 rows 15 ms, 895 rows 39 ms)."""
    return 0.01 + _part(0.03, rows, 3_000) + 4.0e-6 * rows


def plan_tables_s(plan) -> float:
    """`extract_s` of a plan made (planner.report.plan.Plan), by its tables' rows."""
    return extract_s(len(plan.supply) + len(plan.assignments) + len(plan.flows))


def solution_tables_s(solution, plans: int = 1) -> float:
    """`extract_s` of `plans` plans the size of `solution` (planner.model.solution), about
    3 table rows a supply cell: plans compared by turning each into tables."""
    return plans * extract_s(3 * len(solution.supply))


@_paced
def build_s(cells: int) -> float:
    """The whole model of `cells` supply cells built in PuLP, to be solved by branch and
    bound (a stochastic evaluation's, ~2.9 k cells: 0.29 s)."""
    return 0.01 + 1.0e-4 * cells


# -- the decomposition ----------------------------------------------------------------------


@_paced
def blocks_s(cells: int) -> float:
    """The model's blocks as arrays, their kinds merged and small loads' share of a
    replica found (planner.solve.decompose.replicas; at pace 0.77: 200x40x24 0.06 +
    0.004 + 0.14 s, 1000x100x36, 30 M cells, 0.51 + 0.05 + 2.16 s; 13.9 s for the
    blocks alone before each workload's levels were gathered in one pass; below 40 k
    cells less of the fixed 0.02 s)."""
    return 0.002 + _part(0.018, cells, 40_000) + 1.3e-7 * cells


@_paced
def construct_s(pools: int) -> float:
    """A plan of `pools` pools (workloads sharing replicas, in a month and segment)
    built month by month (planner.solve.decompose.construct): default 0.09-0.12 s (315
    pools), 50x40x24 0.42-0.52 s (1,288), 200x40x24 2.6-3.1 s (7,917), 1000x100x36
    22-26 s (58 k)."""
    return 0.02 + 3.8e-4 * pools


@_paced
def master_start_s(cells: int, columns: int) -> float:
    """The master LP built with its first arcs (default 0.13 s, 39 k columns; 50x40x24
    0.39 s, 400 k; 200x40x24 0.60 s, 226 k; 1000x100x36 9.3 s, 1.6 M; below 40 k
    columns less of the fixed 0.1 s: at pace ~2.1, 4 cells 1 ms, 1.9 k cells 17 ms)."""
    return 0.01 + _part(0.09, columns, 40_000) + 2.5e-7 * cells + 1.2e-6 * columns


@_paced
def pricing_s(cells: int, pairs: int) -> float:
    """A round's pricing, bounds and columns added, beside its LP: by supply cell of the
    merged blocks (planner.solve.decompose.kinds) and by single-region pair (each
    pricing a plan over the horizon). Fitted 2026-11-27 at pace 0.77 on the rounds of
    the default scenario, 50x40x24, 200x40x24 and its three comparison plans,
    1000x100x36 and its pay-as-you-go variant (27 k-2.9 M cells, 150-14 k pairs:
    0.027-3.7 s a round), within 15 % of the wall clock; the larger the arrays, the
    more a cell costs; below 27 k cells less of the fixed 0.01 s."""
    return (0.001 + _part(0.009, cells, 27_000) + 1.3e-7 * cells + 1.4e-4 * pairs
            + 3e-13 * cells * cells)


def ascent_s(cells: int, pairs: int) -> float:
    """A step of the ascent: the Lagrangian function at new prices (as a round's
    pricing)."""
    return pricing_s(cells, pairs)


def cover_s(cells: int) -> float:
    """The whole model's LP with cover cuts (planner.solve.decompose.covered) reckoned
    before it is built: `build_s`, then `lp_s` of a dual simplex at 1.5 iterations, 9
    nonzeros, 2.2 columns and 1.4 rows a supply cell (the LP from scratch, then with its
    cuts from that basis; the default scenario: 48.5 k + 5.3 k iterations for its 13,938
    cuts, reckoned 6.56 s at pace 1 once solved, 6.67 s before; 24x12x12 4.42 s and
    4.91 s, 12x10x6 0.79 s and 0.84 s)."""
    return build_s(cells) + lp_s(int(1.5 * cells), 9 * cells, int(2.2 * cells),
                                 int(1.4 * cells), False)


@_paced
def whole_replicas_s(pairs: int) -> float:
    """The bound lifted by whole replicas (planner.solve.decompose.replicas): each of
    `pairs` single-region pairs priced with its floor. Measured at first prices, pace
    0.77 (stop 47): the default scenario 8 ms (150 pairs), 50x40x24 10 ms (189),
    200x40x24 82 ms (1,535), 1000x100x36 0.78 s (13,950): 56 µs a pair, reckoned some
    20 % long. (Reckoned before as an ascent step and a round's pricing of the pairs:
    5.3 s at 1000x100x36, 0.39 s at 200x40x24.)"""
    return 0.003 + 8.8e-5 * pairs


@_paced
def top_up_s(cells: int) -> float:
    """The LP that tops up one (region, GPU type)'s commitments over the plan's
    pay-as-you-go GPUs in `cells` (month, segment, price) cells
    (planner.solve.decompose.topup): HiGHS built and solved, a few ms."""
    return 0.004 + 2.0e-5 * cells


@_paced
def top_up_moves_s(moves: int) -> float:
    """`moves` tries to move a pool's pay-as-you-go replicas onto committed GPUs
    (planner.solve.decompose.topup.onto_committed: the pool's plan copied, costed and
    set, kept or put back): 35-62 µs a move at pace 2.09 (stop 62, the plans at first
    prices topped up: default 952 moves, 50x40x24 5.7 k, 200x40x24 31.6 k, 1000x100x36
    256 k, 57 µs each). Taken at the top, the largest's: its top-up, 17.7 s, had been
    reckoned at 7.3 s with its LPs alone, and the comparison plans' process overran its
    wall-clock stop; now 23.3 s (200x40x24's 3.1 s for 1.6 s, as much over as the
    smaller models' other steps on that machine)."""
    return 3.0e-5 * moves


@_paced
def top_up_scan_s(pools: int) -> float:
    """The plan's `pools` scanned for pay-as-you-go GPUs beside its commitments
    (planner.solve.decompose.topup.payg_beside_commitments): 2.3 µs a pool at pace 0.77
    (default 0.5 ms, 50x40x24 2.1 ms, 200x40x24 18 ms for 7,917 pools; stop 48)."""
    return 3.3e-6 * pools


@_paced
def lp_s(iterations: int, nonzeros: int, columns: int, rows: int, primal: bool) -> float:
    """A master LP solve of `iterations` simplex iterations from its last basis: reading
    the model and its solution (10 ms, less below 50 k nonzeros, and 0.2 µs a
    nonzero), then each iteration (`_per_iteration`)."""
    return _read_lp_s(nonzeros) + iterations * _per_iteration(nonzeros, columns, rows,
                                                              primal)


def _read_lp_s(nonzeros: int) -> float:
    """`lp_s`'s reading of the model and its solution, in the fitted machine's seconds."""
    return 0.001 + _part(0.009, nonzeros, 50_000) + 2.0e-7 * nonzeros


def lp_iterations_within(seconds: float, nonzeros: int, columns: int, rows: int,
                         primal: bool) -> int:
    """The most simplex iterations an LP solve reckoned at `lp_s` fits in `seconds`."""
    per = _per_iteration(nonzeros, columns, rows, primal)
    return max(0, int((seconds / _pace - _read_lp_s(nonzeros)) / max(per, 1e-9)))


def _per_iteration(nonzeros: int, columns: int, rows: int, primal: bool) -> float:
    """Seconds a simplex iteration of the master LP is reckoned to take. The primal's
    grows with the columns it prices (2 ns a column: 200x40x24's 3,365 iterations over
    234 k columns 1.5 s). The dual's with the nonzeros, the rows, and the nonzeros a row
    (measured: default, 0.2 M nonzeros, 11 k rows: 41 µs; 50x40x24's first, 1.14 M, 33 k
    rows, 34 a row: 152 µs; 200x40x24, 0.43-1.14 M, 44-62 k rows: 48-114 µs;
    1000x100x36, 2.9-4.5 M, 320-360 k rows: 179-769 µs). A compromise: 50x40x24's first
    0.98 times, 200x40x24's 1.25-1.35, the default's 1.45, 1000x100x36's three 1.31,
    0.91, 0.44. A first LP reckoned short had let the wall clock's safety stop end
    50x40x24 at --time-limit 20 and 30 (other plans from run to run); one reckoned long
    leaves rounds out (1000x100x36 with 0.25 µs a thousand rows: 2 master rounds, 14.2 %,
    where the third round's LP runs in what the first two were reckoned to spare).
    The dual's rate taken 0.88 times on 2026-11-27, at pace 0.77: 50x40x24's first LP
    then 1.09 times the wall clock, 200x40x24's six 1.08-1.36 (it had been 1.24-1.54)."""
    if primal:
        return 2.0e-9 * columns
    return 0.88 * (1.0e-5 + 6.0e-11 * nonzeros + 2.0e-6 * nonzeros / max(rows, 1)
                   + 1.0e-10 * rows)


@_paced
def pool_mip_s(columns: int, iterations: int) -> float:
    """A pool's MIP built, solved from its plan and read (planner.solve.decompose.
    improve): 4.4 ms, 2 µs a column and 0.29 ms a simplex iteration of its branch and
    bound. Fitted 2026-11-27 at pace 0.77 on 5,049 MIPs, some 10 % long of the wall
    clock: the default scenario's (130 columns, 44 iterations on average) 12.2 ms,
    50x40x24's (155, 18) 6.1 ms, 200x40x24's (42, 3) 3.7 ms, reckoned 1.10, 1.25 and 1.11
    times that (the rates before, 4.5 ms, 9.3 µs and 0.28 ms, fitted on 13,000 MIPs
    on a slower day with no pace, reckoned them 1.13, 1.42 and 1.22 times)."""
    return 4.4e-3 + 2.0e-6 * columns + 2.9e-4 * iterations


@_paced
def branch_and_bound_s(iterations: int, nonzeros: int, nodes: int) -> float:
    """HiGHS's branch and bound on a whole model (planner.solve.whole): by its simplex
    iterations, each dearer with the nonzeros (root cuts and heuristics ride on them),
    and its nodes. Fitted on nine generated markets of 146-4,786 cells (0.02-57 s); off
    by up to 3 times on one (6x4x2: 830 iterations, all in root cuts, 1.35 s)."""
    return 0.01 + iterations * (3.0e-4 + 1.2e-7 * nonzeros) + 1.0e-3 * nodes


@_paced
def root_node_s(domain: float) -> float:
    """HiGHS's root node on a whole model whose integer columns span `domain` values in
    all (`planner.solve.whole.integer_domain`). Its reduced-cost fixing walks each
    column's values from its lower bound to its upper (up to some 1,000 of them), and
    HiGHS checks no time limit there: a generated 12x7x5 market under a stochastic
    plan's commitments (1,435 replica columns, up to 2,859 replicas each), given 1.1 s,
    stopped at 2.7 s whatever the limit between 0.7 and 2.7 s, with a plan 5.7 times the
    decomposition's (made in 0.05 s); its bounds held to 300 replicas, at 1.1 s. Fitted
    on the root nodes of eleven generated markets' models under their plans'
    commitments: 818-639 k values, 0.01-16.6 s, within twice either way."""
    return 3.2e-5 * domain


def nodes_within(seconds: float, cells: int | None = None) -> int:
    """The nodes of branch and bound on a whole model of `cells` supply cells that
    `seconds` hold, at `node_s` a node (planner.solve.whole.solve_within): nodes, unlike
    a time limit, end it at the same point on every run (4x4x3 samples stopped at 0.4 s
    on the clock had bounds a few dollars apart)."""
    return max(1, int(seconds / (_pace * node_s(cells))))


# Seconds a node is reckoned to take on a model of NODE_CELLS supply cells or more
# (generated 8x8x3, seed 7: 10,291 nodes in 60 s; 16x10x4: 131 nodes in 57 s, most of it
# the root node's cuts; 8x4x4, seed 101, 440 cells: 16 ms a node at pace ~2.1).
NODE_S = 0.006
NODE_CELLS = 440


def node_s(cells: int | None) -> float:
    """Seconds a node of branch and bound is reckoned to take on a model of `cells`
    supply cells (None: NODE_S): less on a smaller one, as the square of its size (at
    pace ~2.1, generated 4x3x3, 96 cells: 0.31 ms; 3x3x2, 172 cells: 1.2 ms). At NODE_S
    a node, a 3x3x2 market's branch and bound had been given 780 nodes at --time-limit
    20 where it proves its optimum in some 3,000 (2 s), and stated 0.085 %."""
    if cells is None:
        return NODE_S
    return NODE_S * max(0.01, min(1.0, (cells / NODE_CELLS) ** 2))


def wall_stop_s(seconds: float) -> float:
    """Seconds on the wall clock after which a step given `seconds` of work (a master LP,
    branch and bound) is stopped all the same: WALL_SLACK times as long and a second
    more. A stop so far past the reckoning is rare (it ends the step at a different point
    from run to run) and keeps a step the reckoning misjudged from taking what follows:
    200x40x24's "on-demand from one provider" comparison plan (23 k rows, 44 k columns,
    $1 T of penalty in its objective) took 0.82 ms a simplex iteration, 9 times its
    reckoning, and its LP, stopped at its iterations after 8.8 s, made the comparison
    plans late; a small model's branch and bound can spend that long on its root node's
    cuts (16x10x4: 57 s, 131 nodes)."""
    return WALL_SLACK * seconds + 1.0


WALL_SLACK = 4.0


def wall_stop_after_plan_s(seconds: float) -> float:
    """Seconds on the wall clock after which branch and bound that can only improve a
    plan made already (the instance repair, the whole model after the decomposition),
    given `seconds` of work, is stopped: AFTER_PLAN_SLACK times as long and half a second
    more. Its nodes are counted, but not its root node's cuts and sub-MIPs, which HiGHS
    bounds by no count (its MIP ignores simplex_iteration_limit): the default scenario's
    pay-as-you-go comparison plan (21 k rows), given 2.9 s, spent 13 s at its root (to
    the WALL_SLACK stop) and found nothing near the decomposition's plan, so that the
    third comparison plan had no time left (a 67 % gap where it proves 0.96 % alone)."""
    return AFTER_PLAN_SLACK * seconds + 0.5


AFTER_PLAN_SLACK = 1.25


@_paced
def trim_s(pools: int) -> float:
    """Idle commitments trimmed from a plan of `pools` pools."""
    return 1.0e-5 * pools
