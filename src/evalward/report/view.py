"""What the comment shows of a run, computed once for the template: the blocking fixtures worst
first with their reasons (`story`), within a budget of characters that nothing else can crowd
out; the other lists (fixed, new, unavailable, …), each capped; the counts, the wall time and
what the model calls spent, from the run's one summary (`record.summary`). Held-out fixtures
carry no text.

A fixture's verdict is the Eval's `minRepPassRate` rule over its reps, never one rep's: a
fixture that passed 4 of 8 reps is shown as such ("4/8 reps pass (rule ≥ 60 %), …"), with the
rep whose detail is shown named, and flagged flaky when its reps disagree. With adaptive reps
it is its sequential test's verdict ("noise: 3/4 reps pass, …"), and no rule is named: none
is read. A line about a rule is shown only where the rule decides: the pooled McNemar test
only for an Eval that `failOnRegression: significant` decides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from evalward.record.schema import RunInfo
from evalward.record.summary import (
    Counts,
    FixtureFacts,
    RunSummary,
    count,
    verdictless,
)
from evalward.report.reps import rep_rule, reps_text
from evalward.report.story import (
    Blocking,
    Reason,
    counts_phrases,
    figures_text,
    head_fixtures,
    shown_run,
)
from evalward.resources.gate_policy import RegressionPolicy
from evalward.rundata.results import CrossCheck, FixtureOutcome, FixtureResult, JudgeVerdict
from evalward.text.ordering import natural_key
from evalward.verdict.blocked import policy_of
from evalward.verdict.compare import Change, EvalComparison
from evalward.verdict.gate import GateDecision, did_not_run
from evalward.verdict.stats import McNemar

UNAVAILABLE = "unavailable"
"""The one word for an outage, in every list and table: not a verdict on the agent."""
REASONS_BUDGET = 24_000
"""Characters (as escaped for the comment) of blocking fixtures' lines, reasons included:
they come right after the verdict, so nothing later can cut them, and a suite of any size
still leaves room for the rest."""
LIST_CAP = 25
"""Items in each other list (fixed, new, unavailable, …) before "and N more in report.html"."""
EVALS_CAP = 40
"""Rows of the Evals' table, failing ones first."""


@dataclass(frozen=True)
class Item:
    eval: str
    fixture: str
    private: bool
    message: str = ""
    status: str = ""
    reps: str = ""
    """The outcome over reps ("4/8 reps pass (rule ≥ 60 %), 95 % CI 22–78 %"; with adaptive
    reps no rule, and the sequential test's numbers); "" for one rep."""
    flaky: bool = False
    pending: bool = False
    """Added by the pull request to an Eval of the base branch: gates once merged."""


@dataclass(frozen=True)
class Disagreement:
    """A cross-check judge that scored a head run further from the primary than the margin."""

    eval: str
    fixture: str
    private: bool
    primary: JudgeVerdict | None
    check: CrossCheck


@dataclass(frozen=True)
class Detail:
    """The folded detail of one blocking fixture: its assertions, judge and output."""

    reason: Reason
    result: FixtureResult
    """The rep shown: the first that did not pass, else the first."""
    outcome: FixtureOutcome | None = None
    reps: str = ""

    @property
    def eval(self) -> str:
        return self.reason.eval

    @property
    def fixture(self) -> str:
        return self.reason.fixture

    @property
    def private(self) -> bool:
        return self.reason.private

    @property
    def status(self) -> str:
        """The fixture's result over its reps (the rule's, or with adaptive reps its
        sequential test's verdict), or the one run's status."""
        if self.outcome is None:
            return self.result.status.value
        return self.outcome.verdict or self.outcome.result.value


