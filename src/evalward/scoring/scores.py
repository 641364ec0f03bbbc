"""Fixture and Eval scores, exactly as seed 003 and seed 001 define them: docs/assertions.md
("Scores") gives the rules (a run's score, verdict and status, errors failing closed, reps,
an Eval's score and pass, seed 001's run score).

- An Eval whose judge could not be calibrated (the replay's calls failed: errors, timeouts,
  an outage) has no verdict: its judge assertions are errors that say why, and the Eval is
  incomplete (unavailable when it was an outage), never passing.
- A judge assertion whose judge cannot decide (below its calibration floor, or not
  calibrated as the Eval requires) says so (`cannot_decide`); its verdicts are shown as
  advisory and left out of the score, so that other evidence is read without them. What that
  makes of the Eval (inconclusive: never passing) is the verdict's rule, applied once in
  verdict/undecided.py; `score_eval` gives the Eval's own rules alone.
- An Eval in which nothing gates because its definitions chose so — every assertion of every
  run it scored only reports, e.g. a `latency` without `maxMs` — is `advisory`: reported, and
  neither passes nor fails the gate. A run that failed (an error) is a verdict, so such an
  Eval whose agent crashes still fails.

Seed 003's Skip row ("The runner couldn't reach a terminal status event before timeout") is
not a pass, so it weighs in the score's denominator and not its numerator: an agent that hangs
scores as one that fails, and a pull request cannot turn a failing fixture into a neutral one
by making its agent hang.
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
from collections.abc import Collection, Mapping

from evalward.providers.base import CallTally, RunLabels
from evalward.resources import Eval, EvalFixture, Located
from evalward.resources.checks.assertions import Assertion, JudgeAssertion
from evalward.resources.common import Severity
from evalward.resources.conversation import EndReason
from evalward.resources.models import EvalFixtureSpec, ScoringConfig
from evalward.rundata.playground_state import PlaygroundRun
from evalward.rundata.results import (
    RUN_FAILED,
    AssertionResult,
    EvalResult,
    FixtureOutcome,
    FixtureResult,
    Status,
    Verdict,
    cap_output,
)
from evalward.rundata.trace import Trace
from evalward.scoring.assertions import REGEX_TIMEOUT_SECONDS, observed_ms
from evalward.scoring.code.code_scorer import CodeScorers
from evalward.scoring.code.transform import Transformed
from evalward.scoring.fixture_checks import TIMED_OUT, FixtureChecks, fixture_read
from evalward.scoring.judges.panel import NOT_SCORED, EvalJudge, JudgeOutcome
from evalward.scoring.reps import (
    at_least,
    eval_pass_hat_k,
    mean_interval,
    meets_pass_hat_k,
    pass_hat_k,
    wilson_interval,
)
from evalward.scoring.run_verdict import decide_run
from evalward.scoring.turns import turns_held
from evalward.text.cuts import cap_chars
from evalward.text.escaping import printable

ONLY_REPORTS = "every assertion only reports (e.g. a `latency` without `maxMs`)"
"""Why nothing gates an advisory Eval: only a check its definitions made reporting-only is
left (a judge that cannot decide makes the Eval inconclusive instead)."""


async def score_fixture(
    fixture: Located[EvalFixture],
    trace: Trace,
    scoring: ScoringConfig,
    judge: EvalJudge | None = None,
    *,
    run: RunLabels,
    regex_timeout: float = REGEX_TIMEOUT_SECONDS,
    playground: PlaygroundRun | None = None,
    scorers: CodeScorers | None = None,
    removed_tools: Mapping[str, str] | None = None,
) -> FixtureResult:
    """Score one run of one fixture (`run`: its Eval, side, rep and commit); judge
    assertions (and code scorers, run by `scorers`) run concurrently, state criteria read
    `playground`; a check that passes without a call of one of `removed_tools` fails
    (`FixtureChecks.removed_tools`)."""
    spec = fixture.resource.spec
    judge = judge or EvalJudge(eval=run.eval)
    read, failed = await fixture_read(spec, trace, scorers)
    tally = CallTally()
    labels = _judge_labels(fixture, run, tally)
    checks = FixtureChecks(
        spec, read, judge, labels, regex_timeout, playground, scorers, failed, removed_tools or {}
    )
    assertions = spec.every_assertion
    outcomes = await checks.outcomes(assertions)
    results = [
        _assertion_result(assertion, outcome, assertion.severity or spec.severity, scoring, trace)
        for assertion, outcome in zip(assertions, outcomes, strict=True)
    ]
    result = _fixture_result(fixture, run, trace, results)
    result.judge_calls = tally.calls
    await decide_run(spec, result, trace, scorers)
    if playground is not None:
        result.playground = playground.record()
    return result


async def judge_deferred(
    fixture: Located[EvalFixture],
    result: FixtureResult,
    trace: Trace,
    scoring: ScoringConfig,
    judge: EvalJudge,
    *,
    run: RunLabels,
) -> FixtureResult:
    """`result` with its deferred judge assertions asked now, and its status and score as
    `score_fixture` would have made them. Only a fixture whose judge assertions read the run
    as it is (`judged_later`) is deferred, so nothing else needs asking again."""
    spec = fixture.resource.spec
    read = Transformed(trace, trace.final_output)
    tally = CallTally()
    checks = FixtureChecks(
        spec, read, judge, _judge_labels(fixture, run, tally), REGEX_TIMEOUT_SECONDS
    )
    assertions = spec.every_assertion
    if len(assertions) != len(result.assertions):
        raise ValueError(f"{result.fixture}: its result does not match its assertions")
    asked = await asyncio.gather(
        *(
            checks.outcome(assertion)
            for assertion, done in zip(assertions, result.assertions, strict=True)
            if done.deferred
        )
    )
    answers = iter(asked)
    results = [
        _assertion_result(assertion, next(answers), done.severity, scoring, trace)
        if done.deferred
        else done
        for assertion, done in zip(assertions, result.assertions, strict=True)
    ]
    fresh = _fixture_result(fixture, run, trace, results)
    await decide_run(spec, fresh, trace, None)
    kept = ("cached", "trace", "playground", "file", "line", "usage", "duration_ms", "output")
    update = {name: getattr(result, name) for name in kept}
    update["judge_calls"] = result.judge_calls
    return fresh.model_copy(update=update).judged_now(tally.calls)


def _judge_labels(fixture: Located[EvalFixture], run: RunLabels, tally: CallTally) -> RunLabels:
    """What the calls of a fixture's judges are labelled with, and counted in (`tally`)."""
    agent, name = fixture.resource.spec.target_agent, fixture.resource.metadata.name
    return dataclasses.replace(run, agent=agent, fixture=name, purpose="judge", tally=tally)


