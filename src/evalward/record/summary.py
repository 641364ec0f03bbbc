"""The run in numbers, computed once for every surface: what happened to each fixture
(`FixtureFacts`: regressed, failing, errored on head, …), the counts of each (`Counts`), the
verdict in plain words (`headline`), worst first (`worst_first`).

The comment, the job summary, the check run, report.html, results.json (`summary`) and the
terminal all read these, so "2 regressions" or "1 error on head" is the same number with the
same name wherever it is shown. Each count says what it counts: `errors_on_head` is fixtures
with a head run that errored (an outage is `unavailable`, not an error); `new` is every fixture
that did not run on base, of which `pending` gate only once merged.

Every fixture that gates is exactly one of passing, failing or not settled (each fact says
by which rule), so `passing + failing + not_settled == fixtures`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from evalward.record.decided import decided_by, eval_evidence, pairwise_text, regression_rule
from evalward.resources.common import DEFAULT_SEVERITY_WEIGHTS, Severity
from evalward.rundata.results import EvalResult, FixtureOutcome, FixtureResult, Status
from evalward.rundata.sequential_record import SequentialRecord
from evalward.text.counts import counted
from evalward.text.numbers import score_text, threshold_text
from evalward.text.ordering import NaturalKey, natural_key
from evalward.verdict.blocked import falls_short, pairwise_only
from evalward.verdict.compare import Change, EvalComparison, FixtureComparison
from evalward.verdict.gate import UNAVAILABLE, GateDecision, GateResult

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
    passing: bool = False
    """It gates and passes on head: by the Eval's `minRepPassRate` rule, or (adaptive reps)
    settled working by its sequential test; its Eval has a verdict."""
    failing: bool = False
    """It gates, its Eval has a verdict, and it regressed or does not pass on head: by the
    Eval's `minRepPassRate` rule (failed, errored or timed out; not an outage), or (adaptive
    reps) settled broken by its sequential test."""
    not_settled: bool = False
    """It gates and is neither passing nor failing: its test did not settle (adaptive reps),
    its Eval has no verdict, or an outage left it none."""
    pooled_driver: bool = False
    """Adaptive reps: not failing on its own, but it failed a head rep of an Eval whose pooled
    test blocks, so it drove that block."""
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
    sequential: SequentialRecord | None = None,
) -> FixtureFacts:
    """The facts of one fixture from its head runs and outcome over reps. `change` is a
    `compare.Change` value ("" when its Eval ran on one side only); `verdict` is false for an
    Eval with no verdict (its provider was down, or its judge could not be calibrated);
    `sequential` is its Eval's sequential tests, with adaptive reps."""
    advisory = change == Change.advisory.value or (
        head_outcome is not None and head_outcome.advisory
    )
    not_passing = [r for r in head if not r.passed and r.counted]
    unavailable = bool(not_passing) and all(r.provider_unavailable for r in not_passing)
    fails, passes, flaky = _over_reps(head, head_outcome, sequential)
    name = head[0].fixture if head else ""
    regressed = change == Change.regression.value
    settles = bool(head) and gates and verdict and not advisory
    failing = settles and not unavailable and (regressed or fails)
    passing = settles and passes and not failing
    return FixtureFacts(
        regressed=regressed,
        fixed=change == Change.fixed.value,
        new=change == Change.new.value,
        removed=change == Change.removed.value,
        pending=bool(head) and not gates,
        passing=passing,
        failing=failing,
        not_settled=bool(head) and gates and not advisory and not (passing or failing),
        pooled_driver=(
            sequential is not None
            and sequential.pooled_blocks
            and settles
            and not failing
            and name in sequential.drivers
        ),
        errored=not unavailable and any(r.status is Status.error for r in head),
        unavailable=unavailable,
        timed_out=any(r.timed_out for r in head),
        flaky=flaky,
        judges_disagree=any(r.judges_disagree for r in head),
        advisory=bool(head) and advisory,
    )


def _over_reps(
    head: list[FixtureResult],
    outcome: FixtureOutcome | None,
    sequential: SequentialRecord | None,
) -> tuple[bool, bool, bool]:
    """Whether the fixture fails, passes and is flaky on head over its reps: by its outcome
    (the Eval's `minRepPassRate`), or with adaptive reps by what its own test settled."""
    counted = [r.passed for r in head if r.counted]
    if outcome is not None:
        fails = outcome.result in (Status.failed, Status.error) or (
            outcome.result is Status.skipped and outcome.timed_out > 0
        )
        passes, flaky = outcome.result is Status.passed, outcome.flaky
    else:
        fails = any(not r.passed and r.counted for r in head)
        passes = bool(counted) and all(counted)
        flaky = len(counted) > 1 and any(counted) and not all(counted)
    call = sequential.of(head[0].fixture) if sequential is not None and head else None
    if call is not None:
        return call.broken, call.working, flaky
    return fails, passes, flaky


