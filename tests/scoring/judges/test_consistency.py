"""A judge's consistency is judged on its upper confidence bound: the bound is Clopper–Pearson's
(checked against its closed forms at the ends), and a few disagreeing pairs of a handful do
not set a judge aside while many do. Its κ on a calibration is read on both bounds: shown at
the floor, shown below it, or too few pairs to tell."""

from __future__ import annotations

import pytest

from evalward.rundata.pairwise_record import PairAgreement
from evalward.scoring.judges.consistency import binomial_upper_bound, consistency_below
from evalward.scoring.judges.pairwise_panel import gates, kappa_bounds, pairs_needed, standing

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


def measured(agreed: int, scored: int, chance: float) -> PairAgreement:
    kappa = (agreed / scored - chance) / (1 - chance)
    return PairAgreement(
        model="m", kappa=kappa, consistency=1.0, scored=scored, errors=0, agreed=agreed,
        chance=chance, human_chance=chance,
    )  # fmt: skip


def test_kappa_is_read_on_its_confidence_bounds_too() -> None:
    # three pairs, one disagreeing: κ 0.50, anywhere from below 0 to 1 at 95 % confidence
    low, high = kappa_bounds(measured(2, 3, 0.5))
    assert low < 0 and high > 0.95
    assert pairs_needed(measured(2, 3, 0.5), 0.6) == 14  # 0.05 ** (1 / 14) ≥ 0.8 > 0.05 ** (1 / 13)
    # fourteen pairs all agreed: shown at the floor; one disagreeing: too few to tell
    assert kappa_bounds(measured(14, 14, 0.5))[0] >= 0.6
    low, high = kappa_bounds(measured(13, 14, 0.5))
    assert low < 0.6 <= high
    # fifty pairs, twenty-five agreed: shown below the floor
    assert kappa_bounds(measured(25, 50, 0.5))[1] < 0.6
    assert gates(measured(14, 14, 0.5)) and not gates(measured(13, 14, 0.5))


def test_a_bound_just_below_the_floor_is_never_written_at_it() -> None:
    # sixteen of twenty-five agreed: κ at most 0.5952, which two decimals would write as 0.60
    said = standing(measured(16, 25, 0.5))
    assert said.startswith("cannot decide: κ between")
    assert "and 0.595 at 95 % confidence, below the floor 0.60" in said