def judged_later(spec: EvalFixtureSpec) -> bool:
    """Whether a run of this fixture may be scored first without its judge assertions and
    judged later from its trace alone: no transform of the run, no rule that decides it from
    its score, and every judge assertion at the top level, without a transform of its own
    (a transform or a scoring function runs code, which is not run again)."""
    if spec.transform is not None or spec.pass_threshold is not None:
        return False
    if spec.scoring_function is not None:
        return False
    judges = [a for a in spec.leaf_assertions if isinstance(a, JudgeAssertion)]
    top = [a for a in spec.every_assertion if isinstance(a, JudgeAssertion)]
    return len(judges) == len(top) and all(a.transform is None for a in top)


def _assertion_result(
    assertion: Assertion,
    outcome: JudgeOutcome,
    severity: Severity,
    scoring: ScoringConfig,
    trace: Trace,
) -> AssertionResult:
    return AssertionResult(
        type=assertion.type,
        turn=assertion.turn,
        status=outcome.status,
        score=outcome.score,
        weight=assertion.weight * scoring.weight_of(severity),
        severity=severity,
        axis=assertion.axis,
        message=outcome.message,
        judge=outcome.verdict,
        advisory=outcome.advisory,
        judge_reply=outcome.reply,
        provider_unavailable=outcome.unavailable,
        budget_refused=outcome.refused,
        uncalibrated=outcome.uncalibrated,
        observed_ms=None if trace.timed_out else observed_ms(assertion, trace),
        cross_checks=list(outcome.cross_checks),
        deferred=outcome.deferred,
        cannot_decide=outcome.cannot_decide,
    )


