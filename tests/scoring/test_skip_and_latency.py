"""Seed 003's Skip row (a run that reached no terminal event before its timeout) and its
reserved `{type: latency}` (reported, never gating), through the scoring stage."""

from __future__ import annotations

import pytest

from evalward.resources.models import ScoringConfig
from evalward.rundata.results import FixtureResult, Status
from evalward.rundata.trace import StepType, Trace
from evalward.scoring.scores import fixture_outcome, score_eval
from evalward.verdict.compare import Change, compare
from scoring.test_scores import answer, evaluation, fixture, score

pytestmark = pytest.mark.unit

NOT_CALLED = [{"type": "toolNotCalled", "tool": "issue_refund"}]


def hung(*, after: str = "") -> Trace:
    """A run stopped at its timeout, as the runner leaves it: what it did, then the error."""
    trace = Trace()
    trace.add(StepType.input, content="hi")
    if after:
        trace.add(StepType.assistant, content=after)
    trace.time_out("the run timed out after 1 s (spec.execution.timeoutSeconds)")
    return trace


def crashed() -> Trace:
    trace = Trace()
    trace.add(StepType.error, content="the agent exited with code 3")
    return trace


def test_a_timed_out_run_is_skipped_not_an_error_and_its_assertions_are_not_evaluated() -> None:
    # toolNotCalled would pass on the partial trace: a run that never finished is no evidence
    result = score(fixture("f", "medium", NOT_CALLED), hung(after="thinking"))
    assert (result.status, result.timed_out, result.passed) == (Status.skipped, True, False)
    assert "timed out after 1 s" in result.message
    assert "counts as not passing" in result.message
    assert "spec.execution.timeoutSeconds" in result.message
    [assertion] = result.assertions
    assert assertion.status is Status.skipped
    assert "not evaluated" in assertion.message
    assert result.score == 0.0


def test_a_crash_stays_an_error_distinct_from_a_timeout() -> None:
    result = score(fixture("f", "medium", NOT_CALLED), crashed())
    assert (result.status, result.timed_out) == (Status.error, False)


def test_a_skip_counts_in_the_eval_score_as_a_fixture_that_did_not_pass() -> None:
    passing = score(fixture("ok", "medium", [{"type": "contains", "value": "x"}]), answer("x"))
    timed_out = score(fixture("slow", "medium", NOT_CALLED), hung())
    failing = score(fixture("slow", "medium", [{"type": "contains", "value": "x"}]), answer("no"))

    with_skip = score_eval(evaluation(0.6), "head", [passing, timed_out])
    with_fail = score_eval(evaluation(0.6), "head", [passing, failing])

    # hanging on a fixture scores exactly as failing it: 1 of 2 medium fixtures pass
    assert with_skip.score == with_fail.score == pytest.approx(0.5)
    assert with_skip.passed is with_fail.passed is False
    assert (with_skip.passing, with_skip.failing, with_skip.skipped, with_skip.timed_out) == (
        1,
        0,
        1,
        1,
    )
    assert with_skip.total == 2
    row = next(o for o in with_skip.fixture_results if o.name == "slow")
    assert (row.result, row.timed_out, row.passed) == (Status.skipped, 1, False)


def test_severity_weighs_a_skip_like_any_fixture_that_did_not_pass() -> None:
    passing = score(fixture("ok", "low", [{"type": "contains", "value": "x"}]), answer("x"))
    critical = score(fixture("slow", "critical", NOT_CALLED), hung())
    # low 0.5 passes of 0.5 + critical 4
    assert score_eval(evaluation(0.1), "head", [passing, critical]).score == pytest.approx(
        0.5 / 4.5
    )


@pytest.mark.parametrize("threshold", [0.0, 0.5, 1.0])
def test_an_eval_whose_every_fixture_timed_out_does_not_pass(threshold: float) -> None:
    runs = [score(fixture(n, "medium", NOT_CALLED), hung()) for n in ("a", "b")]
    result = score_eval(evaluation(threshold), "head", runs)
    assert result.passed is False
    assert (result.score, result.skipped, result.timed_out) == (0.0, 2, 2)


