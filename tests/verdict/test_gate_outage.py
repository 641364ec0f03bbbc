"""An outage is not a regression: the gate's decision when model providers were down."""

from __future__ import annotations

import pytest

from evalward.errors import EXIT_EXTERNAL, EXIT_GATE_FAILED, EXIT_OK
from evalward.resources.models import Severity
from evalward.rundata.results import EvalResult, FixtureResult, Status, Verdict
from evalward.verdict.compare import compare
from evalward.verdict.gate import Bypass, GateResult, decide

pytestmark = pytest.mark.unit


def run(name: str, side: str, status: Status, *, down: bool = False) -> FixtureResult:
    return FixtureResult(
        eval=name,
        fixture="f",
        side=side,
        status=status,
        score=1.0 if status is Status.passed else 0.0,
        verdict=Verdict.passed if status is Status.passed else Verdict.failed,
        severity=Severity.medium,
        provider_unavailable=down,
    )


def result(name: str, side: str, status: Status, *, down: bool = False) -> EvalResult:
    passed = status is Status.passed
    return EvalResult(
        eval=name,
        agent="a",
        side=side,
        score=1.0 if passed else 0.0,
        passed=passed,
        pass_threshold=0.9,
        passing=int(passed),
        failing=int(not passed),
        errors=int(status is Status.error),
        total=1,
        fixtures=[run(name, side, status, down=down)],
        provider_unavailable=down,
    )


def test_an_eval_whose_every_run_hit_an_outage_is_no_verdict_exit_3() -> None:
    decision = decide(compare([result("down", "head", Status.error, down=True)]), None)
    assert decision.result is GateResult.unavailable
    assert decision.exit_code == EXIT_EXTERNAL
    assert decision.unavailable_evals == ["down"]
    assert "provider unavailable — not a verdict on the agent" in decision.reason


def test_an_outage_beside_a_genuine_failure_fails_the_gate() -> None:
    """A failing Eval is a verdict whatever else was down; the outage is named beside it."""
    decision = decide(
        compare(
            [
                result("down", "head", Status.error, down=True),
                result("broken", "head", Status.failed),
            ]
        ),
        None,
    )
    assert (decision.result, decision.exit_code) == (GateResult.failed, EXIT_GATE_FAILED)
    assert decision.failing_evals == ["broken"] and decision.unavailable_evals == ["down"]
    assert "not a verdict on the agent" in decision.reason


def test_an_outage_beside_passing_evals_is_still_no_pass() -> None:
    decision = decide(
        compare(
            [result("down", "head", Status.error, down=True), result("ok", "head", Status.passed)]
        ),
        None,
    )
    assert decision.result is GateResult.unavailable and decision.exit_code == EXIT_EXTERNAL


def test_errors_that_are_not_an_outage_fail_closed_as_before() -> None:
    decision = decide(compare([result("e", "head", Status.error, down=False)]), None)
    assert (decision.result, decision.exit_code) == (GateResult.failed, EXIT_GATE_FAILED)


def test_an_honoured_bypass_covers_an_outage() -> None:
    bypass = Bypass("force-eval-bypass", "alice", "t", "write", "sha", "b" * 40)
    decision = decide(compare([result("down", "head", Status.error, down=True)]), bypass)
    assert (decision.result, decision.exit_code) == (GateResult.bypassed, EXIT_OK)
    assert decision.bypass is bypass and decision.failing_evals == ["down"]


def test_a_base_side_outage_is_no_baseline() -> None:
    (comparison,) = compare(
        [result("e", "head", Status.passed), result("e", "base", Status.error, down=True)]
    )
    assert comparison.base is None
    assert decide([comparison], None).result is GateResult.passed
