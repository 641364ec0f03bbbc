"""Seed 003's and seed 001's arithmetic, checked against hand-computed values."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from evalward.providers.base import RunLabels
from evalward.resources import Eval, EvalFixture, Located
from evalward.resources.models import ScoringConfig
from evalward.rundata.results import AssertionResult, FixtureResult, JudgeVerdict, Status, Verdict
from evalward.rundata.trace import StepType, Trace
from evalward.scoring.judges.panel import EvalJudge
from evalward.scoring.scores import (
    fixture_outcome,
    fixture_status,
    score_eval,
    score_fixture,
    weighted_mean,
)

pytestmark = pytest.mark.unit


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


def evaluation(
    threshold: float, weights: dict[str, float] | None = None, rep_rate: float = 1.0
) -> Located[Eval]:
    return Located(
        Eval.model_validate(
            {
                "apiVersion": "pai.io/v1",
                "kind": "Eval",
                "metadata": {"name": "e"},
                "spec": {
                    "targetAgent": "bot",
                    "fixtures": [],
                    "scoring": {
                        "passThreshold": threshold,
                        "severityWeights": weights or {},
                        "minRepPassRate": rep_rate,
                    },
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


def score(
    f: Located[EvalFixture], trace: Trace, scoring: ScoringConfig | None = None, rep: int = 0
) -> FixtureResult:
    return asyncio.run(
        score_fixture(
            f, trace, scoring or ScoringConfig(), run=RunLabels(eval="e", side="head", rep=rep)
        )
    )


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
    result = score(f, answer("abc"))
    assert result.score == pytest.approx(1 / 9)
    assert result.status is Status.failed
    assert result.verdict is Verdict.partial
    assert [a.weight for a in result.assertions] == [1.0, 8.0]


def test_an_eval_severity_weight_override_reaches_assertions() -> None:
    f = fixture(
        "f", "low", [{"type": "contains", "value": "a"}, {"type": "contains", "value": "z"}]
    )
    result = score(f, answer("a"), ScoringConfig(severity_weights={"low": 3.0}))
    assert [a.weight for a in result.assertions] == [3.0, 3.0]
    assert result.score == pytest.approx(0.5)


def judged(score_value: float, min_score: float = 0.8) -> AssertionResult:
    """What a judge assertion of seed 003's math-tutor fixture scores (weight 2, medium)."""
    return AssertionResult(
        type="judge",
        status=Status.passed if score_value >= min_score else Status.failed,
        score=score_value,
        weight=2.0,
        severity="medium",
        judge=JudgeVerdict(score=score_value),
    )


@pytest.mark.parametrize(
    ("judge_score", "expected_score", "status", "verdict"),
    [
        # (1 + 1 + 1 + 2 x 0.6) / 5 = 0.84: the judge is below its minScore 0.8
        (0.6, 0.84, Status.failed, Verdict.partial),
        # (3 + 2 x 0.8) / 5 = 0.92: every assertion passes
        (0.8, 0.92, Status.passed, Verdict.passed),
        # (3 + 2 x 0.7) / 5 = 0.88: partial by seed 001 even though only the judge failed
        (0.7, 0.88, Status.failed, Verdict.partial),
    ],
)
def test_seed_003_math_tutor_fixture_by_hand(
    judge_score: float, expected_score: float, status: Status, verdict: Verdict
) -> None:
    deterministic = score(
        fixture(
            "tutor-add",
            "medium",
            [
                {"type": "contains", "value": "answer:"},
                {"type": "contains", "value": "4"},
                {"type": "toolNotCalled", "tool": "bash"},
            ],
        ),
        answer("answer: 4"),
    ).assertions
    results = [*deterministic, judged(judge_score)]
    assert weighted_mean(results) == pytest.approx(expected_score)
    assert fixture_status(results, answer("answer: 4"))[0] is status
    assert Verdict.of(weighted_mean(results)) is verdict


