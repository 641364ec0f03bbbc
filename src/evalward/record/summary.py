"""The run in numbers, computed once for every surface: what happened to each fixture
(`FixtureFacts`: regressed, failing, errored on head, …), the counts of each (`Counts`), the
verdict in plain words (`headline`), worst first (`worst_first`).

The comment, the job summary, the check run, report.html, results.json (`summary`) and the
terminal all read these, so "2 regressions" or "1 error on head" is the same number with the
same name wherever it is shown. Each count says what it counts: `errors_on_head` is fixtures
with a head run that errored (an outage is `unavailable`, not an error); `new` is every fixture
that did not run on base, of which `pending` gate only once merged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from evalward.resources.common import DEFAULT_SEVERITY_WEIGHTS, Severity
from evalward.rundata.results import EvalResult, FixtureOutcome, FixtureResult, Status
from evalward.stages.compare import Change, EvalComparison
from evalward.stages.gate import UNAVAILABLE, GateDecision, GateResult
from evalward.text.numbers import score_text, threshold_text

SEVERITY_ORDER = (Severity.critical, Severity.high, Severity.medium, Severity.low)


@dataclass(frozen=True)
class FixtureFacts:
    """What happened to one (Eval, fixture), as every surface names it. Head side only but for
    `regressed`, `fixed`, `new` and `removed`, which compare it with base."""

    regressed: bool = False
    fixed: bool = False
    new: bool = False
    """Not run on base, in an Eval that ran on base (a `pending` fixture is new too)."""
    removed: bool = False
    pending: bool = False
    """Added by the pull request to an Eval of the base branch: it ran, and gates once merged."""
    failing: bool = False
    """It blocks: it gates, its Eval has a verdict, and it regressed or does not pass on head
    by the Eval's `minRepPassRate` rule (failed, errored or timed out; not an outage)."""
    errored: bool = False
    """A head run errored, and not only because a model provider was down."""
    unavailable: bool = False
    """Every head run that did not pass failed only because a model provider was down."""
    timed_out: bool = False
    flaky: bool = False
    """Its head reps disagree: some passed, some did not."""
    judges_disagree: bool = False
    """A cross-check judge disagreed with the primary beyond the margin on a head run."""
    advisory: bool = False
    """Nothing in it gates on head (every assertion advisory)."""


def classify(
    change: str,
    head: list[FixtureResult],
    head_outcome: FixtureOutcome | None,
    *,
    gates: bool = True,
    verdict: bool = True,
) -> FixtureFacts:
    """The facts of one fixture from its head runs and outcome over reps. `change` is a
    `compare.Change` value ("" when its Eval ran on one side only); `verdict` is false for an
    Eval with no verdict (its provider was down, or its judge could not be calibrated)."""
    advisory = change == Change.advisory.value or (
        head_outcome is not None and head_outcome.advisory
    )
    not_passing = [r for r in head if not r.passed and r.counted]
    unavailable = bool(not_passing) and all(r.provider_unavailable for r in not_passing)
    timed_out = any(r.timed_out for r in head)
    if head_outcome is not None:
        fails = head_outcome.result in (Status.failed, Status.error) or (
            head_outcome.result is Status.skipped and head_outcome.timed_out > 0
        )
        flaky = head_outcome.flaky
    else:
        fails = bool(not_passing)
        counted = [r.passed for r in head if r.counted]
        flaky = len(counted) > 1 and any(counted) and not all(counted)
    regressed = change == Change.regression.value
    return FixtureFacts(
        regressed=regressed,
        fixed=change == Change.fixed.value,
        new=change == Change.new.value,
        removed=change == Change.removed.value,
        pending=bool(head) and not gates,
        failing=bool(head)
        and gates
        and verdict
        and not advisory
        and not unavailable
        and (regressed or fails),
        errored=not unavailable and any(r.status is Status.error for r in head),
        unavailable=unavailable,
        timed_out=timed_out,
        flaky=flaky,
        judges_disagree=any(r.judges_disagree for r in head),
        advisory=bool(head) and advisory,
    )