@dataclass
class CommentView:
    """What the template shows, computed once; held-out fixtures carry no text."""

    summary: RunSummary
    run: RunInfo
    why: list[str] = field(default_factory=list)
    """What blocks, Eval by Eval (`GateDecision.why`, the base branch's own Evals first), as
    many as a third of the reasons' budget holds: one line per failing Eval, and a pull
    request may add hundreds of its own."""
    why_more: int = 0
    """Those lines past it: counted (results.json's `reason` holds them all)."""
    reasons: list[Reason] = field(default_factory=list)
    """Blocking fixtures worst first, as many as `REASONS_BUDGET` holds with `why`."""
    reasons_more: int = 0
    """Blocking fixtures past the budget: counted, in report.html."""
    details: list[Detail] = field(default_factory=list)
    """The listed blocking fixtures' detail, in the same order."""
    regressions: list[Item] = field(default_factory=list)
    fixed: list[Item] = field(default_factory=list)
    new: list[Item] = field(default_factory=list)
    """Fixtures not run on base; `pending` ones gate once merged."""
    unavailable: list[Item] = field(default_factory=list)
    """Head fixtures whose runs that did not pass failed only because a model provider (the
    agent's or the judge's) was down: no verdict, listed apart from the errors."""
    not_blocking: list[Item] = field(default_factory=list)
    """Errors on head and timeouts that do not block (a rep of a passing fixture, a fixture
    that gates once merged, an Eval with no verdict)."""
    flaky: list[Item] = field(default_factory=list)
    """Fixtures whose head reps disagree, not already listed as failing."""
    disagreements: list[Disagreement] = field(default_factory=list)
    """Judges that disagree on fixtures not already listed as failing."""
    unavailable_why: list[str] = field(default_factory=list)
    """Per Eval with no verdict for an outage, why: its runs, or its judge's calibration."""
    incomplete: list[str] = field(default_factory=list)
    """Per Eval whose judge could not be calibrated (not an outage): its name and why."""
    did_not_run: list[str] = field(default_factory=list)
    not_settled: list[Item] = field(default_factory=list)
    """Adaptive reps: fixtures whose test did not settle (likely regression, unreliable
    baseline, not settled, not enough data): shown, never blocking."""
    mcnemar: list[tuple[EvalComparison, McNemar]] = field(default_factory=list)
    """Fixed-rep Evals that `failOnRegression: significant` decides, with a regression: the
    McNemar test pooled over the Eval, shown beside the per-fixture tests that decide."""
    evals: list[EvalComparison] = field(default_factory=list)
    """The Evals' table rows, failing first, at most `EVALS_CAP`."""
    eval_counts: dict[str, Counts] = field(default_factory=dict)
    """Each Eval's own counts, as the counts line counts them (its row's fixtures)."""
    evals_more: int = 0
    cap: int = LIST_CAP

    @property
    def counts(self) -> list[str]:
        """The counts line's phrases (`counts_phrases`)."""
        return counts_phrases(self.summary)

    @property
    def figures(self) -> str:
        """Wall time, the runs' summed time, what the model calls spent (`figures_text`)."""
        return figures_text(self.summary, self.run)


@dataclass(frozen=True)
class LineBudget:
    """How the reasons' lines are measured: `escape` is how text is written in the comment,
    `link` how long each line's link is, and `total` the characters all of them may take
    (counting both)."""

    escape: Callable[..., str]
    link: int
    total: int


class ViewSource(Protocol):
    """What a comment is built from (`markdown.ReportContext` is one)."""

    comparisons: list[EvalComparison]
    not_run: dict[str, str]
    private: set[tuple[str, str]]
    run: RunInfo
    decision: GateDecision

    @property
    def numbers(self) -> RunSummary: ...

    @property
    def blocking(self) -> Blocking:
        """The blocking fixtures and their reasons, shared by every rendering."""
        ...


def build_view(source: ViewSource, lines: LineBudget) -> CommentView:
    """What the comment shows, worst first; the reasons' lines stop where `lines` runs out."""
    comparisons, private = source.comparisons, source.private
    view = CommentView(
        summary=source.numbers, run=source.run, did_not_run=did_not_run(source.not_run)
    )
    for c in comparisons:
        if c.head.provider_unavailable and not c.head.passed:
            view.unavailable_why.append(
                f"{c.name}: {c.head.incomplete_reason}"
                if c.head.incomplete_reason
                else f"every run of {c.name} failed to reach its model provider after retries"
            )
        elif c.head.incomplete_reason:
            view.incomplete.append(f"{c.name}: {c.head.incomplete_reason}")
    used = _why_lines(view, source.decision.why, lines)
    candidates = source.blocking.candidates
    for index, reason in enumerate(source.blocking.reasons()):
        cost = _line_cost(reason, lines.escape) + lines.link
        if view.reasons and used + cost > lines.total:
            view.reasons_more = len(candidates) - index
            break
        used += cost
        view.reasons.append(reason)
        candidate = candidates[index]
        shown = shown_run(candidate.fixture.head, candidate.outcome)
        reps = reps_text(candidate.outcome, rep_rule(candidate.comparison.head))
        view.details.append(Detail(reason, shown, candidate.outcome, reps))
    listed = {(r.eval, r.fixture) for r in view.reasons}
    for comparison in comparisons:
        _add_lists(view, comparison, private, listed)
    order = {(c.comparison.name, c.fixture.fixture): i for i, c in enumerate(candidates)}
    view.regressions.sort(
        key=lambda i: (order.get((i.eval, i.fixture), len(order)), natural_key(i.fixture))
    )
    ranked = sorted(comparisons, key=_eval_rank)
    view.evals, view.evals_more = ranked[:EVALS_CAP], max(0, len(ranked) - EVALS_CAP)
    view.eval_counts = {c.name: count([c]) for c in view.evals}
    view.mcnemar = [
        (c, c.regression_test())
        for c in comparisons
        if c.head.sequential is None
        and c.base is not None
        and c.of(Change.regression)
        and max((r.rep for r in c.head.fixtures), default=0) > 0
        and policy_of(c, source.decision.regressions) is RegressionPolicy.significant
    ]
    return view