def test_eval_score_is_the_severity_weighted_pass_rate() -> None:
    results = [
        score(fixture("crit", "critical", [{"type": "contains", "value": "x"}]), answer("no")),
        score(fixture("low", "low", [{"type": "contains", "value": "x"}]), answer("x")),
        score(fixture("high", "high", [{"type": "contains", "value": "x"}]), answer("x")),
    ]
    # passed: low 0.5 + high 2 = 2.5 of 0.5 + 2 + 4 = 6.5
    outcome = score_eval(evaluation(0.38), "head", results)
    assert outcome.score == pytest.approx(2.5 / 6.5)
    assert outcome.passed is True
    assert (outcome.passing, outcome.failing, outcome.total) == (2, 1, 3)
    assert (outcome.last_score, outcome.last_result, outcome.phase) == ("0.38", "Pass", "Passed")
    assert score_eval(evaluation(0.39), "head", results).passed is False
    # an Eval's severityWeights override the defaults: critical 8 -> 2.5 / 10.5
    assert score_eval(evaluation(0.3, {"critical": 8.0}), "head", results).score == pytest.approx(
        2.5 / 10.5
    )


def test_eval_status_has_seed_003_fields() -> None:
    long = "é" * 5000  # 10,000 bytes of UTF-8
    results = [score(fixture("f", "high", [{"type": "contains", "value": "x"}]), answer(long))]
    document = score_eval(evaluation(1.0), "head", results).model_dump(mode="json")
    assert document["phase"] == "Failed"
    assert document["last_result"] == "Fail"
    assert document["last_score"] == "0.00"
    row = document["fixture_results"][0]
    assert {k: row[k] for k in ("name", "score", "result", "severity")} == {
        "name": "f",
        "score": 0.0,
        "result": "fail",
        "severity": "high",
    }
    assert "'x' not found" in row["message"]
    assert len(row["output"].encode()) <= 8 * 1024 + len("\n… [truncated]".encode())


def test_a_failed_run_is_an_error_not_a_pass() -> None:
    trace = Trace()
    trace.add(StepType.error, content="provider down")
    f = fixture("f", "medium", [{"type": "toolNotCalled", "tool": "x"}])
    result = score(f, trace)
    assert result.status is Status.error
    assert "provider down" in result.message
    outcome = score_eval(evaluation(0.0), "head", [result])
    assert (outcome.passing, outcome.errors) == (0, 1)


def test_an_assertion_error_fails_the_fixture_closed() -> None:
    f = fixture(
        "f",
        "medium",
        [{"type": "contains", "value": "a"}, {"type": "contains", "value": "a", "field": "x"}],
    )
    result = score(f, answer("a"))
    assert result.status is Status.error
    assert result.score == pytest.approx(0.5)
    assert "is not JSON" in result.message


def test_judge_assertions_without_a_judge_model_are_skipped_never_passed() -> None:
    only_judge = fixture("j", "medium", [{"type": "judge", "rubric": "be right"}])
    result = asyncio.run(
        score_fixture(
            only_judge,
            answer("x"),
            ScoringConfig(),
            EvalJudge("e"),
            run=RunLabels(eval="e", side="head", rep=0),
        )
    )
    assert result.status is Status.skipped
    assert result.assertions[0].status is Status.skipped
    assert "spec.judge.model" in result.assertions[0].message
    mixed = fixture(
        "m", "medium", [{"type": "judge", "rubric": "r"}, {"type": "contains", "value": "x"}]
    )
    scored = score(mixed, answer("x"))
    assert (scored.status, scored.score) == (Status.passed, 1.0)
    outcome = score_eval(evaluation(1.0), "head", [result])
    assert (outcome.passed, outcome.skipped, outcome.total) == (False, 1, 1)
    both = score_eval(evaluation(1.0), "head", [result, scored])
    assert (both.passed, both.score, both.skipped) == (True, 1.0, 1)