def verdictless(result: EvalResult) -> bool:
    """An Eval with no verdict: its provider was down, or its judge could not be calibrated."""
    return result.provider_unavailable or bool(result.incomplete_reason)


def weight_of(result: EvalResult | None, severity: Severity) -> float:
    """The Eval's weight for `severity` (its `scoring.severityWeights`, else the defaults)."""
    if result is not None and severity in result.severity_weights:
        return result.severity_weights[severity]
    return DEFAULT_SEVERITY_WEIGHTS[severity]


def worst_first_key(
    weight: float, drop: float | None, eval_name: str, fixture: str
) -> tuple[float, float, str, str]:
    """Worst first: the heaviest severity, then the largest score drop, then by name."""
    return (-weight, -(drop or 0.0), eval_name, fixture)


def score_drop(base: FixtureOutcome | None, head: FixtureOutcome | None) -> float | None:
    """How far the fixture's score fell from base to head (negative: it rose)."""
    if base is None or head is None:
        return None
    return base.score - head.score


class Counts(BaseModel):
    """How many fixtures of each kind, over every affected Eval (`FixtureFacts`)."""

    model_config = ConfigDict(frozen=True)

    fixtures: int = 0
    """Fixtures that gate on head (not pending, not advisory)."""
    passing: int = 0
    """Of those, passing on head by the Eval's `minRepPassRate` rule."""
    failing: int = 0
    """Fixtures that block: regressed, or not passing on head (not an outage)."""
    regressions: int = 0
    regressions_by_severity: dict[Severity, int] = Field(default_factory=dict)
    fixed: int = 0
    new: int = 0
    pending: int = 0
    removed: int = 0
    errors_on_head: int = 0
    unavailable: int = 0
    timed_out: int = 0
    flaky: int = 0
    judges_disagree: int = 0
    advisory: int = 0

    @property
    def critical_regressions(self) -> int:
        return self.regressions_by_severity.get(Severity.critical, 0)


class RunSummary(BaseModel):
    """results.json's `summary`: the verdict in plain words and the counts every surface
    shows. How long the run took and what its model calls spent are in `run`."""

    model_config = ConfigDict(frozen=True)

    headline: str
    """The verdict in plain words ("Blocked: support-eval 0.31 < 0.85 — 5 regressions, 1
    critical")."""
    counts: Counts = Field(default_factory=Counts)
    run_time_summed_s: float = 0.0
    """The fixture runs' own durations added up (not the wall time: runs overlap)."""


def facts_of(comparison: EvalComparison) -> Iterable[tuple[str, FixtureFacts, Severity]]:
    """Each fixture of an Eval's comparison: its name, its facts and its severity."""
    outcomes = {o.name: o for o in comparison.head.fixture_results}
    has_base = comparison.base is not None
    for fixture in comparison.fixtures:
        runs = fixture.head or fixture.base
        if not runs:
            continue
        change = fixture.change.value if has_base else ""
        if not has_base and fixture.change is Change.advisory:
            change = Change.advisory.value
        facts = classify(
            change,
            fixture.head,
            outcomes.get(fixture.fixture),
            gates=fixture.gates,
            verdict=not verdictless(comparison.head),
        )
        yield fixture.fixture, facts, runs[0].severity


def count(comparisons: list[EvalComparison]) -> Counts:
    totals: dict[str, int] = {}
    by_severity: dict[Severity, int] = {}
    fixtures = passing = 0
    for comparison in comparisons:
        gating = {f.fixture: f for f in comparison.fixtures}
        for name, facts, severity in facts_of(comparison):
            for field_name in FixtureFacts.__dataclass_fields__:
                totals[field_name] = totals.get(field_name, 0) + getattr(facts, field_name)
            if facts.regressed:
                by_severity[severity] = by_severity.get(severity, 0) + 1
            fixture = gating[name]
            if fixture.head and fixture.gates and not facts.advisory:
                fixtures += 1
                passing += fixture.head_passed
    return Counts(
        fixtures=fixtures,
        passing=passing,
        failing=totals.get("failing", 0),
        regressions=totals.get("regressed", 0),
        regressions_by_severity={s: by_severity[s] for s in SEVERITY_ORDER if s in by_severity},
        fixed=totals.get("fixed", 0),
        new=totals.get("new", 0),
        pending=totals.get("pending", 0),
        removed=totals.get("removed", 0),
        errors_on_head=totals.get("errored", 0),
        unavailable=totals.get("unavailable", 0),
        timed_out=totals.get("timed_out", 0),
        flaky=totals.get("flaky", 0),
        judges_disagree=totals.get("judges_disagree", 0),
        advisory=totals.get("advisory", 0),
    )


