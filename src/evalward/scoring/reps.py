"""What repeated runs say: over the reps of one fixture, its pass rate with a Wilson interval,
its mean score with a normal interval and pass^k; over an Eval, pass^k and the gate an Eval
can put on it (`scoring.minPassHatK`).

pass^k is tau-bench's measure of reliability. With k reps a fixture's pass rate says how often
the agent gets it right; pass^k says whether it gets it right every time, which is what a
customer holding the same conversation k times sees. An Eval's is the share of its fixtures
whose every rep passed; a fixture with no counted rep is left out, as it is of the score.
"""

from __future__ import annotations

import math
import statistics
from math import comb

from evalward.rundata.results import FixtureOutcome, Interval

Z_95 = 1.959963984540054
TOLERANCE = 1e-9
"""Scores, rates and κ are floats: 0.6 computed as 0.5999999999 must still count as 0.6."""


def at_least(value: float | None, floor: float) -> bool:
    """Whether `value` reaches `floor`, up to float rounding (None never does)."""
    return value is not None and value >= floor - TOLERANCE


def wilson_interval(passes: int, n: int) -> Interval:
    """Wilson score interval: stays inside [0, 1] and is sensible at 0 / n and n / n."""
    if n == 0:
        return Interval(low=0.0, high=1.0)
    p, z = passes / n, Z_95
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return Interval(low=max(0.0, centre - half), high=min(1.0, centre + half))


def mean_interval(scores: list[float]) -> Interval | None:
    """Mean ± Z_95·s/√n (sample standard deviation), clipped to [0, 1]; None below two values."""
    if len(scores) < 2:
        return None
    mean = statistics.fmean(scores)
    half = Z_95 * statistics.stdev(scores) / math.sqrt(len(scores))
    return Interval(low=max(0.0, mean - half), high=min(1.0, mean + half))


def pass_hat_k(passes: int, n: int) -> dict[int, float]:
    """pass^k = C(c, k) / C(n, k) for k = 1..n: the unbiased estimate that k reps all pass."""
    return {k: comb(passes, k) / comb(n, k) for k in range(1, n + 1)}


def eval_pass_hat_k(decided: list[FixtureOutcome]) -> float | None:
    """The share of the decided fixtures whose every counted rep passed (None: none)."""
    if not decided:
        return None
    # every counted rep passed (the counted reps: those not skipped), and there was one
    return sum(o.passes == o.reps - o.skipped > 0 for o in decided) / len(decided)


def meets_pass_hat_k(value: float | None, floor: float | None) -> bool:
    """Whether an Eval's pass^k reaches its `scoring.minPassHatK` (always, when unset)."""
    return floor is None or at_least(value, floor)
