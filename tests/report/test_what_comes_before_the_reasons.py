"""What the comment says above its blocking fixtures' reasons is bounded, so the reasons are
always there, however many Evals a pull request adds.

The reasons come right after the verdict with a budget of their own; above them stand the
"why" lines (one per failing Eval) and the advisory, incomplete and unavailable Evals (one
line each). An Eval the pull request adds gates and is listed there: seven hundred of them,
each incomplete, advisory or failing, filled the comment before the first reason."""

from __future__ import annotations

import dataclasses

import pytest

from evalward.report.markdown import MAX_COMMENT_CHARS, ReportContext, render_comment
from evalward.verdict.compare import EvalComparison
from evalward.verdict.gate import decide
from report.test_counts_add_up import MARKER, evaluated

pytestmark = pytest.mark.unit

ADDED = 700


def failing() -> EvalComparison:
    """The base branch's `bot-eval`, failing its fixture `refund` on the head."""
    comparisons, _, _ = evaluated(
        {
            "head": {"refund": "F"},
            "base": {"refund": "P"},
            "spec": {"targetAgent": "bot", "fixtures": ["refund"]},
        }
    )
    return comparisons[0]


def added(base: EvalComparison, n: int, **head: object) -> EvalComparison:
    """An Eval of the pull request's own, `0-wip-<n>`, with `head` set on its result."""
    result = base.head.model_copy(update={"eval": f"0-wip-{n}", "fixtures": [], **head})
    return dataclasses.replace(base, head=result, base=None, fixtures=[], facts={}, added=True)


@pytest.mark.parametrize(
    "head",
    [
        {"passed": False, "score": 0.0, "pass_threshold": 1.0},
        {"incomplete_reason": "its judge could not be calibrated: " + "x" * 200},
        {"advisory": True, "advisory_reason": "its judge is not calibrated: " + "x" * 200},
        {"provider_unavailable": True, "passed": False, "incomplete_reason": "y" * 200},
    ],
    ids=["failing", "incomplete", "advisory", "unavailable"],
)
def test_the_base_branchs_reasons_are_in_the_comment_past_hundreds_of_the_prs_own_evals(
    head: dict[str, object],
) -> None:
    base = failing()
    comparisons = [base, *(added(base, n, **head) for n in range(ADDED))]
    context = ReportContext(
        comparisons=comparisons, decision=decide(comparisons, None), marker=MARKER
    )

    body = render_comment(context)

    assert len(body) <= MAX_COMMENT_CHARS
    assert "\n1. " in body and "bot-eval / refund" in body.split("\n1. ", 1)[1][:400], body[:3000]
