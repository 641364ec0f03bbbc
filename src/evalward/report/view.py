"""What the comment shows of a run, computed once for the template: lists of fixtures by what
happened to them, each fixture's outcome over its reps, the names of the failing ones within a
budget of characters, token and cost totals. Held-out fixtures carry no text.

A fixture's verdict is the Eval's `minRepPassRate` rule over its reps, never one rep's: a
fixture that passed 4 of 8 reps is shown as such ("4/8 reps pass (rule ≥ 60 %), …"), with the
rep whose detail is shown named, and flagged flaky when its reps disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from evalward.compare import Change, EvalComparison, FixtureComparison
from evalward.gate import did_not_run
from evalward.report.figures import reps_text
from evalward.results import CrossCheck, FixtureOutcome, FixtureResult, JudgeVerdict, Status

UNAVAILABLE = "unavailable"
"""The one word for an outage, in every list and table: not a verdict on the agent."""
FAILING_NAMES_BUDGET = 6_000
"""Characters (as escaped for the comment) of failing fixture names listed before anything
else: a suite of any size names its failures, and the list never crowds out the rest."""


@dataclass(frozen=True)
class Item:
    eval: str
    fixture: str
    private: bool
    message: str = ""
    status: str = ""
    reps: str = ""
    """The outcome over reps ("4/8 reps pass (rule ≥ 60 %), 95 % CI 22–78 %"); "" for one rep."""
    flaky: bool = False


@dataclass(frozen=True)
class JudgeItem:
    eval: str
    fixture: str
    verdict: JudgeVerdict


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
    eval: str
    fixture: str
    private: bool
    result: FixtureResult
    """The rep shown: the first that did not pass, else the first."""
    outcome: FixtureOutcome | None = None
    reps: str = ""
    flaky: bool = False

    unavailable: bool = False
    """Every rep that did not pass failed only because a model provider was down."""

    @property
    def status(self) -> str:
        """The fixture's result over its reps (the rule's), or the one run's status."""
        if self.unavailable and not self.passed:
            return UNAVAILABLE
        if self.outcome is not None:
            return "advisory" if self.outcome.advisory else self.outcome.result.value
        return self.result.status.value

    @property
    def passed(self) -> bool:
        return self.outcome.passed if self.outcome is not None else self.result.passed

    @property
    def icon(self) -> str:
        if self.passed:
            return "✅"
        if self.outcome is not None and self.outcome.advisory:
            return "⚪"
        if self.unavailable:
            return "⚠️"
        return "⏱️" if self.result.timed_out else "❌"


@dataclass(frozen=True)
class FailingGroup:
    """One Eval's failing gating fixtures, by name: as many as the budget lets through."""

    eval: str
    total: int
    names: list[tuple[str, bool]]
    """(fixture, regressed) pairs, regressions first."""

    @property
    def more(self) -> int:
        return self.total - len(self.names)


@dataclass
class CommentView:
    """What the template shows, computed once; held-out fixtures carry no text."""

    failing: int = 0
    fixtures_total: int = 0
    fixtures_passing: int = 0
    regressions: list[Item] = field(default_factory=list)
    fixed: list[Item] = field(default_factory=list)
    new: list[Item] = field(default_factory=list)
    pending: list[Item] = field(default_factory=list)
    """Fixtures the pull request adds to a base Eval: they ran, and gate once merged."""
    did_not_run: list[str] = field(default_factory=list)
    judges: list[JudgeItem] = field(default_factory=list)
    errors: list[Item] = field(default_factory=list)
    unavailable: list[Item] = field(default_factory=list)
    """Head fixtures whose runs that did not pass failed only because a model provider (the
    agent's or the judge's) was down: no verdict, listed apart from the errors."""
    unavailable_why: list[str] = field(default_factory=list)
    """Per Eval with no verdict for an outage, why: its runs, or its judge's calibration."""
    incomplete: list[str] = field(default_factory=list)
    """Per Eval whose judge could not be calibrated (not an outage): its name and why."""
    timed_out: list[Item] = field(default_factory=list)
    """Head fixtures with a run that reached no terminal event before its timeout (Skip)."""
    disagreements: list[Disagreement] = field(default_factory=list)
    details: list[Detail] = field(default_factory=list)
    flaky: list[Item] = field(default_factory=list)
    """Gating head fixtures whose reps disagree (some passed, some did not)."""
    advisory: list[Item] = field(default_factory=list)
    """Head fixtures in which nothing gates (every assertion advisory): shown, not counted."""
    failing_names: list[FailingGroup] = field(default_factory=list)
    """Per Eval, its failing and regressed fixtures by name, within `FAILING_NAMES_BUDGET`."""
    failing_evals_more: int = 0
    """Evals with failing fixtures past the budget: counted, not named."""
    input_tokens: int = 0
    output_tokens: int = 0
    duration: str = "0 s"
    cost: str = "not recorded"


