"""A drop only an Eval's pooled test sees is attribution's over the fixtures that drove it (a
failed head rep; pairs the base won more of), and one no fixture drove is said untraced:
`untraced_of` says which Evals and why, and the comment says it under "Where it regressed"
where it would otherwise say nothing. The runs are the report tests' generated outcomes
(`report/test_headlines.py`), settled and compared as a run settles them."""

from __future__ import annotations

import pytest

from evalward.attribution.found import RunAttribution
from evalward.flows.attribution_runs import regressions_of, untraced_of
from evalward.report.attribution_text import attribution_markdown
from evalward.rundata.spending import Spent
from evalward.verdict.gate import GateResult
from report.test_headlines import ADAPTIVE, EVAL, NAMES, Case, evaluated

pytestmark = pytest.mark.unit

WHY = "its pairwise judge prefers the base over its fixtures (pooled preference test)"


def test_a_drop_only_the_pooled_preference_test_sees_is_traced_over_the_fixtures_it_lost() -> None:
    # each fixture's first pair goes to the head, so none leans worse on its own; pooled
    # over the four, the base wins 28 of 32
    names = NAMES[:4]
    spec = ADAPTIVE | {
        "fixtures": names,
        "judge": {"pairwise": {"rubric": "Which is better?", "margin": 0.3}},
    }
    head = dict.fromkeys(names, "P" * 8)
    outcome = evaluated(Case(spec, head, dict(head), dict.fromkeys(names, "HBBBBBBB")))
    (comparison,) = outcome.comparisons
    record = comparison.head.pairwise
    assert record is not None and record.blocks and record.pooled == "worse"
    assert not any(v.blocks for v in record.fixtures)
    assert outcome.decision.result is GateResult.failed

    (regression,) = regressions_of(outcome.evaluation)
    assert (regression.fixtures, regression.in_pairs, regression.pooled) == (
        tuple(names),
        True,
        True,
    )
    assert untraced_of(outcome.evaluation, [regression]) == ()


def test_a_pooled_drop_no_fixture_drove_is_said_untraced() -> None:
    said = attribution_markdown(RunAttribution("on-block", (), Spent(), 40, ((EVAL, WHY),)))
    assert said == (
        "### 🧭 Where it regressed\n\n"
        f"- **{EVAL}**: not traced — {WHY}, and in no one fixture alone, so no variant could "
        "run it.\n"
    )


def test_a_drop_a_fixture_of_its_own_carries_is_traced_not_said_untraced() -> None:
    names = NAMES[:2]
    spec = ADAPTIVE | {"fixtures": names}
    outcome = evaluated(Case(spec, {"f0": "FFF", "f1": "P"}, {"f0": "P", "f1": "P"}))

    (regression,) = regressions_of(outcome.evaluation)
    assert regression.fixtures == ("f0",)
    assert untraced_of(outcome.evaluation, [regression]) == ()


def test_a_pass_rate_drop_only_the_pooled_test_sees_is_traced_over_the_fixtures_that_drove_it() -> (
    None
):
    # f0-f4 fail their first rep and pass the next two (noise on their own), f6 passes half
    # its reps and f7 three of eight (neither settles broken); pooled over the Eval the pass
    # rate drops. f5 never fails: it did not drive the drop
    names = NAMES[:8]
    spec = ADAPTIVE | {"fixtures": names}
    head = {**dict.fromkeys(names[:5], "FPP"), "f5": "P", "f6": "FFPPFPFP", "f7": "FPFFPFPF"}
    outcome = evaluated(Case(spec, head, dict.fromkeys(names, "P")))
    (comparison,) = outcome.comparisons
    sequential = comparison.head.sequential
    assert sequential is not None and sequential.pooled == "regression"
    assert outcome.decision.result is GateResult.failed

    (regression,) = regressions_of(outcome.evaluation)
    drivers = ("f0", "f1", "f2", "f3", "f4", "f6", "f7")
    assert (regression.fixtures, regression.pooled) == (drivers, True)
    assert untraced_of(outcome.evaluation, [regression]) == ()
