"""Wald's sequential probability ratio test for a pass rate, with error rates that hold however
the reps were spent.

A fixture's runs are Bernoulli draws with an unknown pass rate p. Two hypotheses:

- H0, *works*: p >= `good` (the pass rate the Eval expects of a fixture that is fine);
- H1, *broken*: p <= `broken`.

After k passes and f failures the log likelihood ratio of H1 to H0 is

    llr = k * log(broken / good) + f * log((1 - broken) / (1 - good))

Each run multiplies the ratio by a factor whose mean under any p >= good is at most 1, so the
ratio is a non-negative supermartingale under H0, and by Ville's inequality

    P_H0( the ratio ever reaches 1 / alpha ) <= alpha

whatever rule chose when to stop, which fixture to run next or how many reps each got
(Wald 1945, "Sequential tests of statistical hypotheses", Ann. Math. Statist. 16(2); Ville
1939). Symmetrically, 1 / ratio is a supermartingale under H1, so a broken fixture is called
*works* with probability at most beta. Those two bounds are what "settled" means here; a test
that reaches the maximum reps without crossing either line is not settled, and says so.

The product of the ratios of several fixtures is again such a supermartingale, so one test
pooled over an Eval's runs (H1: every fixture dropped by `drop`) keeps its error rate too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum


class Settled(StrEnum):
    broken = "broken"
    """The ratio reached 1 / alpha: the pass rate is below `good`, at error rate alpha."""
    works = "works"
    """The ratio fell to beta: the pass rate is above `broken`, at error rate beta."""
    open = "open"
    """Neither line is crossed: more reps would tell."""


@dataclass(frozen=True)
class Sprt:
    """One sequential test: its two pass rates and its two error rates."""

    good: float
    broken: float
    alpha: float
    beta: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.broken < self.good <= 1.0:
            raise ValueError(f"need 0 <= broken < good <= 1, got {self.broken}, {self.good}")
        if not (0.0 < self.alpha < 1.0 and 0.0 < self.beta < 1.0):
            raise ValueError("the error rates must be between 0 and 1")

    def llr(self, passes: int, fails: int) -> float:
        """The log likelihood ratio of broken to works after these runs."""
        value = 0.0
        if passes:
            value += passes * _log_ratio(self.broken, self.good)
        if fails:
            value += fails * _log_ratio(1.0 - self.broken, 1.0 - self.good)
        return value

    @property
    def upper(self) -> float:
        """The line a broken verdict crosses: log(1 / alpha)."""
        return math.log(1.0 / self.alpha)

    @property
    def lower(self) -> float:
        """The line a works verdict crosses: log(beta)."""
        return math.log(self.beta)

    def settled(self, passes: int, fails: int) -> Settled:
        value = self.llr(passes, fails)
        if value >= self.upper:
            return Settled.broken
        if value <= self.lower:
            return Settled.works
        return Settled.open

    def bound(self, passes: int, fails: int) -> float:
        """The evidence as an error bound: the chance of a ratio this large (for a broken
        verdict) under H0, 1 / ratio by Ville's inequality, capped at 1."""
        return min(1.0, math.exp(-self.llr(passes, fails)))


def _log_ratio(numerator: float, denominator: float) -> float:
    """log(numerator / denominator), where 0 / 0 is 1 and x / 0 is infinite evidence."""
    if denominator == 0.0:
        return 0.0 if numerator == 0.0 else math.inf
    if numerator == 0.0:
        return -math.inf
    return math.log(numerator / denominator)