def build_view(
    comparisons: list[EvalComparison],
    not_run: dict[str, str],
    private: set[tuple[str, str]],
    escape: Callable[[str], str] = str,
) -> CommentView:
    """`escape` is how a name is written in the comment: the names' budget counts that."""
    view = CommentView(
        failing=sum(1 for c in comparisons if _fails(c)) + len(not_run),
        did_not_run=did_not_run(not_run),
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
    duration_ms = 0.0
    cost_usd = 0.0
    unpriced = 0
    failing: list[tuple[str, list[tuple[str, bool]]]] = []
    for comparison in comparisons:
        outcomes = {o.name: o for o in comparison.head.fixture_results}
        rule = comparison.head.min_rep_pass_rate
        names: list[tuple[str, bool]] = []
        for fixture in comparison.fixtures:
            private_one = (comparison.name, fixture.fixture) in private
            for run in fixture.head + fixture.base:
                view.input_tokens += run.usage.input_tokens
                view.output_tokens += run.usage.output_tokens
                duration_ms += run.duration_ms
                if run.usage.cost_usd is not None:
                    cost_usd += run.usage.cost_usd
                else:
                    unpriced += 1
            if not fixture.head:
                continue
            outcome = outcomes.get(fixture.fixture)
            _add_fixture(view, comparison, fixture, outcome, rule, private_one)
            # an outage is listed as unavailable, never as failing
            verdict = not (_verdictless(comparison) or _unavailable(fixture.head))
            if fixture.gates and verdict and _failing(fixture, outcome):
                names.append((fixture.fixture, fixture.change is Change.regression))
        if names:
            names.sort(key=lambda n: not n[1])  # regressions first, each group by name
            failing.append((comparison.name, names))
    view.failing_names, view.failing_evals_more = _within_budget(failing, escape)
    view.details.sort(key=lambda d: d.passed)
    view.duration = f"{duration_ms / 1000:.1f} s"
    if unpriced == 0 or cost_usd > 0:
        view.cost = f"${cost_usd:.4f}" + (f" (+{unpriced} unpriced runs)" if unpriced else "")
    return view


def _add_fixture(
    view: CommentView,
    comparison: EvalComparison,
    fixture: FixtureComparison,
    outcome: FixtureOutcome | None,
    rule: float,
    private: bool,
) -> None:
    name = comparison.name
    first = fixture.head[0]
    shown = _shown_run(fixture.head, outcome)
    reps = reps_text(outcome, rule) if outcome is not None else ""
    flaky = outcome is not None and outcome.flaky
    message = "" if private else shown.message
    if reps and message:
        message = f"rep {shown.rep}: {message}"
    status = first.status.value if outcome is None else outcome.result.value
    if outcome is not None and outcome.advisory:
        status = "advisory"
    item = Item(name, fixture.fixture, private, message, status, reps, flaky)
    if not fixture.gates:
        view.pending.append(item)
        return
    if fixture.change is Change.advisory:
        view.advisory.append(item)
    else:
        view.fixtures_total += 1
        view.fixtures_passing += fixture.head_passed
    if flaky:
        view.flaky.append(item)
    if fixture.change is Change.regression:
        view.regressions.append(item)
    elif fixture.change is Change.fixed:
        view.fixed.append(item)
    elif fixture.change is Change.new and comparison.base is not None:
        view.new.append(item)
    unavailable = _unavailable(fixture.head)
    if unavailable:
        view.unavailable.append(Item(name, fixture.fixture, private, message, UNAVAILABLE, reps))
    elif any(r.status is Status.error for r in fixture.head):
        view.errors.append(item)
    timed_out = next((r for r in fixture.head if r.timed_out), None)
    if timed_out is not None:
        text = "" if private else timed_out.message
        view.timed_out.append(Item(name, fixture.fixture, private, text, "skipped", reps, flaky))
    view.disagreements += _disagreements(name, fixture.fixture, private, fixture.head)
    view.details.append(
        Detail(name, fixture.fixture, private, shown, outcome, reps, flaky, unavailable)
    )
    if private:
        return
    for assertion in shown.assertions:
        verdict = assertion.judge
        if verdict is not None and (verdict.violations or verdict.advisory):
            view.judges.append(JudgeItem(name, fixture.fixture, verdict))


def _shown_run(runs: list[FixtureResult], outcome: FixtureOutcome | None) -> FixtureResult:
    """The rep the outcome's message and output come from, else the first that did not pass."""
    if outcome is not None:
        for run in runs:
            if run.rep == outcome.shown_rep:
                return run
    return next((r for r in runs if not r.passed), runs[0])


def _fails(comparison: EvalComparison) -> bool:
    """Whether an Eval fails on the head: not when it passes, nothing in it gates, or it has
    no verdict."""
    head = comparison.head
    return not (head.passed or head.advisory or _verdictless(comparison))


def _verdictless(comparison: EvalComparison) -> bool:
    """An Eval with no verdict: its provider was down, or its judge could not be calibrated.
    Its fixtures are not "failing", whatever their runs' status."""
    return comparison.head.provider_unavailable or bool(comparison.head.incomplete_reason)


def _unavailable(runs: list[FixtureResult]) -> bool:
    """Every run that did not pass failed only because a model provider was down."""
    failed = [r for r in runs if not r.passed and r.counted]
    return bool(failed) and all(r.provider_unavailable for r in failed)


def _failing(fixture: FixtureComparison, outcome: FixtureOutcome | None) -> bool:
    """Regressed, or failing on head by the rule: fail, error, or timed out (a Skip row).
    A fixture with nothing evaluated, or only advisory checks, is not failing."""
    if fixture.change is Change.regression:
        return True
    if fixture.change is Change.advisory:
        return False
    if outcome is None:
        return not fixture.head_passed and any(r.counted for r in fixture.head)
    if outcome.result in (Status.failed, Status.error):
        return True
    return outcome.result is Status.skipped and outcome.timed_out > 0


def _within_budget(
    failing: list[tuple[str, list[tuple[str, bool]]]], escape: Callable[[str], str]
) -> tuple[list[FailingGroup], int]:
    """Each Eval's line and count first (up to half the budget; Evals past it are only
    counted), then names in order, each Eval getting an equal share of what is left and
    passing on what it does not use."""
    lines = 0
    kept = 0
    for eval_name, _ in failing:
        cost = len(escape(eval_name)) + 40  # the line's own words and count
        if lines + cost > FAILING_NAMES_BUDGET // 2:
            break
        lines += cost
        kept += 1
    left = FAILING_NAMES_BUDGET - lines
    groups: list[FailingGroup] = []
    for index, (eval_name, names) in enumerate(failing[:kept]):
        share = left // (kept - index)
        used = 0
        shown: list[tuple[str, bool]] = []
        for name, regressed in names:
            cost = len(escape(name)) + (5 if regressed else 2)
            if used + cost > share:
                break
            used += cost
            shown.append((name, regressed))
        left -= used
        groups.append(FailingGroup(eval_name, len(names), shown))
    return groups, len(failing) - kept


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