def _why_lines(view: CommentView, why: list[str], lines: LineBudget) -> int:
    """`why`'s lines into `view` while they fit a third of `lines.total` (the first always),
    the rest counted; the characters they take, which the reasons' lines share."""
    used = 0
    for index, line in enumerate(why):
        cost = len(lines.escape(line, 600)) + 3
        if view.why and used + cost > lines.total // 3:
            view.why_more = len(why) - index
            break
        used += cost
        view.why.append(line)
    return used


def _eval_rank(comparison: EvalComparison) -> tuple[int, bool, float, str]:
    """Failing Evals first, the base branch's own before those the pull request adds, the
    furthest below their threshold first; then the rest by name."""
    head = comparison.head
    failing = not (head.passed or head.advisory or verdictless(head))
    gap = head.score - head.pass_threshold
    return (
        0 if failing else 1,
        failing and comparison.added,
        gap if failing else 0.0,
        comparison.name,
    )


def _line_cost(reason: Reason, escape: Callable[[str], str]) -> int:
    return (
        len(escape(reason.eval))
        + len(escape(reason.fixture))
        + len(escape(reason.evidence_text))
        + min(len(escape(reason.assertion)), 200)
        + len(reason.statistics)
        + 60
    )


def _add_lists(
    view: CommentView,
    comparison: EvalComparison,
    private: set[tuple[str, str]],
    listed: set[tuple[str, str]],
) -> None:
    name = comparison.name
    rule = rep_rule(comparison.head)
    for fixture, outcome, facts in head_fixtures(comparison):
        private_one = (name, fixture.fixture) in private
        shown = shown_run(fixture.head, outcome)
        reps = reps_text(outcome, rule)
        message = "" if private_one else shown.message
        if reps and message:
            message = f"rep {shown.rep}: {message}"
        item = Item(
            name,
            fixture.fixture,
            private_one,
            message,
            _status(shown, outcome, facts),
            reps,
            facts.flaky,
            facts.pending,
        )
        if facts.regressed:
            view.regressions.append(item)
        if facts.fixed:
            view.fixed.append(item)
        if facts.new:
            view.new.append(item)
        if facts.not_settled and comparison.head.sequential is not None:
            view.not_settled.append(item)
        if facts.unavailable:
            view.unavailable.append(item)
        elif (facts.errored or facts.timed_out) and not facts.failing:
            view.not_blocking.append(item)
        if (name, fixture.fixture) not in listed:
            view.disagreements += _disagreements(name, fixture.fixture, private_one, fixture.head)
            if facts.flaky and not facts.new:
                view.flaky.append(item)


def _status(shown: FixtureResult, outcome: FixtureOutcome | None, facts: FixtureFacts) -> str:
    if facts.unavailable:
        return UNAVAILABLE
    if facts.advisory:
        return "advisory"
    if outcome is not None and outcome.verdict:
        return outcome.verdict  # adaptive reps: its sequential test's word
    return outcome.result.value if outcome is not None else shown.status.value


def _disagreements(
    eval_name: str, fixture: str, private: bool, runs: list[FixtureResult]
) -> list[Disagreement]:
    """Each cross-check judge that disagreed with the primary, from the first run where it did."""
    found: dict[str, Disagreement] = {}
    for run in runs:
        for assertion in run.assertions:
            for check in assertion.cross_checks:
                if check.disagrees and check.model not in found:
                    found[check.model] = Disagreement(
                        eval_name, fixture, private, assertion.judge, check
                    )
    return list(found.values())