def fixtures_decided(result: EvalResult) -> bool:
    """Whether an Eval's fixtures have outcomes to count: it has a verdict, or only its
    pairwise judge withholds it (its own rules settled each fixture)."""
    return not verdictless(result) or (result.pairwise is not None and result.pairwise.withholds)


def verdictless(result: EvalResult) -> bool:
    """An Eval with no verdict: its provider was down, its judge could not be calibrated, or
    its judge cannot decide."""
    return (
        result.provider_unavailable
        or bool(result.incomplete_reason)
        or bool(result.inconclusive_reason)
    )


def weight_of(result: EvalResult | None, severity: Severity) -> float:
    """The Eval's weight for `severity` (its `scoring.severityWeights`, else the defaults)."""
    if result is not None and severity in result.severity_weights:
        return result.severity_weights[severity]
    return DEFAULT_SEVERITY_WEIGHTS[severity]


WorstFirst = tuple[float, float, NaturalKey, NaturalKey]


def worst_first_key(weight: float, drop: float | None, eval_name: str, fixture: str) -> WorstFirst:
    """Worst first: the heaviest severity, then the largest score drop, then by name in
    natural order (`case-2` before `case-10`)."""
    return (-weight, -(drop or 0.0), natural_key(eval_name), natural_key(fixture))


def score_drop(base: FixtureOutcome | None, head: FixtureOutcome | None) -> float | None:
    """How far the fixture's score fell from base to head (negative: it rose)."""
    if base is None or head is None:
        return None
    return base.score - head.score


class Counts(BaseModel):
    """How many fixtures of each kind, over every affected Eval (`FixtureFacts`)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    fixtures: int = 0
    """Fixtures that gate on head (not pending, not advisory)."""
    passing: int = 0
    """Of those, passing on head (`FixtureFacts.passing`)."""
    failing: int = 0
    """Of those, failing on head (`FixtureFacts.failing`)."""
    not_settled: int = 0
    """Of those, neither: `passing + failing + not_settled == fixtures`."""
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

    model_config = ConfigDict(frozen=True, defer_build=True)

    headline: str
    """The verdict in plain words ("Blocked: support-eval 0.31 < 0.85 — 5 regressions (1
    critical)")."""
    counts: Counts = Field(default_factory=Counts)
    blocked_by: list[str] = Field(default_factory=list)
    """What blocks an Eval beside its fixtures' own results, which the counts count ("bot-eval
    blocked by its pooled sequential test: head's pass rate 0.62 (31/50) vs base 0.91
    (41/45)"): the counts line says it first, so it never reads as all passing."""
    run_time_summed_s: float = 0.0
    """The fixture runs' own durations added up (not the wall time: runs overlap)."""


def facts_of(
    comparison: EvalComparison,
) -> Iterator[tuple[FixtureComparison, FixtureOutcome | None, FixtureFacts]]:
    """Each fixture of an Eval's comparison that ran (on either side), with its outcome over
    head reps and its facts."""
    outcomes = {o.name: o for o in comparison.head.fixture_results}
    for fixture in comparison.fixtures:
        if fixture.head or fixture.base:
            facts = facts_of_fixture(comparison, fixture, outcomes)
            yield fixture, outcomes.get(fixture.fixture), facts


def facts_of_fixture(
    comparison: EvalComparison,
    fixture: FixtureComparison,
    outcomes: Mapping[str, FixtureOutcome] | None = None,
) -> FixtureFacts:
    """One fixture's facts in its Eval's comparison, as every report classifies it: once,
    then kept in the comparison for as long as what they are read from is the same."""
    if outcomes is None:
        outcomes = {o.name: o for o in comparison.head.fixture_results}
    outcome = outcomes.get(fixture.fixture)
    read_from = (fixture, outcome, comparison.head, comparison.base)
    kept = comparison.facts.get(fixture.fixture)
    if kept is not None and all(a is b for a, b in zip(kept[0], read_from, strict=True)):
        facts: FixtureFacts = kept[1]
        return facts
    facts = classify(
        change_in(comparison, fixture),
        fixture.head,
        outcome,
        gates=fixture.gates,
        verdict=fixtures_decided(comparison.head),
        sequential=comparison.head.sequential,
    )
    comparison.facts[fixture.fixture] = (read_from, facts)
    return facts


