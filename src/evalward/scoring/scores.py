"""Fixture and Eval scores, exactly as seed 003 defines them.

- Fixture score: the weighted-pass ratio, each assertion weighing `weight` × the severity
  multiplier of its own `severity` (default: the fixture's). A fixture passes when every
  assertion passes. An assertion in `error` counts as not passed and fails the fixture closed;
  a `skipped` one is left out of both sums.
- Eval score: the severity-weighted pass rate of its fixtures. Pass iff score ≥ passThreshold.
"""

from __future__ import annotations

from evalward.resources import Eval, EvalFixture, Located
from evalward.resources.models import ScoringConfig
from evalward.results import (
    AssertionResult,
    EvalResult,
    FixtureResult,
    Status,
    Verdict,
    cap_output,
)
from evalward.runtime.trace import Trace
from evalward.scoring.assertions import check


def score_fixture(
    eval_name: str,
    side: str,
    rep: int,
    fixture: Located[EvalFixture],
    trace: Trace,
    scoring: ScoringConfig,
) -> FixtureResult:
    spec = fixture.resource.spec
    results: list[AssertionResult] = []
    for assertion in spec.assertions:
        status, message = check(assertion, trace)
        severity = assertion.severity or spec.severity
        results.append(
            AssertionResult(
                type=assertion.type,
                status=status,
                score=1.0 if status is Status.passed else 0.0,
                weight=assertion.weight * scoring.weight_of(severity),
                severity=severity,
                axis=assertion.axis,
                message=message,
            )
        )
    score = weighted_mean(results)
    run_error = trace.error
    if run_error is not None:
        status, message = Status.error, run_error
    elif any(r.status is Status.error for r in results):
        status, message = Status.error, "an assertion could not be evaluated"
    elif all(r.status in (Status.passed, Status.skipped) for r in results):
        status, message = Status.passed, ""
    else:
        failed = [r for r in results if r.status is Status.failed]
        status = Status.failed
        message = "; ".join(f"{r.type}: {r.message}" for r in failed)
    return FixtureResult(
        eval=eval_name,
        fixture=fixture.resource.metadata.name,
        side=side,
        rep=rep,
        status=status,
        score=score,
        verdict=Verdict.of(score),
        severity=spec.severity,
        message=message,
        output=cap_output(trace.final_output),
        assertions=results,
        axes=axis_means(results),
        usage=trace.usage,
        duration_ms=trace.duration_ms,
        trace=trace,
        file=fixture.file,
        line=fixture.line,
    )


def weighted_mean(results: list[AssertionResult]) -> float:
    counted = [r for r in results if r.status is not Status.skipped]
    total = sum(r.weight for r in counted)
    if total <= 0:
        return 0.0
    return min(1.0, max(0.0, sum(r.weight * r.score for r in counted) / total))


def axis_means(results: list[AssertionResult]) -> dict[str, float]:
    axes = sorted({r.axis for r in results if r.axis})
    return {axis: weighted_mean([r for r in results if r.axis == axis]) for axis in axes}


def score_eval(evaluation: Located[Eval], side: str, fixtures: list[FixtureResult]) -> EvalResult:
    """The severity-weighted pass rate of the fixtures; all reps of a fixture must pass."""
    spec = evaluation.resource.spec
    by_fixture: dict[str, list[FixtureResult]] = {}
    for result in fixtures:
        by_fixture.setdefault(result.fixture, []).append(result)
    weight_sum = 0.0
    passed_sum = 0.0
    passing = failing = errors = 0
    for reps in by_fixture.values():
        weight = spec.scoring.weight_of(reps[0].severity)
        weight_sum += weight
        if all(r.passed for r in reps):
            passed_sum += weight
            passing += 1
        else:
            failing += 1
            errors += any(r.status is Status.error for r in reps)
    score = passed_sum / weight_sum if weight_sum > 0 else 0.0
    total = len(by_fixture)
    return EvalResult(
        eval=evaluation.resource.metadata.name,
        agent=spec.target_agent,
        side=side,
        score=score,
        passed=total > 0 and score >= spec.scoring.pass_threshold,
        pass_threshold=spec.scoring.pass_threshold,
        passing=passing,
        failing=failing,
        errors=errors,
        total=total,
        fixtures=sorted(fixtures, key=lambda r: (r.fixture, r.rep)),
        file=evaluation.file,
        line=evaluation.line,
    )
