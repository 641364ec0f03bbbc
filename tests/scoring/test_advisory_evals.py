"""An Eval in which nothing may gate (every assertion advisory) is reported as advisory and
decides nothing; one that has anything that gates still gates on it, and a run that crashed
or hung is a verdict, never advisory. The judge's own advisory path (below its calibration
floor) runs end to end in tests/scoring/judges/test_advisory_judge.py."""

from __future__ import annotations

import pytest

from evalward.resources import Located
from evalward.rundata.results import EvalResult, FixtureResult
from evalward.scoring.scores import score_eval
from evalward.verdict.compare import Change, compare
from evalward.verdict.gate import GateResult, decide
from scoring.test_scores import answer, evaluation, fixture, score
from scoring.test_skip_and_latency import crashed, hung

pytestmark = pytest.mark.unit

REPORTS_ONLY = [{"type": "latency"}]  # seed 003's reserved latency: advisory, never gating


def advisory_run(name: str, rep: int = 0) -> FixtureResult:
    return score(fixture(name, "high", REPORTS_ONLY), answer("hi"), rep=rep)


def as_eval(name: str, runs: list[FixtureResult], threshold: float = 1.0) -> EvalResult:
    runs = [r.model_copy(update={"eval": name}) for r in runs]
    defined = evaluation(threshold).resource
    named = defined.model_copy(
        update={"metadata": defined.metadata.model_copy(update={"name": name})}
    )
    return score_eval(Located(named, "e.yaml", 1), "head", runs)


def test_an_eval_whose_every_assertion_is_advisory_is_advisory_not_failed() -> None:
    result = as_eval("latency-only", [advisory_run("slow", 0), advisory_run("slow", 1)])
    assert (result.advisory, result.passed, result.score) == (True, False, 0.0)
    assert (result.last_result, result.phase) == ("Advisory", "Advisory")
    assert "only reports" in result.advisory_reason
    (outcome,) = result.fixture_results
    assert outcome.advisory and outcome.message.startswith("nothing gates: ")
    assert result.run_score is None and result.run_verdict is None

    decision = decide(compare([result]), None)
    assert decision.result is GateResult.skipped and decision.exit_code == 0
    assert decision.reason.startswith("nothing gates this change: latency-only is advisory")
    assert decision.failing_evals == []


def test_beside_an_advisory_eval_the_gating_evals_decide() -> None:
    advisory = as_eval("latency-only", [advisory_run("slow")])
    failing = as_eval("strict", [score(fixture("f", "medium", [_contains()]), answer("no"))])
    passing = as_eval("easy", [score(fixture("g", "medium", [_contains()]), answer("ok"))])

    blocked = decide(compare([advisory, failing]), None)
    assert blocked.result is GateResult.failed
    assert blocked.failing_evals == ["strict"] and "latency-only" not in blocked.failing_fixtures

    passed = decide(compare([advisory, passing]), None)
    assert passed.result is GateResult.passed
    assert "latency-only is advisory and does not decide the gate" in passed.reason


def test_a_deterministic_assertion_beside_advisory_ones_still_gates() -> None:
    mixed = fixture("mixed", "medium", [*REPORTS_ONLY, _contains()])
    result = as_eval("mixed-eval", [score(mixed, answer("no"))])
    assert (result.advisory, result.passed) == (False, False)
    assert decide(compare([result]), None).result is GateResult.failed

    # an advisory-only fixture beside a failing one: the Eval gates on the failing one, and
    # the advisory fixture is neither failing nor counted
    both = as_eval("two", [advisory_run("slow"), score(mixed, answer("no"))])
    assert not both.advisory and both.total == 2 and both.failing == 1
    decision = decide(compare([both]), None)
    assert decision.result is GateResult.failed
    assert decision.failing_fixtures == {"two": ["mixed"]}
    (comparison,) = compare([both])
    assert {f.fixture: f.change for f in comparison.fixtures}["slow"] is Change.advisory


def test_an_advisory_eval_whose_agent_crashes_or_hangs_fails() -> None:
    """A run that failed or timed out is a verdict on the agent: an Eval with nothing that
    gates cannot hide a crash."""
    for broken in (crashed(), hung()):
        run = score(fixture("slow", "high", REPORTS_ONLY), broken)
        result = as_eval("latency-only", [run])
        assert (result.advisory, result.passed) == (False, False), broken
        assert decide(compare([result]), None).result is GateResult.failed

    # one crashed rep among advisory ones: not advisory either
    reps = [advisory_run("slow", 0), score(fixture("slow", "high", REPORTS_ONLY), crashed(), rep=1)]
    assert as_eval("latency-only", reps).advisory is False


def test_seed_001_run_score_verdict_and_axes() -> None:
    """The run score is the mean of the fixtures' scores (seed 001), beside the gating score."""
    axes = [
        {"type": "contains", "value": "a", "axis": "accuracy"},
        {"type": "contains", "value": "b", "axis": "tone"},
    ]
    runs = [
        score(fixture("both", "medium", axes), answer("a b")),  # 1.0
        score(fixture("half", "medium", axes), answer("a"), rep=0),  # 0.5
        score(fixture("half", "medium", axes), answer("a b"), rep=1),  # 1.0 -> mean 0.75
        score(fixture("tone-only", "medium", axes[1:]), answer("x")),  # 0.0
    ]
    result = as_eval("seed-001", runs, threshold=0.5)
    assert result.run_score == (1.0 + 0.75 + 0.0) / 3
    assert result.run_verdict is not None and result.run_verdict.value == "partial"
    # accuracy: both 1.0, half (1.0 + 1.0) / 2 -> 1.0; tone: 1.0, (0 + 1) / 2, 0 -> 0.5
    assert result.axes == {"accuracy": 1.0, "tone": 0.5}
    half = next(o for o in result.fixture_results if o.name == "half")
    assert half.axes == {"accuracy": 1.0, "tone": 0.5} and half.flaky
    assert half.shown_rep == 0


def _contains() -> dict[str, str]:
    return {"type": "contains", "value": "ok"}
