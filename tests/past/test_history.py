"""The local run's history lines (`past/history.py`, seed 002's `→ score: 85.00% (🟢+0.15)`):
each metric against the previous run's, a change marked by its sign and never written as
none."""

from __future__ import annotations

import pytest

from evalward.past.history import Delta, EvalDeltas, render

pytestmark = pytest.mark.unit


def _lines(*deltas: Delta) -> list[str]:
    return render([EvalDeltas("support", list(deltas), first=False, same_fixtures=True)]).split(
        "\n"
    )[2:]


def test_each_metric_is_marked_by_the_sign_of_its_change() -> None:
    assert _lines(Delta("score", 0.85, 0.7), Delta("passRate", 0.5, 1.0), Delta("x", 1, 1)) == [
        "  → score: 85.00% (🟢+0.15)",
        "  → passRate: 50.00% (🔴-0.50)",
        "  → x: 100.00% (⚪+0.00)",
    ]


def test_a_change_too_small_for_two_decimals_keeps_its_digits() -> None:
    assert _lines(Delta("score", 0.854, 0.85), Delta("passRate", 0.847, 0.85)) == [
        "  → score: 85.40% (🟢+0.004)",
        "  → passRate: 84.70% (🔴-0.003)",
    ]


def test_a_metric_the_previous_run_had_not_is_new() -> None:
    assert _lines(Delta("score", 0.5, None)) == ["  → score: 50.00% (new)"]
