"""How the comment and report.html word a fixture's reps and an Eval's axes
(`report/reps.py`), so both say the same thing the same way."""

from __future__ import annotations

import pytest

from evalward.report.reps import axes_text, percent, reps_text
from evalward.resources.models import Severity
from evalward.rundata.results import EvalResult, FixtureOutcome, Interval, Status

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("value", "text"), [(0.6, "60 %"), (0.625, "62.5 %"), (1.0, "100 %"), (0.0, "0 %")]
)
def test_a_rule_is_never_rounded_away(value: float, text: str) -> None:
    assert percent(value) == text


def _outcome(**fields: object) -> FixtureOutcome:
    base: dict[str, object] = {
        "name": "refund",
        "score": 0.5,
        "result": Status.failed,
        "severity": Severity.high,
        "reps": 8,
        "passes": 4,
        "pass_rate": 0.5,
        "pass_rate_interval": Interval(low=0.2152, high=0.7848),
    }
    return FixtureOutcome.model_validate(base | fields)


def test_reps_are_counted_against_the_rule_with_their_interval() -> None:
    assert reps_text(_outcome(), 0.6) == "4/8 reps pass (rule ≥ 60 %), 95 % CI 22–78 %"
    assert reps_text(_outcome(), None) == "4/8 reps pass, 95 % CI 22–78 %"
    assert reps_text(_outcome(reps=1, passes=0), 0.6) == ""


def test_reps_that_did_not_count_or_pass_are_named() -> None:
    outcome = _outcome(errors=1, timed_out=2, skipped=2, passes=3, pass_hat_k={6: 0.05})
    assert reps_text(outcome, 0.6) == (
        "3/6 reps pass (rule ≥ 60 %), 95 % CI 22–78 % "
        "(1 errored, 2 timed out, 2 with nothing evaluated, not counted); pass^6 0.05"
    )


def test_axes_are_shown_after_their_base_values() -> None:
    head = _result("head", {"accuracy": 0.75, "tone": 1.0})
    base = _result("base", {"accuracy": 0.9})
    assert axes_text(head, base) == "accuracy 0.90 → 0.75, tone 1.00"
    assert axes_text(head) == "accuracy 0.75, tone 1.00"


def _result(side: str, axes: dict[str, float]) -> EvalResult:
    return EvalResult(
        eval="support",
        agent="bot",
        side=side,
        score=1.0,
        passed=True,
        pass_threshold=1.0,
        passing=1,
        failing=0,
        errors=0,
        total=1,
        axes=axes,
    )