def _fixture_result(
    fixture: Located[EvalFixture], run: RunLabels, trace: Trace, results: list[AssertionResult]
) -> FixtureResult:
    spec = fixture.resource.spec
    score = weighted_mean(results)
    user = spec.conversation.user if spec.conversation is not None else None
    status, message = fixture_status(results, trace, user.satisfied_when if user else "")
    message = "; ".join(said for said in (message, truncation_note(trace)) if said)
    return FixtureResult(
        eval=run.eval,
        fixture=fixture.resource.metadata.name,
        side=run.side,
        rep=run.rep,
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
        file=printable(fixture.file),
        line=fixture.line,
        provider_unavailable=status is Status.error and unavailable_only(results, trace),
        budget_refused=trace.budget_refused or any(r.budget_refused for r in results),
        timed_out=trace.timed_out,
        judges_disagree=any(r.judges_disagree for r in results),
        turns=turns_held(trace),
        end_reason=trace.end_reason,
    )


def _gating(results: list[AssertionResult]) -> list[AssertionResult]:
    return [r for r in results if r.gates]


def fixture_status(
    results: list[AssertionResult], trace: Trace, satisfied_when: str = ""
) -> tuple[Status, str]:
    """A run's status and why: its run ended short (timed out, an error), a check is an
    error or failed, or (`satisfied_when`, its simulated user's) its conversation reached
    its turn limit before the user was satisfied."""
    gating = _gating(results)
    errors = [r for r in gating if r.status is Status.error]
    failed = [r for r in gating if r.status is Status.failed]
    if trace.timed_out:
        return Status.skipped, (
            f"skipped: {trace.error}; {TIMED_OUT}, so it counts as not passing "
            "(raise the timeout it names if the agent needs longer)"
        )
    if trace.error is not None:
        return Status.error, f"{RUN_FAILED}{trace.error}"
    unmet = _goal_unmet(trace, satisfied_when)
    if errors:
        said = [f"{r.type}: error: {r.message}" for r in errors]
        said += [f"{r.type}: fail: {r.message}" for r in failed]
        return Status.error, "; ".join([*said, *unmet])
    if failed or unmet:
        return Status.failed, "; ".join([*(f"{r.type}: {r.message}" for r in failed), *unmet])
    deferred = [r for r in results if r.deferred]
    if deferred:  # what passed so far says nothing while the judge is not asked
        return Status.skipped, f"{deferred[0].type}: {deferred[0].message}"
    if results and all(r.advisory for r in results):
        return Status.skipped, "nothing gates: " + "; ".join(r.message for r in results)
    if not gating:
        skipped = [r.message for r in results if r.status is Status.skipped or r.advisory]
        return Status.skipped, "nothing was evaluated" + (f": {skipped[0]}" if skipped else "")
    return Status.passed, ""


def _goal_unmet(trace: Trace, satisfied_when: str) -> list[str]:
    """Why a conversation fails whatever its checks say: its simulated user says when it is
    satisfied (`satisfiedWhen`), and it reached its turn limit with the user not done (an
    agent that stalls, asking again each turn, leaves every check of what it did not do
    passing); [] otherwise."""
    if not satisfied_when or trace.end_reason != EndReason.turn_limit.value:
        return []
    return [
        f"the conversation reached its turn limit ({turns_held(trace)} turns) and the "
        f"simulated user was never satisfied ({cap_chars(satisfied_when, 120)}); raise "
        "maxTurns if the agent needs more turns"
    ]


