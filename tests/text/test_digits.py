"""Numbers never contradict the verdict: a failing score is never written at or above its
threshold, a passing one never below it, and a change never reads "-0.00"."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalward.text.numbers import (
    bound_text,
    delta_text,
    score_text,
    seconds_text,
    side_text,
    threshold_text,
)

pytestmark = pytest.mark.unit

UNIT = st.floats(min_value=0, max_value=1, allow_nan=False)


def test_a_failing_score_is_written_with_the_digits_that_keep_it_below_its_threshold() -> None:
    assert score_text(0.8983, 0.9, False) == "0.898"
    assert score_text(0.8999995, 0.9, False) == "0.899999"
    assert score_text(0.9, 0.9, True) == "0.90" and score_text(0.31, 0.85, False) == "0.31"
    assert threshold_text(0.875) == "0.875" and score_text(0.8749, 0.875, False) == "0.87"
    assert score_text(0.95, 0.9, None) == "0.95"  # no verdict (an Eval whose judge could not score)
    # a threshold too small for six decimals is never written as zero, which a 0 would reach
    assert threshold_text(1.192092896e-07) == "1.19209e-07"
    assert score_text(0.0, 1.192092896e-07, False) == "0.00"
    assert score_text(1.3e-07, 1.192092896e-07, True) == "1.3e-07"


@given(score=UNIT, threshold=UNIT)
def test_no_score_is_written_on_the_wrong_side_of_its_threshold(
    score: float, threshold: float
) -> None:
    passed = score >= threshold - 1e-9
    shown = float(score_text(score, threshold, passed))
    limit = float(threshold_text(threshold))
    if passed:
        assert shown >= limit or abs(score - threshold) <= 1e-9
    else:
        assert shown < limit


@given(
    value=st.floats(min_value=0, max_value=2000, allow_nan=False),
    limit=st.floats(min_value=0, max_value=2000, allow_nan=False),
    spec=st.sampled_from([".0f", ".2f", ".1e", "g", ".6g"]),
)
def test_a_value_beside_a_limit_is_written_on_its_side_of_it(
    value: float, limit: float, spec: str
) -> None:
    shown = float(side_text(value, limit, spec))
    assert value == limit or ((shown > limit) == (value > limit) and shown != limit)


def test_a_bound_beside_its_level_keeps_the_digits_that_show_its_side() -> None:
    assert side_text(1000.5, 1000, ".0f") == "1000.5" and side_text(1203.4, 1000, ".0f") == "1203"
    assert side_text(0.8451, 0.8455, ".2f") == "0.845"  # one digit more, never fewer
    assert bound_text(0.046, beside=0.05) == "0.046" and bound_text(0.07) == "0.07"
    assert bound_text(0.00504, beside=0.005) == "5.04e-03"  # in the level's notation
    assert bound_text(0.0049, beside=0.005) == "4.9e-03" and bound_text(1.5e-8) == "1.5e-08"


@given(delta=st.floats(min_value=-1, max_value=1, allow_nan=False))
def test_a_change_keeps_its_sign_and_is_never_minus_zero(delta: float) -> None:
    text = delta_text(delta)
    assert text not in ("-0.00", "+0.00", "-0.000", "-0.0000")
    if text != "0.00":
        assert (text.startswith("-")) == (delta < 0) and float(text) != 0


def test_small_changes_durations_and_no_change() -> None:
    assert delta_text(-0.004) == "-0.004" and delta_text(0.0) == "0.00"
    assert delta_text(None) == "—" and delta_text(-0.6) == "-0.60"
    assert seconds_text(0.85) == "850 ms" and seconds_text(13.64) == "13.6 s"
    assert seconds_text(125) == "2 min 05 s"