def regressions_text(counts: Counts) -> str:
    """ "5 regressions, 1 critical"; "1 regression"; "" for none."""
    if not counts.regressions:
        return ""
    text = f"{counts.regressions} regression{'s' if counts.regressions != 1 else ''}"
    worst = next((s for s in SEVERITY_ORDER if counts.regressions_by_severity.get(s)), None)
    if worst in (Severity.critical, Severity.high):
        text += f", {counts.regressions_by_severity[worst]} {worst.value}"
    return text


def eval_score_text(result: EvalResult) -> str:
    """An Eval's head score against its threshold, never contradicting its verdict."""
    passed = None if (verdictless(result) or result.advisory) else result.passed
    return score_text(result.score, result.pass_threshold, passed)


def shortfall_text(name: str, result: EvalResult) -> str:
    """What an Eval falls short of: its score's threshold, or else its pass^k floor."""
    floor = result.min_pass_hat_k
    if (
        result.score >= result.pass_threshold
        and floor is not None
        and result.pass_hat_k is not None
    ):
        return f"{name} pass^k {result.pass_hat_k:.2f} < {floor:.2f}"
    return f"{name} {eval_score_text(result)} < {threshold_text(result.pass_threshold)}"


def headline(comparisons: list[EvalComparison], decision: GateDecision, counts: Counts) -> str:
    """The verdict in plain words, as a reviewer triaging the pull request wants it first."""
    below = sorted(  # the furthest below its threshold first
        (
            c
            for c in comparisons
            if not (c.head.passed or c.head.advisory or verdictless(c.head))
            and c.name in decision.failing_evals
        ),
        key=lambda c: (c.head.score - c.head.pass_threshold, c.name),
    )
    scores = (
        ", ".join(
            f"{c.name} settled failing by its sequential tests"
            if c.head.sequential is not None  # adaptive reps: the threshold does not decide
            else shortfall_text(c.name, c.head)
            for c in below[:3]
        )
        + (f" and {len(below) - 3} more Evals" if len(below) > 3 else "")
    )
    regressed = regressions_text(counts)
    what = " — ".join(part for part in (scores, regressed) if part)
    result = decision.result
    if result is GateResult.failed:
        return f"Blocked: {what or decision.reason}"
    if result is GateResult.bypassed:
        return f"Bypassed: {what or decision.reason} — the gate was bypassed by its label"
    if result is GateResult.passed:
        suffix = f" — {regressed}, not blocking" if regressed else ""
        return f"every affected Eval passes{suffix}"
    # skipped, incomplete ("cancelled after 3 of 8 runs"): the reason is the verdict's words
    return UNAVAILABLE if result is GateResult.unavailable else decision.reason


def summarize(
    comparisons: list[EvalComparison],
    decision: GateDecision,
    fixtures: Iterable[FixtureResult] = (),
) -> RunSummary:
    counts = count(comparisons)
    return RunSummary(
        headline=headline(comparisons, decision, counts),
        counts=counts,
        run_time_summed_s=round(sum(f.duration_ms for f in fixtures) / 1000, 3),
    )


def severities(results: Iterable[EvalResult]) -> Mapping[str, EvalResult]:
    """Each Eval's head result (else its base's): where its severity weights are read."""
    by_name: dict[str, EvalResult] = {}
    for result in results:
        if result.side == "head" or result.eval not in by_name:
            by_name[result.eval] = result
    return by_name