def unavailable_only(results: list[AssertionResult], trace: Trace) -> bool:
    """Whether an `error` run failed only because model providers were down: the agent's
    (the run ended in an outage) or, for a run that completed, the judge's."""
    if trace.error is not None:
        return trace.provider_unavailable
    errors = [r for r in _gating(results) if r.status is Status.error]
    return bool(errors) and all(r.provider_unavailable for r in errors)


def truncation_note(trace: Trace) -> str:
    """A final answer cut at the token limit is said so, not taken silently as the answer."""
    final = trace.final_step
    if final is None or not final.truncated:
        return ""
    return (
        "the final answer was cut off at the model's token limit "
        f"(stop reason `{final.stop_reason}`); raise the agent's maxTokens"
    )


def weighted_mean(results: list[AssertionResult]) -> float:
    counted = _gating(results)
    total = sum(r.weight for r in counted)
    if total <= 0:
        return 0.0
    return min(1.0, max(0.0, sum(r.weight * r.score for r in counted) / total))


def axis_means(results: list[AssertionResult]) -> dict[str, float]:
    axes = sorted({r.axis for r in _gating(results) if r.axis})
    return {axis: weighted_mean([r for r in results if r.axis == axis]) for axis in axes}


def _mean_axes(scored: list[dict[str, float]]) -> dict[str, float]:
    """Per axis, the mean over the entries that have it."""
    names = sorted({axis for axes in scored for axis in axes})
    return {n: statistics.fmean(a[n] for a in scored if n in a) for n in names}


def fixture_outcome(reps: list[FixtureResult], scoring: ScoringConfig) -> FixtureOutcome:
    """Seed 003's fixtureResults row for one fixture, from all of its reps."""
    ordered = sorted(reps, key=lambda r: r.rep)
    counted = [r for r in ordered if r.counted]
    passes = sum(r.passed for r in counted)
    errors = sum(r.status is Status.error for r in counted)
    failures = sum(r.status is Status.failed for r in counted)
    n = len(counted)
    rate = passes / n if n else 0.0
    if not counted:
        result = Status.skipped
    elif at_least(rate, scoring.min_rep_pass_rate):
        result = Status.passed
    elif errors or failures:
        result = Status.error if errors else Status.failed
    else:  # every rep that did not pass timed out: seed 003's Skip, not a pass
        result = Status.skipped
    shown = next((r for r in counted if not r.passed), counted[0] if counted else ordered[0])
    scores = [r.score for r in counted]
    message = shown.message
    if len(ordered) > 1 and not n:  # nothing evaluated (or only advisory checks) in any rep
        message = f"{message} (all {len(ordered)} reps)" if message else message
    elif len(ordered) > 1:
        message = f"{passes}/{n} reps passed" + (f"; rep {shown.rep}: {message}" if message else "")
    return FixtureOutcome(
        name=ordered[0].fixture,
        score=statistics.fmean(scores) if scores else 0.0,
        result=result,
        severity=ordered[0].severity,
        message=message,
        output=shown.output,
        judge=next((a.judge for a in shown.assertions if a.judge is not None), None),
        reps=len(ordered),
        passes=passes,
        errors=errors,
        skipped=len(ordered) - n,
        pass_rate=rate,
        pass_rate_interval=wilson_interval(passes, n),
        score_interval=mean_interval(scores),
        pass_hat_k=pass_hat_k(passes, n) if n else {},
        timed_out=sum(r.timed_out for r in ordered),
        judge_disagreements=sum(r.judges_disagree for r in ordered),
        advisory=not counted and all(r.advisory_only for r in ordered),
        shown_rep=shown.rep,
        axes=_mean_axes([r.axes for r in counted]),
    )


def _agreement(fixtures: list[FixtureResult]) -> float | None:
    """The judge's calibrated agreement, where a verdict carries it."""
    return next(
        (
            a.judge.agreement
            for f in fixtures
            for a in f.assertions
            if a.judge is not None and a.judge.agreement is not None
        ),
        None,
    )


