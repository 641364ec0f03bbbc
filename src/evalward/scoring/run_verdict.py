"""A run decided by its fixture's `passThreshold` or `scoringFunction` instead of "every
gating assertion passes" (docs/assertions.md, "Deciding a run").

Only a run that reached a verdict the usual way (pass or fail) is decided again: a run that
did not complete, timed out, had nothing to evaluate or has an assertion in `error` keeps
that status, so neither rule can turn an error into a pass. Advisory and skipped assertions
are not shown to either: they never gate.

A scoring function is called as promptfoo calls an `assertScoringFunction`,
`(namedScores, context)`, with what that section lists. It answers as a code scorer does; a
crash, a hang or another shape makes the run `error`, never a pass.
"""

from __future__ import annotations

from typing import Any

from evalward.resources.models import EvalFixtureSpec
from evalward.rundata.results import AssertionResult, FixtureResult, Status, Verdict
from evalward.rundata.trace import Trace
from evalward.scoring.code.code_scorer import CodeScorers
from evalward.scoring.reps import at_least
from evalward.text.numbers import score_text


async def decide_run(
    spec: EvalFixtureSpec, result: FixtureResult, trace: Trace, scorers: CodeScorers | None
) -> None:
    """Set `result`'s status, score and message by the fixture's own rule, when it has one."""
    if spec.pass_threshold is None and spec.scoring_function is None:
        return
    if result.status not in (Status.passed, Status.failed):
        return
    gating = [r for r in result.assertions if r.gates]
    if spec.scoring_function is None:
        _by_threshold(result, gating, spec.pass_threshold or 0.0)
        return
    if scorers is None:
        _settle(result, Status.error, 0.0, "scoringFunction: scoring functions are not run here")
        return
    function = spec.scoring_function
    named = dict(result.axes)  # each axis's weighted mean over the gating assertions
    context: dict[str, Any] = {
        "namedScores": named,
        "threshold": spec.pass_threshold,
        "componentResults": [_component(r) for r in gating],
        "tokensUsed": {
            "total": trace.usage.total_tokens,
            "prompt": trace.usage.input_tokens,
            "completion": trace.usage.output_tokens,
            "cached": 0,
            "numRequests": trace.model_calls,
        },
        "output": trace.final_output,
        "vars": dict(spec.vars),
        "config": function.config,
    }
    found = await scorers.call(function.scorer(spec.pass_threshold), (named, context))
    said = "" if found.status is Status.passed else f"scoringFunction: {found.message}"
    _settle(result, found.status, found.score, said)


def _component(result: AssertionResult) -> dict[str, Any]:
    return {
        "pass": result.status is Status.passed,
        "score": result.score,
        "reason": result.message,
        "assertion": {"type": result.type, "metric": result.axis, "weight": result.weight},
    }


def _by_threshold(result: FixtureResult, gating: list[AssertionResult], threshold: float) -> None:
    if at_least(result.score, threshold):
        _settle(result, Status.passed, result.score, "")
        return
    failed = "; ".join(f"{r.type}: {r.message}" for r in gating if r.status is Status.failed)
    said = (
        f"score {score_text(result.score, threshold, passed=False)} < passThreshold {threshold:g}"
    )
    _settle(result, Status.failed, result.score, said + (f" ({failed})" if failed else ""))


def _settle(result: FixtureResult, status: Status, score: float, message: str) -> None:
    result.status = status
    result.score = score
    result.verdict = Verdict.of(score)
    result.message = message
