"""The one clock of a command.

`--time-limit` is the budget of the whole command (SPEC §4 v2): from start to the last
file written, comparison plans and what-if variants included. The command starts one
`Budget`; every stage asks it how long it may take, and hands a share of it to the
stages it calls. Nothing else measures time against the limit.

The command's budget is on the wall clock: it says when the command is late. What it
hands to the stages that choose the plan is on a work clock (`Work`, `reckoned`): the
seconds each step is reckoned to take from what it did (cells priced, simplex
iterations, a MIP's size and iterations: planner.solve.work), not the seconds it took.
So a run stopped by its budget stops at the same step on every run and any machine, and
gives the same plan (SPEC §2: the same scenario, the same plan; SPEC §4: whatever
--jobs), where the wall clock had stopped it wherever the load of the moment put it
(the default scenario at --time-limit 20: 804 and 840 pool MIPs in two runs). The wall
clock stays as a safety stop (`wall_end`, at the limit): only where the reckoning falls
behind it (a slower or busier machine) does it decide.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# The least time limit a solve is given where its share of a budget is less: below it
# the decomposition still plans, at first prices (a model solved whole: branch and
# bound stops, the decomposition plans in what is left). Measured (2026-11-26): at
# 0.5 s (the floor before), a 4-sample stochastic command on generated 8x6x3 ran its 9
# solves at 0.6 s each whatever the budget and ended at 7.3-7.7 s at --time-limit 2, 3
# and 5 (the default scenario at 5 and 8: 9.9 s); at 0.1 s, 3.2 s at 3 and 4.2 s at 5
# with the same schedule and expected cost (8x6x3), 7.2 s at 5 and 8.3 s at 8 (default).
# (At 1 s: 10.8 s at --time-limit 8 on a 193-row market.)
LEAST_LIMIT_S = 0.1
SOLVE_WALL = 1.5  # see Budget.of_work


def epoch_of(moment: float) -> float:
    """A perf_counter `moment` as a time.time(): a moment handed to another process,
    whose perf_counter is another clock."""
    return time.time() + moment - time.perf_counter()


def moment_of(epoch: float) -> float:
    """A time.time() `epoch` (from another process, `epoch_of`) as a moment on this
    process's perf_counter."""
    return time.perf_counter() + epoch - time.time()


class Work:
    """The work clock: seconds reckoned from the work done (`add`), the same on every
    run of the same steps."""

    def __init__(self, seconds: float = 0.0):
        self.seconds = float(seconds)
        # steps the wall clock stopped short of their reckoning by a stop of their own
        # (branch and bound's time limit beside its node limit: `Budget.wall_stopped`)
        self.wall_stops = 0

    def add(self, seconds: float) -> None:
        self.seconds += max(0.0, float(seconds))


