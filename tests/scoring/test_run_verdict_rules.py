"""A run decided by its fixture's `passThreshold` (`scoring/run_verdict.py`) instead of "every
gating assertion passes": a score at the threshold passes, one below fails naming what failed,
and neither rule turns an error into a pass. Through `evalward run`, with a scoring function
that runs: tests/scoring/test_run_verdict.py."""

from __future__ import annotations

import asyncio

import pytest

from evalward.resources.models import EvalFixtureSpec, Severity
from evalward.rundata.results import AssertionResult, FixtureResult, Status, Verdict
from evalward.rundata.trace import Trace
from evalward.scoring.run_verdict import decide_run

pytestmark = pytest.mark.unit


def _spec(**fields: object) -> EvalFixtureSpec:
    return EvalFixtureSpec.model_validate(
        {
            "targetAgent": "bot",
            "input": {"type": "prompt", "payload": {"prompt": "hi"}},
            "assertions": [{"type": "contains", "value": "a"}, {"type": "contains", "value": "b"}],
            **fields,
        }
    )


def _result(status: Status, score: float) -> FixtureResult:
    def assertion(value: str, passed: bool) -> AssertionResult:
        return AssertionResult(
            type="contains",
            status=Status.passed if passed else Status.failed,
            score=1.0 if passed else 0.0,
            weight=1,
            severity=Severity.medium,
            message="" if passed else f"output lacks {value!r}",
        )

    return FixtureResult(
        eval="e",
        fixture="f",
        side="head",
        status=status,
        score=score,
        verdict=Verdict.of(score),
        severity=Severity.medium,
        assertions=[assertion("a", True), assertion("b", False)],
    )


def _decide(spec: EvalFixtureSpec, result: FixtureResult) -> FixtureResult:
    asyncio.run(decide_run(spec, result, Trace(), None))
    return result


def test_a_score_at_the_fixture_s_threshold_passes_though_an_assertion_failed() -> None:
    decided = _decide(_spec(passThreshold=0.5), _result(Status.failed, 0.5))
    assert (decided.status, decided.score, decided.message) == (Status.passed, 0.5, "")


def test_a_score_below_it_fails_naming_what_failed() -> None:
    decided = _decide(_spec(passThreshold=0.75), _result(Status.failed, 0.5))
    assert decided.status is Status.failed
    assert decided.message == "score 0.50 < passThreshold 0.75 (contains: output lacks 'b')"


def test_a_score_just_below_it_is_never_written_at_it() -> None:
    decided = _decide(_spec(passThreshold=0.9), _result(Status.failed, 0.898))
    assert decided.message.startswith("score 0.898 < passThreshold 0.9 (")


@pytest.mark.parametrize("status", [Status.error, Status.skipped])
def test_a_run_that_reached_no_verdict_keeps_its_status(status: Status) -> None:
    decided = _decide(_spec(passThreshold=0.0), _result(status, 0.5))
    assert decided.status is status


def test_without_a_rule_of_its_own_the_run_is_left_as_scored() -> None:
    decided = _decide(_spec(), _result(Status.failed, 0.5))
    assert (decided.status, decided.message) == (Status.failed, "")


def test_a_scoring_function_where_none_can_run_is_an_error_never_a_pass() -> None:
    spec = _spec(scoringFunction={"source": "True", "language": "python"})
    decided = _decide(spec, _result(Status.passed, 1.0))
    assert decided.status is Status.error
    assert decided.message == "scoringFunction: scoring functions are not run here"