def test_a_hang_is_not_an_outage() -> None:
    """An Eval whose only other run hit a provider outage is `unavailable` (no verdict, exit 3)
    unless a run timed out: a hanging agent cannot pass for a provider that is down."""
    outage = score(fixture("a", "medium", NOT_CALLED), crashed()).model_copy(
        update={"provider_unavailable": True}
    )
    timed_out = score(fixture("b", "medium", NOT_CALLED), hung())
    assert score_eval(evaluation(0.5), "head", [outage]).provider_unavailable is True
    assert score_eval(evaluation(0.5), "head", [outage, timed_out]).provider_unavailable is False


def reps(*kinds: str) -> list[FixtureResult]:
    traces = {"pass": answer("x"), "fail": answer("no"), "hang": hung()}
    f = fixture("f", "medium", [{"type": "contains", "value": "x"}])
    return [score(f, traces[kind], rep=rep) for rep, kind in enumerate(kinds)]


@pytest.mark.parametrize(
    ("kinds", "result", "passes", "counted", "timed_out"),
    [
        # a timed-out rep counts as a rep that did not pass
        (("pass", "pass", "hang"), Status.passed, 2, 3, 1),
        (("pass", "hang"), Status.skipped, 1, 2, 1),
        (("fail", "hang"), Status.failed, 0, 2, 1),
        (("hang", "hang", "hang"), Status.skipped, 0, 3, 3),
    ],
)
def test_timed_out_reps_count_as_not_passing(
    kinds: tuple[str, ...], result: Status, passes: int, counted: int, timed_out: int
) -> None:
    outcome = fixture_outcome(reps(*kinds), ScoringConfig())
    assert (outcome.result, outcome.passes, outcome.timed_out) == (result, passes, timed_out)
    assert outcome.pass_rate == pytest.approx(passes / counted)
    assert outcome.skipped == 0  # "skipped" reps are the ones with nothing evaluated


def test_a_fixture_that_passed_on_base_and_hangs_on_head_is_a_regression() -> None:
    f = fixture("f", "medium", NOT_CALLED)
    base = score_eval(evaluation(1.0), "base", [score(f, answer("done"))])
    head = score_eval(
        evaluation(1.0),
        "head",
        [score(f, hung()).model_copy(update={"side": "head"})],
    )
    (comparison,) = compare([head, base.model_copy(update={"side": "base"})])
    assert [c.change for c in comparison.fixtures] == [Change.regression]
    assert comparison.regression_test().worse == 1


def timed(duration_ms: float, text: str = "x") -> Trace:
    trace = answer(text)
    trace.duration_ms = duration_ms
    return trace


def test_latency_without_max_ms_reports_the_observed_latency_and_never_gates() -> None:
    f = fixture("f", "medium", [{"type": "contains", "value": "x"}, {"type": "latency"}])
    result = score(f, timed(98_765.4))
    assert (result.status, result.score) == (Status.passed, 1.0)
    contains, latency = result.assertions
    assert (contains.status, contains.advisory, contains.observed_ms) == (
        Status.passed,
        False,
        None,
    )
    assert (latency.advisory, latency.observed_ms) == (True, pytest.approx(98_765.4))
    assert "run took 98765 ms" in latency.message and "does not gate" in latency.message
    # it neither lifts a failing fixture nor sinks a passing one
    failing = score(f, timed(1.0, "no"))
    assert (failing.status, failing.score) == (Status.failed, 0.0)


def test_latency_per_step_without_max_ms_names_the_slowest_step() -> None:
    trace = Trace(duration_ms=900)
    trace.add(StepType.input, content="hi")
    trace.add(StepType.tool_call, tool="t", arguments={}, duration_ms=120)
    trace.add(StepType.tool_call, tool="t", arguments={}, duration_ms=480)
    trace.add(StepType.final, content="x")
    f = fixture("f", "medium", [{"type": "latency", "scope": "step"}])
    result = score(f, trace)
    [latency] = result.assertions
    assert latency.observed_ms == pytest.approx(480)
    assert "slowest step #3 (tool_call) took 480 ms" in latency.message
    # an advisory assertion alone evaluates nothing that gates: the fixture is no pass
    assert result.status is Status.skipped


def test_latency_with_max_ms_still_gates_and_reports_what_it_measured() -> None:
    f = fixture("f", "medium", [{"type": "latency", "maxMs": 1000}])
    slow = score(f, timed(1500))
    assert slow.status is Status.failed
    assert slow.assertions[0].observed_ms == pytest.approx(1500)
    assert slow.assertions[0].advisory is False
    assert "run took 1500 ms > 1000 ms" in slow.assertions[0].message