class Budget:
    """`seconds` from `start` on the wall clock, or, on a work clock (`work`), `seconds`
    of work reckoned from when it was made. A plan's budget also knows what was kept back
    after it for writing the plan (`kept` seconds) and how long writing a plan of so many
    table rows takes (`writing`), so that a plan grown larger than foreseen stops early
    enough to be written in time (`short_for`). On a work clock, `wall_end` is the wall
    clock's safety stop (default: `last_moment`)."""

    def __init__(self, seconds: float, start: float | None = None, kept: float = 0.0,
                 writing: Callable[[int], float] | None = None, work: Work | None = None,
                 wall_end: float | None = None):
        self.seconds = float(seconds)
        self.start = time.perf_counter() if start is None else start
        self.kept, self.writing = kept, writing
        self.work = work
        self.origin = work.seconds if work is not None else 0.0
        self.wall_end = self.last_moment if wall_end is None else wall_end

    @classmethod
    def of_work(cls, seconds: float, stop_by: float | None = None) -> "Budget":
        """`seconds` of work from now, on a new work clock: one solve's, as a worker runs
        it. Its safety stop is SOLVE_WALL times as long and a second more: a solve's
        reckoning is off by 10-20 % either way, more beside another on the second core,
        and at 5 % the stop cut one of a stochastic command's solves in five runs short
        (another EVPI); the command waits for its workers until its own last moment.
        `stop_by` (a time.time(), `wall_end_epoch`): the command's own stop, which the
        solve's comes no later than (a what-if's variants, each on its own stop, ran
        44.7 s at --time-limit 30 where branch and bound outran its reckoning)."""
        wall_end = time.perf_counter() + SOLVE_WALL * seconds + 1.0
        if stop_by is not None:
            wall_end = min(wall_end, moment_of(stop_by))
        return cls(seconds, work=Work(), wall_end=wall_end)

    def reckoned(self, spent: float) -> "Budget":
        """This budget on a work clock that starts at `spent` seconds (what the command
        is reckoned to have taken so far), the wall clock's safety stop at its deadline:
        at 5 % past it, 1000x100x36 (its third master LP 2.3 times its reckoning) met
        the stop there and the command ended at 651 s of 600."""
        budget = Budget(self.seconds, self.start, self.kept, self.writing, Work(spent),
                        self.deadline)
        # what was spent counts against the budget: it had not (the budget's work counted
        # from `spent`), so a command's steps were given its loading's seconds twice and
        # the wall clock's stop, not the work clock, ended a run that used its budget
        budget.origin = 0.0
        return budget

    @property
    def deadline(self) -> float:
        """When the budget ends on the wall clock."""
        return self.start + self.seconds

    @property
    def last_moment(self) -> float:
        """The deadline and 5 % more: by when work handed off (a cluster's tasks) must be
        done or given up, the command then ending within SPEC's S + 10 %."""
        return self.deadline + 0.05 * self.seconds

    def elapsed(self) -> float:
        """Seconds since the budget started: of work, on a work clock."""
        if self.work is None:
            return self.wall_elapsed()
        return self.work.seconds - self.origin

    def wall_elapsed(self) -> float:
        return time.perf_counter() - self.start

    def out_of_time(self) -> bool:
        """Whether a work clock's safety stop has passed on the wall clock."""
        return self.work is not None and time.perf_counter() >= self.wall_end

    def stopped_with_work_left(self) -> bool:
        """Whether a work clock's safety stop has passed with more of its reckoned work
        left than its noise (5 % of it, and half a second), or a step's own wall-clock
        stop ended it (`wall_stopped`): the machine ran behind its pace (busy, or
        slower), so another run may stop elsewhere."""
        return (self.out_of_time() and self.work_left() > max(0.5, 0.05 * self.seconds)) \
            or (self.work is not None and self.work.wall_stops > 0)

    def stopped_short(self, status: str) -> bool:
        """Whether the wall clock, not the reckoned work, left a solve of this budget
        that ended with `status` short of its gap (`stopped_with_work_left`): another
        run may end it elsewhere, with another plan."""
        return status != "optimal" and self.stopped_with_work_left()

    def wall_stopped(self) -> None:
        """Note that the wall clock stopped a step of this budget's before its reckoned
        work was done, by a stop of the step's own (branch and bound's time limit, which
        its node limit comes before on a machine at its pace): another run may stop it
        elsewhere (an outside audit: a generated 8x4x4 market gave another plan beside a
        busy loop on the other core, with nothing said)."""
        if self.work is not None:
            self.work.wall_stops += 1

    def left(self) -> float:
        """Seconds left (on a work clock: none once its safety stop has passed)."""
        if self.work is None:
            return max(0.0, self.deadline - time.perf_counter())
        if self.out_of_time():
            return 0.0
        return self.work_left()

    def work_left(self) -> float:
        """Seconds left on the work clock, whether or not its safety stop has passed."""
        return max(0.0, self.seconds - self.elapsed())

    def wall_end_epoch(self) -> float:
        """When this budget's wall clock ends (its safety stop, on a work clock), as a
        time.time(): a stop handed to a worker, in another process or on another
        machine, where perf_counter means another clock."""
        return epoch_of(self.deadline if self.work is None else self.wall_end)

    def wall_left(self) -> float:
        """Seconds to the wall clock's end (the safety stop, on a work clock): a solver's
        own time limit, beside the work's."""
        end = self.deadline if self.work is None else self.wall_end
        return max(0.0, end - time.perf_counter())

    def wall_until(self, seconds: float) -> float:
        """Seconds on the wall clock until `seconds` into the budget (or its safety stop,
        if sooner): where a step that should end there is stopped all the same."""
        return max(0.0, min(self.wall_end, self.start + seconds) - time.perf_counter())

    def spend(self, seconds: float) -> None:
        """Count `seconds` of work (a step reckoned so, planner.solve.work); nothing on
        the wall clock, which counts itself."""
        if self.work is not None:
            self.work.add(seconds)

    def share(self, fraction: float, keep: float = 0.0,
              writing: Callable[[int], float] | None = None) -> "Budget":
        """A budget on the same clock that starts now and ends when `fraction` of what
        is left, less `keep` seconds kept back for what follows, has passed; `writing`:
        how long its plan takes to write (else this budget's). On a work clock, its
        safety stop keeps `keep` seconds before this one's."""
        return Budget(max(0.0, (self.left() - keep) * fraction), kept=self.kept + keep,
                      writing=writing or self.writing, work=self.work,
                      wall_end=None if self.work is None else self.wall_end - keep)

    def short_for(self, rows: int) -> float:
        """Seconds a plan of `rows` table rows needs for writing beyond those kept."""
        return 0.0 if self.writing is None else max(0.0, self.writing(rows) - self.kept)

    def __repr__(self) -> str:
        return f"Budget({self.left():.1f} s of {self.seconds:.1f} s left)"