def test_advisory_assertions_do_not_gate() -> None:
    results = [
        AssertionResult(type="contains", status=Status.passed, score=1, weight=1, severity="low"),
        judged(0.1).model_copy(update={"advisory": True}),
    ]
    assert weighted_mean(results) == 1.0
    assert fixture_status(results, answer("x"))[0] is Status.passed


def test_an_eval_with_no_fixture_does_not_pass() -> None:
    assert score_eval(evaluation(0.0), "head", []).passed is False


def test_axes_are_weighted_means_of_their_assertions() -> None:
    f = fixture(
        "f",
        "medium",
        [
            {"type": "contains", "value": "a", "axis": "accuracy"},
            {"type": "contains", "value": "z", "axis": "accuracy", "weight": 3},
            {"type": "notContains", "value": "z", "axis": "safety"},
            {"type": "contains", "value": "a"},
        ],
    )
    result = score(f, answer("a"))
    assert result.axes == {"accuracy": pytest.approx(0.25), "safety": 1.0}


def reps_of(name: str, outcomes: list[bool], severity: str = "medium") -> list[FixtureResult]:
    f = fixture(name, severity, [{"type": "contains", "value": "ok"}])
    return [score(f, answer("ok" if ok else "no"), rep=i) for i, ok in enumerate(outcomes)]


def test_reps_default_rule_is_a_clear_majority() -> None:
    assert fixture_outcome(reps_of("f", [True, True, False]), ScoringConfig()).passed
    assert not fixture_outcome(reps_of("f", [True, False]), ScoringConfig()).passed
    assert not fixture_outcome(
        reps_of("f", [True, True, False, False, False]), ScoringConfig()
    ).passed
    assert fixture_outcome(reps_of("f", [True] * 3 + [False] * 2), ScoringConfig()).passed
    reps = reps_of("f", [True, True, False, True])
    outcome = fixture_outcome(reps, ScoringConfig(min_rep_pass_rate=1.0))
    assert (outcome.result, outcome.passes, outcome.reps) == (Status.failed, 3, 4)
    assert outcome.pass_rate == 0.75
    assert outcome.score == pytest.approx(0.75)
    assert outcome.message.startswith("3/4 reps passed; rep 2:")
    # pass^k = C(3,k)/C(4,k): 3/4, 3/6, 1/4, 0
    assert outcome.pass_hat_k == {
        1: pytest.approx(0.75),
        2: pytest.approx(0.5),
        3: pytest.approx(0.25),
        4: 0.0,
    }
    assert outcome.score_interval is not None


def test_reps_minimum_pass_rate_rule() -> None:
    reps = reps_of("f", [True, True, False, True])
    assert fixture_outcome(reps, ScoringConfig(min_rep_pass_rate=0.75)).passed
    assert not fixture_outcome(reps, ScoringConfig(min_rep_pass_rate=0.8)).passed
    result = score_eval(evaluation(1.0, rep_rate=0.75), "head", reps)
    assert (result.passed, result.passing, result.total) == (True, 1, 1)
    assert score_eval(evaluation(1.0), "head", reps).passed is False


def test_an_error_rep_counts_as_not_passed_and_shows_as_error() -> None:
    broken = Trace()
    broken.add(StepType.error, content="timeout")
    f = fixture("f", "medium", [{"type": "contains", "value": "ok"}])
    reps = [score(f, answer("ok"), rep=0), score(f, broken, rep=1)]
    outcome = fixture_outcome(reps, ScoringConfig())
    assert (outcome.result, outcome.errors) == (Status.error, 1)
    assert fixture_outcome(reps, ScoringConfig(min_rep_pass_rate=0.5)).result is Status.passed


@pytest.mark.parametrize(
    ("score_value", "verdict"),
    [
        (1.0, Verdict.passed),
        (0.9, Verdict.passed),
        (0.89, Verdict.partial),
        (0.01, Verdict.partial),
        (0.0, Verdict.failed),
    ],
)
def test_seed_001_verdicts(score_value: float, verdict: Verdict) -> None:
    assert Verdict.of(score_value) is verdict
