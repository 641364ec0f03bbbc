"""Small, exact statistics for comparing base and head.

McNemar's exact test, one-sided for a drop: over paired outcomes (the same fixture and rep
index on both sides), let b be the pairs that passed on base and failed on head and c the
reverse. Under "nothing changed" each discordant pair is equally likely to fall either way,
so b ~ Binomial(b + c, 1/2), and the p-value of a drop is P(X >= b):

    p = sum_{k=b}^{n} C(n, k) / 2^n,   n = b + c

It needs no normal approximation, so it stays exact for the handful of discordant pairs a
PR usually produces.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb


@dataclass(frozen=True)
class McNemar:
    worse: int
    """b: pairs that passed on base and fail on head."""
    better: int
    """c: pairs that failed on base and pass on head."""
    p_value: float


def mcnemar_drop(worse: int, better: int) -> McNemar:
    """The exact one-sided p-value that head passes less often than base."""
    n = worse + better
    if n == 0:
        return McNemar(worse, better, 1.0)
    tail = sum(comb(n, k) for k in range(worse, n + 1))
    return McNemar(worse, better, min(1.0, tail / 2**n))
