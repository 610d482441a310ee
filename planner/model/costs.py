"""How a commitment is paid and counted (SPEC "Terms", "Discounting").

A commitment of q GPUs on an offer, starting in month s, is paid monthly over its
commit_months (q × hours × rate each month) plus an upfront q × upfront in month s.
`full` counts every payment, also beyond the horizon; `prorate` counts the monthly
payments inside the horizon and the upfront in proportion to the months inside.
"""

from __future__ import annotations

from planner.io.scenario import Offer, Settings


def months_inside(offer: Offer, start: int, settings: Settings) -> int:
    return max(0, min(offer.commit_months, settings.horizon_months - start))


def obligation_per_gpu(offer: Offer, settings: Settings) -> float:
    """Everything one committed GPU obliges to pay, nominal, whatever the tail policy."""
    return (offer.commit_months * settings.hours_per_month * offer.usd_per_gpu_hour
            + offer.upfront_usd_per_gpu)


def counted_per_gpu(offer: Offer, start: int, settings: Settings,
                    discounted: bool) -> tuple[float, float]:
    """(monthly payments, upfront) one GPU adds to the plan's cost under the tail policy."""
    monthly = settings.hours_per_month * offer.usd_per_gpu_hour
    c = offer.commit_months
    months = c if settings.tail_policy == "full" else months_inside(offer, start, settings)
    weight = settings.discount if discounted else (lambda m: 1.0)
    payments = sum(monthly * weight(start + j) for j in range(months))
    upfront = offer.upfront_usd_per_gpu * (months / c) * weight(start)
    return payments, upfront
