"""The one clock of a command.

`--time-limit` is the budget of the whole command (SPEC §4 v2): from start to the last
file written, comparison plans and what-if variants included. The command starts one
`Budget`; every stage asks it how long it may take, and hands a share of it to the
stages it calls. Nothing else measures time against the limit.
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


class Budget:
    """`seconds` from `start`. A plan's budget also knows what was kept back after it for
    writing the plan (`kept` seconds) and how long writing a plan of so many table rows
    takes (`writing`), so that a plan grown larger than foreseen stops early enough to be
    written in time (`short_for`)."""

    def __init__(self, seconds: float, start: float | None = None, kept: float = 0.0,
                 writing: Callable[[int], float] | None = None):
        self.seconds = float(seconds)
        self.start = time.perf_counter() if start is None else start
        self.kept, self.writing = kept, writing

    @property
    def deadline(self) -> float:
        return self.start + self.seconds

    @property
    def last_moment(self) -> float:
        """The deadline and 5 % more: by when work handed off (a cluster's tasks) must be
        done or given up, the command then ending within SPEC's S + 10 %."""
        return self.deadline + 0.05 * self.seconds

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        return max(0.0, self.deadline - time.perf_counter())

    def share(self, fraction: float, keep: float = 0.0,
              writing: Callable[[int], float] | None = None) -> "Budget":
        """A budget that starts now and ends when `fraction` of what is left, less
        `keep` seconds kept back for what follows, has passed; `writing`: how long its
        plan takes to write (else this budget's)."""
        return Budget(max(0.0, (self.left() - keep) * fraction), kept=self.kept + keep,
                      writing=writing or self.writing)

    def short_for(self, rows: int) -> float:
        """Seconds a plan of `rows` table rows needs for writing beyond those kept."""
        return 0.0 if self.writing is None else max(0.0, self.writing(rows) - self.kept)

    def __repr__(self) -> str:
        return f"Budget({self.left():.1f} s of {self.seconds:.1f} s left)"
