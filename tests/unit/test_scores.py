"""Seed 003's arithmetic, checked against hand-computed values."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.resources import Eval, EvalFixture, Located
from evalward.resources.models import ScoringConfig
from evalward.results import Status, Verdict
from evalward.runtime.trace import StepType, Trace
from evalward.scoring.scores import score_eval, score_fixture


def fixture(name: str, severity: str, assertions: list[dict[str, Any]]) -> Located[EvalFixture]:
    return Located(
        EvalFixture.model_validate(
            {
                "apiVersion": "evalward.dev/v1",
                "kind": "EvalFixture",
                "metadata": {"name": name},
                "spec": {
                    "targetAgent": "bot",
                    "severity": severity,
                    "input": {"type": "prompt", "payload": {"prompt": "hi"}},
                    "assertions": assertions,
                },
            }
        ),
        "f.yaml",
        1,
    )


def evaluation(threshold: float, weights: dict[str, float] | None = None) -> Located[Eval]:
    return Located(
        Eval.model_validate(
            {
                "apiVersion": "pai.io/v1",
                "kind": "Eval",
                "metadata": {"name": "e"},
                "spec": {
                    "targetAgent": "bot",
                    "fixtures": [],
                    "scoring": {"passThreshold": threshold, "severityWeights": weights or {}},
                },
            }
        ),
        "e.yaml",
        1,
    )


def answer(text: str) -> Trace:
    trace = Trace()
    trace.add(StepType.final, content=text)
    return trace


def test_fixture_score_is_the_weighted_pass_ratio_with_assertion_severity() -> None:
    # weights: contains "a" 1 x medium(1) passes; contains "zzz" 2 x critical(4) fails
    f = fixture(
        "f",
        "medium",
        [
            {"type": "contains", "value": "a"},
            {"type": "contains", "value": "zzz", "weight": 2, "severity": "critical"},
        ],
    )
    result = score_fixture("e", "head", 0, f, answer("abc"), ScoringConfig())
    assert result.score == pytest.approx(1 / 9)
    assert result.status is Status.failed
    assert result.verdict is Verdict.partial


def test_eval_score_is_the_severity_weighted_pass_rate() -> None:
    scoring = ScoringConfig()
    results = [
        score_fixture(
            "e",
            "head",
            0,
            fixture("crit", "critical", [{"type": "contains", "value": "x"}]),
            answer("no"),
            scoring,
        ),
        score_fixture(
            "e",
            "head",
            0,
            fixture("low", "low", [{"type": "contains", "value": "x"}]),
            answer("x"),
            scoring,
        ),
        score_fixture(
            "e",
            "head",
            0,
            fixture("high", "high", [{"type": "contains", "value": "x"}]),
            answer("x"),
            scoring,
        ),
    ]
    # passed: low 0.5 + high 2 = 2.5 of 0.5 + 2 + 4 = 6.5
    outcome = score_eval(evaluation(0.38), "head", results)
    assert outcome.score == pytest.approx(2.5 / 6.5)
    assert outcome.passed is True
    assert (outcome.passing, outcome.failing, outcome.total) == (2, 1, 3)
    assert score_eval(evaluation(0.39), "head", results).passed is False
    # an Eval's severityWeights override the defaults: critical 8 -> 2.5 / 10.5
    assert score_eval(evaluation(0.3, {"critical": 8.0}), "head", results).score == pytest.approx(
        2.5 / 10.5
    )


def test_a_failed_run_is_an_error_not_a_pass() -> None:
    trace = Trace()
    trace.add(StepType.error, content="provider down")
    f = fixture("f", "medium", [{"type": "toolNotCalled", "tool": "x"}])
    result = score_fixture("e", "head", 0, f, trace, ScoringConfig())
    assert result.status is Status.error
    assert score_eval(evaluation(0.0), "head", [result]).passing == 0


def test_an_eval_with_no_fixture_does_not_pass() -> None:
    assert score_eval(evaluation(0.0), "head", []).passed is False


@pytest.mark.parametrize(
    ("score", "verdict"),
    [
        (1.0, Verdict.passed),
        (0.9, Verdict.passed),
        (0.89, Verdict.partial),
        (0.01, Verdict.partial),
        (0.0, Verdict.failed),
    ],
)
def test_seed_001_verdicts(score: float, verdict: Verdict) -> None:
    assert Verdict.of(score) is verdict