def _unavailable(fixtures: list[FixtureResult], unscored: list[AssertionResult]) -> bool:
    """Every run that counts failed for an outage, or every unscored judgement did. A
    timed-out run is no outage: an agent that hangs cannot pass for a provider that is down."""
    ran = [f for f in fixtures if f.counted]
    return (bool(ran) and all(f.provider_unavailable for f in ran)) or (
        bool(unscored) and all(a.provider_unavailable for a in unscored)
    )


def score_eval(
    eval_def: Located[Eval],
    side: str,
    fixtures: list[FixtureResult],
    pending: Collection[str] = (),
) -> EvalResult:
    """The severity-weighted pass rate of the fixtures, each decided over its reps.

    `pending` fixtures (added by the pull request, gating once merged) are reported with
    `gates=False` and left out of the score and the counts.
    """
    spec = eval_def.resource.spec
    outcomes = [  # each fixture decided over its reps, by name; a `pending` one does not gate
        fixture_outcome(reps, spec.scoring).model_copy(update={"gates": name not in pending})
        for name, reps in sorted(runs_by_fixture(fixtures).items())
    ]
    gating = [o for o in outcomes if o.gates]
    scored = [o for o in gating if o.counted]
    decided = [o for o in scored if o.result is not Status.skipped]
    score = _weighted_score(scored, spec.scoring)
    advisory = bool(gating) and all(o.advisory for o in gating)
    unscored = [a for f in fixtures for a in f.assertions if a.uncalibrated]
    incomplete = unscored[0].message.removeprefix(NOT_SCORED) if unscored else ""
    run_score = statistics.fmean(o.score for o in scored) if scored else None
    hat_k = eval_pass_hat_k(decided)
    passed = (
        bool(decided)
        and not incomplete
        and at_least(score, spec.scoring.pass_threshold)
        and meets_pass_hat_k(hat_k, spec.scoring.min_pass_hat_k)
    )
    return EvalResult(
        pass_hat_k=hat_k,
        min_pass_hat_k=spec.scoring.min_pass_hat_k,
        advisory=advisory,
        advisory_reason=ONLY_REPORTS if advisory else "",
        min_rep_pass_rate=spec.scoring.min_rep_pass_rate,
        severity_weights={s: spec.scoring.weight_of(s) for s in Severity},
        run_score=run_score,
        run_verdict=None if run_score is None else Verdict.of(run_score),
        axes=_mean_axes([o.axes for o in scored]),
        provider_unavailable=_unavailable(fixtures, unscored),
        incomplete_reason=incomplete,
        eval=eval_def.resource.metadata.name,
        agent=spec.target_agent,
        side=side,
        score=score,
        passed=passed,
        pass_threshold=spec.scoring.pass_threshold,
        passing=sum(o.passed for o in decided),
        failing=sum(not o.passed for o in decided),
        errors=sum(o.result is Status.error for o in decided),
        total=len(gating),
        skipped=len(gating) - len(decided),
        timed_out=sum(o.result is Status.skipped and o.timed_out > 0 for o in gating),
        pending=sorted(o.name for o in outcomes if not o.gates),
        fixture_results=outcomes,
        judge_agreement=_agreement(fixtures),
        fixtures=sorted(fixtures, key=lambda r: (r.fixture, r.rep)),
        file=printable(eval_def.file),
        line=eval_def.line,
    )


def runs_by_fixture(results: list[FixtureResult]) -> dict[str, list[FixtureResult]]:
    """Each fixture's runs, in the order given."""
    grouped: dict[str, list[FixtureResult]] = {}
    for result in results:
        grouped.setdefault(result.fixture, []).append(result)
    return grouped


def _weighted_score(scored: list[FixtureOutcome], scoring: ScoringConfig) -> float:
    """The severity-weighted share of `scored` that passed (0 when nothing weighs)."""
    weight_sum = sum(scoring.weight_of(o.severity) for o in scored)
    passed_sum = sum(scoring.weight_of(o.severity) for o in scored if o.passed)
    return passed_sum / weight_sum if weight_sum > 0 else 0.0
