"""Rep statistics against values computed by hand."""

from __future__ import annotations

import math

import pytest

from evalward.scoring.reps import mean_interval, pass_hat_k, wilson_interval

pytestmark = pytest.mark.unit


def test_wilson_interval_by_hand() -> None:
    # 8 of 10, z = 1.96: centre (0.8 + 3.8416 / 20) / 1.38416 = 0.716738;
    # half 1.96 * sqrt(0.016 + 3.8416 / 400) / 1.38416 = 0.226581
    interval = wilson_interval(8, 10)
    assert interval.low == pytest.approx(0.4902, abs=1e-4)
    assert interval.high == pytest.approx(0.9433, abs=1e-4)


def test_wilson_interval_at_the_edges() -> None:
    every = wilson_interval(5, 5)
    assert every.high == pytest.approx(1.0)
    assert every.low == pytest.approx(5 / (5 + 1.96**2), abs=1e-3)  # 0.566
    none = wilson_interval(0, 5)
    assert (none.low, none.high) == (pytest.approx(0.0), pytest.approx(1 - every.low))
    assert (wilson_interval(0, 0).low, wilson_interval(0, 0).high) == (0.0, 1.0)


def test_mean_interval_by_hand() -> None:
    # mean 0.5, sample sd of (0, 1, 0.5) = 0.5; half = 1.96 * 0.5 / sqrt(3) = 0.5658
    interval = mean_interval([0.0, 1.0, 0.5])
    assert interval is not None
    assert interval.low == 0.0
    assert interval.high == 1.0
    narrow = mean_interval([0.8, 0.9])
    assert narrow is not None
    half = 1.959964 * math.sqrt(0.005) / math.sqrt(2)
    assert (narrow.low, narrow.high) == (pytest.approx(0.85 - half), pytest.approx(0.85 + half))
    assert mean_interval([0.5]) is None


def test_pass_hat_k() -> None:
    assert pass_hat_k(2, 3) == {1: pytest.approx(2 / 3), 2: pytest.approx(1 / 3), 3: 0.0}
    assert pass_hat_k(3, 3) == {1: 1.0, 2: 1.0, 3: 1.0}
