"""A judge that cannot decide (below its calibration floor, not calibrated as its Eval
requires) leaves its Eval inconclusive, never advisory or passing, unless other evidence
fails it: a deterministic assertion below the threshold, a run that crashed or hung. A group
that holds such a judge carries why. The judge's own path runs end to end in
tests/scoring/judges/test_advisory_judge.py; here its assertion's result is the one the judge leaves
(advisory, with `cannot_decide`), on runs scored for real, and the Eval decided by the
verdict's one rule for it (verdict/undecided.py)."""

from __future__ import annotations

import pytest

from evalward.resources.checks.assertions import AssertSetAssertion
from evalward.rundata.results import EvalResult, FixtureResult, Status
from evalward.rundata.trace import Trace
from evalward.scoring.fixture_checks import group_outcome
from evalward.scoring.judges.panel import JudgeOutcome
from evalward.scoring.scores import score_eval
from evalward.verdict.compare import compare
from evalward.verdict.gate import GateResult, decide
from evalward.verdict.undecided import withheld
from scoring.test_advisory_evals import REPORTS_ONLY, as_eval
from scoring.test_scores import answer, evaluation, fixture, score
from scoring.test_skip_and_latency import crashed, hung

pytestmark = pytest.mark.unit

WHY = "its judge openai/judge-m cannot decide: κ of openai/judge-m is 0.33, below the floor 0.60"
CONTAINS = {"type": "contains", "value": "ok"}


def decided(name: str, runs: list[FixtureResult]) -> EvalResult:
    """The Eval as scored by its own rules, then decided: inconclusive where its judge cannot
    decide and nothing else fails it."""
    return withheld(as_eval(name, runs))


def undecided_run(trace: Trace, *others: dict[str, str]) -> FixtureResult:
    """A run whose first assertion is a judge that cannot decide: shown as advisory, with why."""
    run = score(fixture("refund", "high", [*REPORTS_ONLY, *others]), trace)
    judged = run.assertions[0].model_copy(update={"type": "judge", "cannot_decide": WHY})
    return run.model_copy(update={"assertions": [judged, *run.assertions[1:]]})


def test_an_eval_whose_only_judge_cannot_decide_is_inconclusive_not_advisory() -> None:
    result = decided("refund-eval", [undecided_run(answer("ok"))])
    assert (result.advisory, result.passed) == (False, False)
    assert result.inconclusive_reason.startswith(WHY + "; fix the judge's settings")
    assert result.phase == "Inconclusive"
    assert result.fixture_results[0].advisory is False

    decision = decide(compare([result]), None)
    assert decision.result is GateResult.inconclusive and decision.exit_code == 1
    assert decision.reason.startswith(f"refund-eval is inconclusive: {WHY}")


def test_passing_evidence_beside_a_judge_that_cannot_decide_is_no_verdict() -> None:
    result = decided("refund-eval", [undecided_run(answer("ok"), CONTAINS)])
    assert result.fixtures[0].status is Status.passed  # the run reads the contains alone
    assert result.passed is False and result.inconclusive_reason
    assert decide(compare([result]), None).result is GateResult.inconclusive


def test_other_evidence_that_fails_the_eval_fails_it() -> None:
    for trace, extra in ((answer("no"), [CONTAINS]), (crashed(), []), (hung(), [])):
        result = decided("refund-eval", [undecided_run(trace, *extra)])
        assert (result.passed, result.inconclusive_reason) == (False, ""), trace
        decision = decide(compare([result]), None)
        assert decision.result is GateResult.failed, trace
        assert decision.failing_evals == ["refund-eval"]


def test_a_pending_fixtures_judge_does_not_make_the_eval_inconclusive() -> None:
    runs = [
        score(fixture("greet", "high", [CONTAINS]), answer("ok")),
        undecided_run(answer("ok")),
    ]
    result = withheld(score_eval(evaluation(1.0), "head", runs, pending=["refund"]))
    assert (result.passed, result.inconclusive_reason) == (True, "")


def test_the_eval_s_own_rules_pass_it_until_the_verdict_reads_its_judge() -> None:
    """Scoring gives the Eval's own rules alone: only the verdict makes it inconclusive."""
    scored = as_eval("refund-eval", [undecided_run(answer("ok"), CONTAINS)])
    assert (scored.passed, scored.inconclusive_reason) == (True, "")
    assert withheld(scored).passed is False


def test_a_group_carries_why_its_members_judge_cannot_decide() -> None:
    group = AssertSetAssertion.model_validate(
        {"type": "assertSet", "assertions": [{"type": "latency"}, CONTAINS]}
    )
    undecided = JudgeOutcome(Status.passed, 1.0, "x", advisory=True, cannot_decide=WHY)
    members = [
        (group.assertions[0], undecided),
        (group.assertions[1], JudgeOutcome(Status.passed, 1.0, "contains ok")),
    ]
    outcome = group_outcome(group, members)
    assert (outcome.status, outcome.cannot_decide) == (Status.passed, WHY)
    assert group_outcome(group, members[1:]).cannot_decide == ""
