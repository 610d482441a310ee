"""Two-stage stochastic plans (SPEC §4 v2, `solve --stochastic`): one commitment schedule
for several demand scenarios, each scenario's pay-as-you-go, spot and unmet demand its own
recourse; least expected cost, or expected cost + λ·CVaR_α.

The method, each step for a reason:

1. **wait and see** — every scenario is planned alone, as if its demand were known. The
   probability-weighted sum of their proven bounds is a valid lower bound on the expected
   cost of any single schedule (knowing the future never costs more), and
   (1 + λ) × it on expected cost + λ·CVaR (CVaR is at least the mean).
2. **bound** — an L-shaped master over Lagrangian cuts (planner.solve.decompose.cuts):
   the first stage is the commitments, each scenario's cost a function of them bounded
   below by cuts from its decomposition's prices at the master's schedule, one round of
   cuts (every scenario, on the cluster) at a time until the bound stops rising or its
   share of the time is spent. Its value is a valid bound that, unlike wait and see,
   makes every scenario live with the same commitments (it closes the EVPI part of the
   gap where the cuts converge).
3. **candidates** — the schedules worth trying: the deterministic plan of the
   probability-weighted mean forecast (the one the VSS is measured against), the
   probability-weighted average of the scenarios' schedules (progressive hedging's first
   consensus, rounded down to whole instances), the master's schedule in whole
   instances, and the scenarios' own schedules at spread quantiles of total demand.
4. **evaluation** — each candidate with its commitments fixed, every scenario solved for
   its recourse (independent solves, run on the cluster: planner.cluster).
5. **steps** — from the best candidate, each commitment one instance more or less,
   evaluated likewise while the time holds; the first cheaper schedule is stepped from
   next (the cuts' master stops where a schedule repeats, its bound short of it).
6. **choice** — the candidate with the least expected cost + λ·CVaR_α (Rockafellar–
   Uryasev: CVaR_α = min_t t + E[(cost − t)⁺] / (1 − α), exact for discrete scenarios).

VSS = expected cost of the mean-forecast schedule − the chosen one's (≥ 0: it is a
candidate); EVPI = the chosen one's − the wait-and-see expected cost, each scenario at
the cheapest plan found for it alone (its own, or a candidate's: ≥ 0). With sampled
scenarios the chosen schedule is also evaluated on fresh samples (`out_of_sample`), and
the difference stated.

The modules: `scenarios` (samples, the mean forecast, CVaR), `tasks` (the solves run on
the cluster), `schedules` (candidates and steps), `method` (the steps within one
budget), `result` (what was found, its fresh samples, its JSON).
"""

from planner.stochastic.method import solve_stochastic
from planner.stochastic.result import StochasticResult, out_of_sample, stochastic_json
from planner.stochastic.scenarios import apply, cvar, mean_forecast, sample_scenarios

__all__ = ["StochasticResult", "apply", "cvar", "mean_forecast", "out_of_sample",
           "sample_scenarios", "solve_stochastic", "stochastic_json"]
