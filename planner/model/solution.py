"""A plan's values, keyed as the model's variables, apart from any model.

Whatever finds a plan — a MIP over the whole model, one per month, or the decomposition's
own construction — hands it on as a `Solution`; `planner.report.plan` turns it into tables. Keys:

    supply   (workload, region, gpu, src, month, segment) → units
    flow     (workload, site, region, month, segment) → units (workloads with several
             demand sites; a workload with one serves it from its supply)
    replicas (pool, region, gpu, src, month, segment) → whole replicas
    unmet    (workload, site, month, segment) → units
    commit   (offer key, start month) → GPUs
src is a pay-as-you-go offer's key or `model.COMMITTED`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Solution:
    supply: dict = field(default_factory=dict)
    flow: dict = field(default_factory=dict)
    replicas: dict = field(default_factory=dict)
    unmet: dict = field(default_factory=dict)
    commit: dict = field(default_factory=dict)
    # (offer key, start month) → the most GPUs the model allowed: where a commitment could
    # have been signed larger (what tells a plan that stopped short from a full market)
    commit_upper: dict = field(default_factory=dict)

    @classmethod
    def of_model(cls, model) -> "Solution":
        """The values a solver left in a PuLP model's variables."""
        def value(v) -> float:
            return 0.0 if v.varValue is None else float(v.varValue)

        return cls(
            supply={k: value(v) for k, v in model.supply.items()},
            flow={k: value(v) for k, v in model.flow.items()},
            replicas={k: round(value(v)) for k, v in model.replicas.items()},
            unmet={k: value(v) for k, v in model.unmet.items()},
            commit={k: round(value(v)) for k, v in model.commit.items()},
            commit_upper={k: v.upBound for k, v in model.commit.items()})

    def update(self, other: "Solution") -> None:
        """Take every value `other` holds (a month's plan into the whole plan)."""
        for name in ("supply", "flow", "replicas", "unmet", "commit", "commit_upper"):
            getattr(self, name).update(getattr(other, name))
