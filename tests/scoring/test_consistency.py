"""A judge's consistency is judged on its upper confidence bound: the bound is Clopper–Pearson's
(checked against its closed forms at the ends), and a few disagreeing pairs of a handful do
not set a judge aside while many do."""

from __future__ import annotations

import pytest

from evalward.scoring.consistency import binomial_upper_bound, consistency_below

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("trials", [1, 4, 12, 50])
def test_the_bound_matches_clopper_pearson_closed_forms(trials: int) -> None:
    alpha = 0.05
    # none of n: P(X = 0) = (1 - p)^n = alpha; n - 1 of n: P(X <= n - 1) = 1 - p^n = alpha
    assert binomial_upper_bound(0, trials, alpha) == pytest.approx(1 - alpha ** (1 / trials))
    assert binomial_upper_bound(trials - 1, trials, alpha) == pytest.approx(
        (1 - alpha) ** (1 / trials)
    )
    assert binomial_upper_bound(trials, trials, alpha) == 1.0


def test_a_point_estimate_below_the_floor_is_not_enough() -> None:
    assert not consistency_below(3, 4, 0.8)  # 0.75, bound 0.99
    assert consistency_below(0, 4, 0.8)  # bound 0.53
    assert not consistency_below(36, 50, 0.8)  # 0.72, bound 0.82
    assert consistency_below(30, 50, 0.8)  # 0.60, bound 0.72
