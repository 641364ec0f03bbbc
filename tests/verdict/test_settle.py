"""An Eval's verdict as `stages.settle` gives it, from scored runs (`score_eval`, the run's own
scoring): an adaptive Eval is decided by its sequential tests, not its threshold, and its
fixtures' outcomes and counts say what the tests settled; a fixed-rep Eval keeps the verdict
and the score its scoring gave it; the side that gates is the one whose definition is read."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.resources import Eval, Located
from evalward.resources.gate_policy import RegressionPolicy
from evalward.resources.models import Severity
from evalward.rundata.results import AssertionResult, EvalResult, FixtureResult, Status, Verdict
from evalward.rundata.sides import Side
from evalward.scoring.scores import score_eval
from evalward.verdict.settle import settle

pytestmark = pytest.mark.unit

ADAPTIVE = {"execution": {"reps": {"min": 1, "max": 8}}}


def definition(**spec: Any) -> Located[Eval]:
    document: dict[str, Any] = {"apiVersion": "evalward.dev/v1", "kind": "Eval"}
    document |= {"metadata": {"name": "bot-eval"}, "spec": {"targetAgent": "bot", **spec}}
    return Located(Eval.model_validate(document), "evals/bot-eval.yaml", 1)


def run(side: Side, fixture: str, rep: int, outcome: str) -> FixtureResult:
    """One run: `P` passed, `F` failed, `E` errored, `O` lost to an outage."""
    status = {"P": Status.passed, "F": Status.failed}.get(outcome, Status.error)
    check = AssertionResult(
        type="contains",
        status=status,
        score=1.0 if status is Status.passed else 0.0,
        weight=1.0,
        severity=Severity.medium,
        message="" if status is Status.passed else "'answer' not found",
    )
    return FixtureResult(
        eval="bot-eval",
        fixture=fixture,
        side=side.value,
        rep=rep,
        status=status,
        score=check.score,
        verdict=Verdict.of(check.score),
        severity=Severity.medium,
        message=check.message,
        assertions=[check],
        provider_unavailable=outcome == "O",
    )


def scored(located: Located[Eval], side: Side, runs: dict[str, str]) -> EvalResult:
    """The side's EvalResult as the run scores it: each fixture's reps, in order."""
    fixtures = [run(side, name, rep, o) for name, os in runs.items() for rep, o in enumerate(os)]
    return score_eval(located, side.value, fixtures)


def settled(
    located: Located[Eval], head: dict[str, str], base: dict[str, str] | None = None
) -> dict[Side, EvalResult]:
    results = [scored(located, Side.head, head)]
    results += [scored(located, Side.base, base)] if base is not None else []
    out = settle(results, {Side.head: {"bot-eval": located}, Side.base: {}})
    return {Side(result.side): result for result in out}


def outcomes_of(result: EvalResult) -> dict[str, tuple[str, str]]:
    return {o.name: (o.result.value, o.verdict) for o in result.fixture_results}


def test_an_adaptive_eval_passes_on_its_tests_where_its_threshold_would_fail_it() -> None:
    """Three passes in four reps fail `minRepPassRate: 1.0`, but the sequential tests settle
    the fixture working beside a base that passed: the Eval passes, scored by pass rate."""
    located = definition(fixtures=["a"], scoring={"minRepPassRate": 1.0}, **ADAPTIVE)
    assert scored(located, Side.head, {"a": "PPPF"}).passed is False
    result = settled(located, {"a": "PPPF"}, {"a": "PPPP"})
    head, base = result[Side.head], result[Side.base]
    assert head.passed is True
    assert head.sequential is not None
    assert outcomes_of(head) == {"a": ("pass", "noise")}
    assert head.score == 0.75  # its pass rate, not the threshold's 0
    assert (head.passing, head.failing, head.skipped) == (1, 0, 0)
    assert base.sequential is None  # the base is read, never settled


def test_a_regression_the_tests_settle_fails_the_eval_and_its_counts_say_so() -> None:
    located = definition(fixtures=["a", "b"], **ADAPTIVE)
    head = settled(located, {"a": "PP", "b": "FFFF"}, {"a": "P", "b": "PPP"})[Side.head]
    assert head.passed is False
    assert outcomes_of(head) == {"a": ("pass", "stable"), "b": ("fail", "regression")}
    assert (head.passing, head.failing, head.errors, head.skipped) == (1, 1, 0, 0)


def test_a_fixture_settled_broken_by_errors_stays_an_error() -> None:
    located = definition(fixtures=["a"], **ADAPTIVE)
    head = settled(located, {"a": "EEE"}, {"a": "PPP"})[Side.head]
    assert head.passed is False
    assert outcomes_of(head) == {"a": ("error", "regression")}
    assert (head.failing, head.errors) == (1, 1)


def test_an_outage_only_fixture_is_not_enough_data_and_not_a_pass() -> None:
    """Every run of `b` was an outage: it is still a fixture of the Eval, counted skipped with
    the tests' word for it, and never passing."""
    located = definition(fixtures=["a", "b"], **ADAPTIVE)
    head = settled(located, {"a": "P", "b": "OO"})[Side.head]
    assert outcomes_of(head) == {"a": ("pass", "stable"), "b": ("skipped", "not enough data")}
    assert (head.passing, head.failing, head.skipped) == (1, 0, 1)
    assert head.passed is False
    assert head.provider_unavailable is True  # no verdict on the agent: rerun
    assert head.incomplete_reason == (
        "its model providers failed through their retries, or refused the API key, on "
        "fixture(s) b (2 of its head reps), which the other reps do not settle"
    )


