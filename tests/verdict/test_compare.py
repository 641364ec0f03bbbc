"""Base against head: classification of fixtures and the paired regression test."""

from __future__ import annotations

import pytest

from evalward.resources.models import Severity
from evalward.rundata.results import EvalResult, FixtureResult, Status, Verdict
from evalward.verdict.compare import Change, compare

pytestmark = pytest.mark.unit


def run(fixture: str, side: str, passed: bool, rep: int = 0) -> FixtureResult:
    return FixtureResult(
        eval="e",
        fixture=fixture,
        side=side,
        rep=rep,
        status=Status.passed if passed else Status.failed,
        score=1.0 if passed else 0.0,
        verdict=Verdict.passed if passed else Verdict.failed,
        severity=Severity.medium,
    )


def eval_result(side: str, fixtures: list[FixtureResult]) -> EvalResult:
    passing = len({f.fixture for f in fixtures if f.passed})
    return EvalResult(
        eval="e",
        agent="a",
        side=side,
        score=0.5,
        passed=True,
        pass_threshold=0.5,
        passing=passing,
        failing=0,
        errors=0,
        total=len(fixtures),
        fixtures=fixtures,
    )


def test_each_fixture_is_classified() -> None:
    base = [
        run("kept", "base", True),
        run("broke", "base", True),
        run("mended", "base", False),
        run("dropped", "base", True),
        run("bad", "base", False),
    ]
    head = [
        run("kept", "head", True),
        run("broke", "head", False),
        run("mended", "head", True),
        run("added", "head", True),
        run("bad", "head", False),
    ]
    (comparison,) = compare([eval_result("head", head), eval_result("base", base)])
    changes = {f.fixture: f.change for f in comparison.fixtures}
    assert changes == {
        "kept": Change.still_passing,
        "broke": Change.regression,
        "mended": Change.fixed,
        "dropped": Change.removed,
        "added": Change.new,
        "bad": Change.still_failing,
    }


def test_one_flaky_rep_is_an_inconclusive_regression() -> None:
    base = [run("f", "base", True, rep) for rep in range(5)]
    head = [run("f", "head", rep != 0, rep) for rep in range(5)]
    (comparison,) = compare([eval_result("head", head), eval_result("base", base)])
    (fixture,) = comparison.fixtures
    assert fixture.change is Change.regression
    assert fixture.numbers() == "base 5/5 → head 4/5"
    assert comparison.regression_test().p_value == 0.5
    assert comparison.significant_regression is False


def test_significance_is_per_fixture_and_the_pooled_test_is_only_shown() -> None:
    """Pooled over the Eval, six drops of two reps each look significant (p = 1/64); no single
    fixture's drop is (2 worse of 3, p = 1/4), so `significant` does not block on it."""
    base = [run(f"f{i}", "base", True, rep) for i in range(3) for rep in range(3)]
    head = [run(f"f{i}", "head", rep == 2, rep) for i in range(3) for rep in range(3)]
    (comparison,) = compare([eval_result("head", head), eval_result("base", base)])
    test = comparison.regression_test()
    assert (test.worse, test.better) == (6, 0)
    assert test.p_value == 1 / 64
    assert [f.mcnemar().p_value for f in comparison.fixtures] == [1 / 4] * 3
    assert comparison.significant_regression is False


def test_one_fixture_broken_outright_is_a_significant_regression() -> None:
    base = [run(f"f{i}", "base", True, rep) for i in range(3) for rep in range(5)]
    head = [run(f"f{i}", "head", i != 1, rep) for i in range(3) for rep in range(5)]
    (comparison,) = compare([eval_result("head", head), eval_result("base", base)])
    (broken,) = comparison.significant_fixtures()
    assert broken.fixture == "f1"
    assert broken.mcnemar().p_value == 1 / 32
    assert broken.numbers() == "base 5/5 → head 0/5"


def test_the_gate_and_the_comment_follow_the_evals_rep_rule() -> None:
    from evalward.resources import Eval, Located
    from evalward.scoring.scores import score_eval
    from evalward.verdict.gate import decide

    located = Located(
        Eval.model_validate(
            {
                "apiVersion": "evalward.dev/v1",
                "kind": "Eval",
                "metadata": {"name": "e"},
                "spec": {"targetAgent": "a", "fixtures": [], "scoring": {"passThreshold": 1.0}},
            }
        ),
        "e.yaml",
        1,
    )
    # 4 of 5 reps pass: a pass under the default minRepPassRate (0.6); "bad" never passes
    head = [run("flaky", "head", rep != 0, rep) for rep in range(5)]
    head += [run("bad", "head", False, rep) for rep in range(5)]
    (comparison,) = compare([score_eval(located, "head", head)])
    verdicts = {f.fixture: f.head_passed for f in comparison.fixtures}
    assert verdicts == {"bad": False, "flaky": True}
    assert decide([comparison], None).failing_fixtures == {"e": ["bad"]}


@pytest.mark.parametrize(
    ("own", "action_input", "blocks"),
    [
        ("significant", "none", True),  # an input cannot loosen the Eval's rule
        ("none", "significant", True),  # it can tighten it
        ("none", "none", False),
        ("any", "significant", True),
    ],
)
def test_an_action_input_only_tightens_the_evals_regression_rule(
    own: str, action_input: str, blocks: bool
) -> None:
    from evalward.verdict.gate import GateResult, RegressionPolicy, decide

    base = [run(f"f{i}", "base", True, rep) for i in range(2) for rep in range(5)]
    head = [run(f"f{i}", "head", i == 0, rep) for i in range(2) for rep in range(5)]
    head_result = eval_result("head", head).model_copy(
        update={"fail_on_regression": RegressionPolicy(own)}
    )
    comparisons = compare([head_result, eval_result("base", base)])
    decision = decide(comparisons, None, regressions=RegressionPolicy(action_input))
    assert (decision.result is GateResult.failed) is blocks
    if blocks:
        assert decision.failing_fixtures == {"e": ["f1"]}
        assert "e / f1: " in decision.why[0] and "base 5/5 → head 0/5" in decision.why[0]


class _CountedName(str):
    """A fixture name that counts the comparisons made with it."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        _CountedName.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_fixtures_the_base_did_not_need_are_compared_in_linear_steps() -> None:
    """20,000 fixtures the head passed and the base did not run: each is looked up once,
    with one comparison at most (a list tested per fixture made 200 million)."""
    count = 20_000
    names = [f"case-{index}" for index in range(count)]
    passing = run("case", "head", True)
    head = eval_result("head", [passing.model_copy(update={"fixture": name}) for name in names])
    head.base_not_needed = [_CountedName(name) for name in names]
    _CountedName.compared = 0

    (comparison,) = compare([head, eval_result("base", [])])

    assert _CountedName.compared <= count
    assert {f.change for f in comparison.fixtures} == {Change.still_passing}
    assert len(comparison.fixtures) == count