def change_in(comparison: EvalComparison, fixture: FixtureComparison) -> str:
    """The change a fixture's facts are classified with: "" when its Eval ran on head only,
    unless the fixture is advisory."""
    if comparison.base is not None or fixture.change is Change.advisory:
        return fixture.change.value
    return ""


def count(comparisons: list[EvalComparison]) -> Counts:
    totals: Counter[str] = Counter()
    by_severity: Counter[Severity] = Counter()
    fixtures = 0
    for comparison in comparisons:
        for fixture, _, facts in facts_of(comparison):
            totals.update(name for name, value in vars(facts).items() if value)  # its true flags
            if facts.regressed:
                by_severity[(fixture.head or fixture.base)[0].severity] += 1
            fixtures += facts.passing or facts.failing or facts.not_settled
    return Counts(
        fixtures=fixtures,
        passing=totals["passing"],
        failing=totals["failing"],
        not_settled=totals["not_settled"],
        regressions=totals["regressed"],
        regressions_by_severity={s: by_severity[s] for s in SEVERITY_ORDER if s in by_severity},
        fixed=totals["fixed"],
        new=totals["new"],
        pending=totals["pending"],
        removed=totals["removed"],
        errors_on_head=totals["errored"],
        unavailable=totals["unavailable"],
        timed_out=totals["timed_out"],
        flaky=totals["flaky"],
        judges_disagree=totals["judges_disagree"],
        advisory=totals["advisory"],
    )


def regressions_text(counts: Counts) -> str:
    """ "5 regressions (1 critical)"; "1 regression"; "" for none: how many of them are of the
    worst severity, where it is high or critical."""
    if not counts.regressions:
        return ""
    text = counted(counts.regressions, "regression")
    worst = next((s for s in SEVERITY_ORDER if counts.regressions_by_severity.get(s)), None)
    if worst in (Severity.critical, Severity.high):
        text += f" ({counts.regressions_by_severity[worst]} {worst.value})"
    return text


def eval_score_text(result: EvalResult) -> str:
    """An Eval's head score against its threshold, never contradicting its verdict; with
    adaptive reps, which read no threshold, the score alone; a base some of whose runs were
    not judged (`EvalResult.not_judged`: the pairwise judge settled them) has no score to show."""
    if result.not_judged:
        return "not judged"
    if result.sequential is not None:
        return score_text(result.score)
    passed = None if (verdictless(result) or result.advisory) else result.passed
    return score_text(result.score, result.pass_threshold, passed)


def threshold_of(result: EvalResult) -> str:
    """An Eval's threshold as its row shows it: "—" with adaptive reps, which read none."""
    return "—" if result.sequential is not None else threshold_text(result.pass_threshold)


def headline(comparisons: list[EvalComparison], decision: GateDecision, counts: Counts) -> str:
    """The verdict in plain words, as a reviewer triaging the pull request wants it first: what
    blocked by the rule that decided it (its threshold, its sequential tests), the settled
    regressions, and how many fixtures are not settled. The base branch's own failing Evals
    are named before those the pull request adds, whose thresholds it chooses: three of its
    own at 0.00 < 1.00 took the base's Eval's place."""
    below = sorted(  # the base branch's own first, each the furthest below its threshold first
        (
            c
            for c in comparisons
            if not (c.head.passed or c.head.advisory or verdictless(c.head))
            and c.name in decision.failing_evals
        ),
        key=lambda c: (c.added, c.head.score - c.head.pass_threshold, c.name),
    )
    scores = ", ".join(_decided(c, decision) for c in below[:3]) + (
        f" and {len(below) - 3} more Evals" if len(below) > 3 else ""
    )
    unfinished = ", ".join(
        [
            f"{c.name} is incomplete: {c.head.incomplete_reason}"
            for c in comparisons
            if c.head.incomplete_reason and not c.head.advisory
        ]
        + [
            f"{c.name} is inconclusive: {c.head.inconclusive_reason}"
            for c in comparisons
            if c.name in decision.inconclusive_evals and c.head.inconclusive_reason
        ]
    )
    scores = ", ".join(filter(None, (scores, _regression_rules(comparisons, decision), unfinished)))
    regressed = regressions_text(counts)
    open_ = f"{counts.not_settled} of {counts.fixtures} fixtures not settled"
    unsettled = open_ if counts.not_settled else ""
    what = " — ".join(
        part for part in (scores, ", ".join(filter(None, (regressed, unsettled)))) if part
    )
    result = decision.result
    left_out = "; ".join(
        f"{c.name}'s pairwise judge is left out of the gate: {c.head.pairwise.left_out_reason}"
        for c in comparisons
        if c.head.pairwise is not None and c.head.pairwise.left_out_reason
    )
    aside = f" — {left_out}" if left_out else ""
    if result is GateResult.failed:
        return f"Blocked: {what or decision.reason}{aside}"
    if result is GateResult.bypassed:
        return f"Bypassed: {what or decision.reason} — the gate was bypassed by its label{aside}"
    if result is GateResult.passed:
        quiet = ", ".join(
            filter(None, (f"{regressed}, not blocking" if regressed else "", unsettled))
        )
        if decision.uncovered:  # the verdict does not cover what the budget could not hold
            quiet = "; ".join(filter(None, (decision.uncovered, quiet)))
            return f"every affected Eval passes without some of its runs — {quiet}" + aside
        return "every affected Eval passes" + (f" — {quiet}" if quiet else "") + aside
    # skipped, incomplete ("cancelled after 3 of 8 runs"): the reason is the verdict's words
    return UNAVAILABLE if result is GateResult.unavailable else decision.reason + aside