def test_an_outage_leaves_an_adaptive_eval_undecided_only_where_it_left_a_fixture_open() -> None:
    """An outage in place of a rep of a fixture its other reps settle working says nothing
    the tests need: the Eval passes. Where the tests block anyway, the Eval fails on that
    evidence, not for the outage."""
    located = definition(fixtures=["a", "b"], **ADAPTIVE)
    head = settled(located, {"a": "P", "b": "OP"})[Side.head]
    assert outcomes_of(head) == {"a": ("pass", "stable"), "b": ("pass", "stable")}
    assert (head.passed, head.provider_unavailable, head.incomplete_reason) == (True, False, "")

    head = settled(located, {"a": "FFFF", "b": "OO"}, {"a": "PPP"})[Side.head]
    assert outcomes_of(head)["a"] == ("fail", "regression")
    assert (head.passed, head.provider_unavailable, head.incomplete_reason) == (False, False, "")


def test_a_fixture_open_at_its_maximum_is_not_settled() -> None:
    located = definition(fixtures=["a"], execution={"reps": {"min": 1, "max": 2}})
    head = settled(located, {"a": "PF"}, {"a": "PF"})[Side.head]
    assert outcomes_of(head) == {"a": ("skipped", "not settled")}
    assert (head.passing, head.failing, head.skipped) == (0, 0, 1)


def test_a_fixed_rep_eval_keeps_its_scored_verdict_and_gets_its_regression_policy() -> None:
    located = definition(
        fixtures=["a"],
        execution={"repsPerFixture": 2},
        scoring={"passThreshold": 0.5, "gate": {"failOnRegression": "any"}},
    )
    before = scored(located, Side.head, {"a": "PF"})
    head = settled(located, {"a": "PF"}, {"a": "PP"})[Side.head]
    assert head.sequential is None
    assert (head.passed, head.score) == (before.passed, before.score)
    assert outcomes_of(head) == outcomes_of(before)
    assert head.fail_on_regression is RegressionPolicy.any


def test_the_gating_side_s_definition_decides_whether_the_eval_is_adaptive() -> None:
    """The base branch made the Eval adaptive; the head, which gates, runs fixed reps: its
    result is left as scored (the base's definition is not read)."""
    fixed = definition(fixtures=["a"], execution={"repsPerFixture": 2})
    adaptive = definition(fixtures=["a"], **ADAPTIVE)
    head = scored(fixed, Side.head, {"a": "PF"})
    out = settle([head], {Side.head: {"bot-eval": fixed}, Side.base: {"bot-eval": adaptive}})
    assert out == [head.model_copy(update={"fail_on_regression": RegressionPolicy.none})]


def test_a_provider_outage_on_the_eval_never_passes_it() -> None:
    located = definition(fixtures=["a"], **ADAPTIVE)
    head = scored(located, Side.head, {"a": "P"}).model_copy(update={"provider_unavailable": True})
    (out,) = settle([head], {Side.head: {"bot-eval": located}})
    assert outcomes_of(out) == {"a": ("pass", "stable")}
    assert out.passed is False
