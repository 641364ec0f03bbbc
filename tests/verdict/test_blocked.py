"""Why a gate blocks, in words (`verdict/blocked.py`, `record/decided.py`): the rule that
decided with its numbers, the fixtures that drove it, and never a score written at or above
the threshold it misses."""

from __future__ import annotations

import pytest

from evalward.record.decided import decided_by, eval_evidence, shortfall
from evalward.resources.gate_policy import RegressionPolicy
from evalward.rundata.results import EvalResult
from evalward.verdict.blocked import (
    failing_fixtures,
    falls_short,
    policy_of,
    regresses,
    why,
)
from evalward.verdict.compare import Change, EvalComparison, FixtureComparison, compare
from report.test_report import evals, fixture

pytestmark = pytest.mark.unit


def _comparison(head_fail: set[str], **head: object) -> EvalComparison:
    results = evals(["a", "b", "c"], head_fail)
    results[1] = results[1].model_copy(update=head)  # the head's EvalResult
    (comparison,) = compare(results)
    return comparison


def test_an_eval_below_its_threshold_names_it_and_its_failing_fixtures() -> None:
    below = _comparison({"b"})
    assert failing_fixtures(below) == ["b"]
    assert falls_short(below) == (False, "0.67", "1.00")
    assert decided_by(below, RegressionPolicy.none) == "score 0.67 < threshold 1.00"
    assert why([below], [], RegressionPolicy.none) == [
        "support: score 0.67 is below its threshold 1.00 — failing b (base 1/1 → head 0/1)"
    ]
    assert eval_evidence(below) == ""  # its fixtures' counts say it all


def test_without_a_base_the_failing_fixtures_give_the_head_s_numbers_alone() -> None:
    """A run with no base (`evalward run` without `--base`): no "base 0/0" beside the head's."""
    (alone,) = compare([evals(["a", "b", "c"], {"b"})[1]])
    assert why([alone], [], RegressionPolicy.none) == [
        "support: score 0.67 is below its threshold 1.00 — failing b (head 0/1)"
    ]


def test_a_score_just_below_its_threshold_is_never_written_at_it() -> None:
    close = _comparison({"b"}, score=0.849, pass_threshold=0.85)
    text = shortfall(close)
    assert text.startswith("score 0.84")
    assert text.endswith("< threshold 0.85")


def test_a_regression_blocks_by_its_policy_tightened_by_the_action() -> None:
    passing = _comparison({"b"}, pass_threshold=0.5, passed=True)
    assert policy_of(passing, RegressionPolicy.none) is RegressionPolicy.none
    assert policy_of(passing, RegressionPolicy.any) is RegressionPolicy.any
    assert not regresses(passing, RegressionPolicy.none)
    assert regresses(passing, RegressionPolicy.any)
    assert decided_by(passing, RegressionPolicy.any) == (
        "a regression blocks (failOnRegression: any)"
    )
    assert why([], [passing], RegressionPolicy.any) == [
        "support / b: regression, passed on base and fails on head (base 1/1 → head 0/1; "
        "`failOnRegression: any` blocks every one)"
    ]


def test_a_significant_p_just_below_its_level_is_never_written_at_it() -> None:
    # thirteen reps: ten pass on base only, three on head only; p = 0.046, "0.05" at two places
    base = [fixture("b", "base", rep < 10, rep=rep) for rep in range(13)]
    head = [fixture("b", "head", rep >= 10, rep=rep) for rep in range(13)]
    dropped = FixtureComparison("b", Change.regression, base, head)
    comparison = _comparison({"b"}, pass_threshold=0.5, passed=True)
    comparison.fixtures = [dropped]
    (line,) = why([], [comparison], RegressionPolicy.significant)
    assert "10 worse / 3 better over paired reps, p = 0.046 < 0.05;" in line


def test_more_than_five_failing_fixtures_are_counted_not_listed() -> None:
    names = [f"f{n}" for n in range(8)]
    results: list[EvalResult] = evals(names, set(names))
    (comparison,) = compare(results)
    (line,) = why([comparison], [], RegressionPolicy.none)
    assert line.endswith(" and 3 more")
    assert line.count("base 1/1 → head 0/1") == 5
