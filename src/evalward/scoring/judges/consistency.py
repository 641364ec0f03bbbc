"""Whether a pairwise judge is shown to change its answer with the order it reads two runs in
more often than its `consistencyFloor` allows: read on a confidence bound, never on a point
estimate of a few pairs, so that chance alone sets a judge at its floor aside at most
`CONSISTENCY_ALPHA` of the time."""

from __future__ import annotations

from math import comb

CONSISTENCY_ALPHA = 0.05
"""A judge whose share of pairs judged alike in both orders is at its floor is called below it
with chance at most this: it is below only when the share's one-sided upper confidence bound
(Clopper–Pearson) is."""


def consistency_below(consistent: int, judged: int, floor: float) -> bool:
    """Whether `consistent` of `judged` pairs alike in both orders shows the judge below its
    consistency floor: the share's upper confidence bound is (no pairs show nothing)."""
    if judged <= 0:
        return floor > 0
    return binomial_upper_bound(consistent, judged, CONSISTENCY_ALPHA) < floor


def binomial_upper_bound(successes: int, trials: int, alpha: float) -> float:
    """Clopper–Pearson's one-sided upper confidence bound on a binomial rate: the largest p
    under which seeing at most `successes` of `trials` still has chance at least `alpha`.
    The true rate is above it with chance at most `alpha`; no trials bound nothing (1.0)."""
    if trials <= 0 or successes >= trials:
        return 1.0
    low, high = successes / trials, 1.0
    for _ in range(60):  # bisection: the tail falls as p rises
        middle = (low + high) / 2
        if _at_most(successes, trials, middle) > alpha:
            low = middle
        else:
            high = middle
    return high


def binomial_lower_bound(successes: int, trials: int, alpha: float) -> float:
    """Clopper–Pearson's one-sided lower confidence bound on a binomial rate: the true rate
    is below it with chance at most `alpha`; no trials bound nothing (0.0)."""
    if trials <= 0:
        return 0.0
    return 1.0 - binomial_upper_bound(trials - successes, trials, alpha)


def _at_most(successes: int, trials: int, rate: float) -> float:
    """P(X <= successes) for X ~ Binomial(trials, rate)."""
    return sum(
        comb(trials, k) * rate**k * (1.0 - rate) ** (trials - k) for k in range(successes + 1)
    )