def _decided(comparison: EvalComparison, decision: GateDecision) -> str:
    """A failing Eval and the rule that decided it: its score against its threshold where
    that decided (fixed reps), else the test or judge that did (record/decided.py)."""
    head = comparison.head
    if head.sequential is None and not head.passed and not pairwise_only(comparison):
        pass_k, reached, line = falls_short(comparison)  # the threshold, else pass^k floor
        said = f"{comparison.name} {'pass^k ' if pass_k else ''}{reached} < {line}"
        if head.pairwise is not None and head.pairwise.blocks:
            said += f"; {pairwise_text(head.pairwise)}"
        return said
    return f"{comparison.name}: {decided_by(comparison, decision.regressions)}"


def blocked_by(comparisons: list[EvalComparison], decision: GateDecision) -> list[str]:
    """What blocks each failing Eval beside its fixtures' own results (`eval_evidence`), and
    each Eval whose pairwise judge alone withholds its verdict (its fixtures are counted).

    The base branch's own Evals come first, as in the headline and the reasons: the counts
    line leads every surface, and Evals the pull request adds, named to sort first, came
    before the base's, as many as the pull request likes (the check run's summary holds
    65,535 bytes)."""
    if decision.result is GateResult.passed:
        return []
    blocks = decision.result in (GateResult.failed, GateResult.bypassed)
    failing = [c for c in comparisons if c.name in decision.failing_evals] if blocks else []
    said = [(c.added, said) for c in failing if (said := eval_evidence(c))]
    for c in comparisons:
        if c.head.pairwise is None or not c.head.pairwise.withholds:
            continue
        state = "inconclusive" if c.head.inconclusive_reason else "incomplete"
        which = "cannot decide" if c.head.inconclusive_reason else "gave no verdict"
        if blocks:
            said.append(
                (c.added, f"{c.name} blocked by its pairwise judge, which {which} ({state})")
            )
        else:
            said.append((c.added, f"{c.name} {state}: its pairwise judge {which}"))
    return [text for _, text in sorted(said, key=lambda added_said: added_said[0])]


def _regression_rules(comparisons: list[EvalComparison], decision: GateDecision) -> str:
    """The Evals that meet their threshold and fail on a regression: the rule that decided."""
    return ", ".join(
        f"{c.name}: {regression_rule(c, decision.regressions)}"
        for c in comparisons
        if c.head.passed and c.name in decision.failing_evals
    )


def summarize(
    comparisons: list[EvalComparison],
    decision: GateDecision,
    fixtures: Iterable[FixtureResult] = (),
) -> RunSummary:
    counts = count(comparisons)
    return RunSummary(
        headline=headline(comparisons, decision, counts),
        counts=counts,
        blocked_by=blocked_by(comparisons, decision),
        run_time_summed_s=round(sum(f.duration_ms for f in fixtures) / 1000, 3),
    )


def severities(results: Iterable[EvalResult]) -> Mapping[str, EvalResult]:
    """Each Eval's head result (else its base's): where its severity weights are read."""
    by_name: dict[str, EvalResult] = {}
    for result in results:
        if result.side == "head" or result.eval not in by_name:
            by_name[result.eval] = result
    return by_name
