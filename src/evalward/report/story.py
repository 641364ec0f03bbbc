"""Why a pull request is blocked, fixture by fixture, worst first and evidence first: what the
comment's card and report.html's card both show.

Each blocking fixture (`record.summary.FixtureFacts.failing`, and with adaptive reps each
fixture that drove a pooled test that blocks, `pooled_driver`) becomes one `Reason`: first the
evidence — the first step where head departs from base ("step 2: base `open_ticket` → head
`issue_refund`", `divergence`), or the judge's cited violation (its step and quote) — then the
assertion that failed, then the statistics (reps, or the score's change). They are ordered by
severity weight, then score drop, then name (`record.summary.worst_first_key`), and read their
traces only for the ones shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from evalward.record.schema import RunInfo
from evalward.record.summary import (
    FixtureFacts,
    RunSummary,
    WorstFirst,
    facts_of,
    score_drop,
    weight_of,
    worst_first_key,
)
from evalward.report.divergence import (
    ArgumentDiff,
    DivergenceKind,
    differing_arguments,
    first_divergence,
    first_divergent_turn,
)
from evalward.report.reps import reps_text
from evalward.resources.common import Severity
from evalward.rundata.results import RUN_FAILED, FixtureOutcome, FixtureResult, JudgeVerdict, Status
from evalward.rundata.sequential_record import FIXTURE_TEST, POOLED_TEST, FixtureVerdictRecord
from evalward.rundata.spool import TraceSource
from evalward.rundata.trace import Step, StepType, Trace
from evalward.text.cuts import cap_chars
from evalward.text.numbers import delta_text, seconds_text
from evalward.verdict.compare import EvalComparison, FixtureComparison

Piece = tuple[str, bool]
"""A piece of a sentence: its text, and whether it is code (a tool's name)."""
ARGUMENTS_NAMED = 3
"""How many of a tool call's differing arguments the evidence names (report.html lists more,
with their values)."""
QUOTE_LIMIT = 120


@dataclass(frozen=True)
class Reason:
    """One blocking fixture, as one line: evidence, assertion, statistics."""

    eval: str
    fixture: str
    private: bool
    severity: Severity
    regressed: bool
    facts: FixtureFacts
    evidence: tuple[Piece, ...] = ()
    evidence_step: int | None = None
    """The head step the evidence points at (report.html links to it)."""
    assertion: str = ""
    statistics: str = ""
    head_tools: tuple[str, ...] | None = None
    """The tools the shown head run called, in order (None: its trace is not at hand)."""
    base_tools: tuple[str, ...] | None = None
    divergent_turn: int | None = None
    """In a conversation, the first turn on which the shown head run parts from the base's."""

    @property
    def anchor(self) -> str:
        """report.html's address of the fixture, opened: `open=eval%2Ffixture`."""
        return urlencode({"open": f"{self.eval}/{self.fixture}"})

    @property
    def icon(self) -> str:
        if self.regressed:
            return "🔻"
        if self.facts.pooled_driver:
            return "📉"
        if self.facts.timed_out:
            return "⏱️"
        return "💥" if self.facts.errored else "❌"

    @property
    def evidence_text(self) -> str:
        return "".join(text for text, _ in self.evidence)


@dataclass(frozen=True)
class Candidate:
    """A blocking fixture before its evidence is read."""

    comparison: EvalComparison
    fixture: FixtureComparison
    outcome: FixtureOutcome | None
    base_outcome: FixtureOutcome | None
    """Its outcome over reps on base, where it ran there."""
    facts: FixtureFacts
    key: WorstFirst


def head_fixtures(
    comparison: EvalComparison,
) -> Iterator[tuple[FixtureComparison, FixtureOutcome | None, FixtureFacts]]:
    """Each fixture of the Eval that ran on head, with its outcome over reps and its facts."""
    return (each for each in facts_of(comparison) if each[0].head)


def blocking(comparisons: list[EvalComparison]) -> list[Candidate]:
    """Every blocking fixture of every Eval, worst first."""
    found = []
    for comparison in comparisons:
        base = {o.name: o for o in comparison.base.fixture_results} if comparison.base else {}
        for fixture, outcome, facts in head_fixtures(comparison):
            if not (facts.failing or facts.pooled_driver):
                continue
            before = base.get(fixture.fixture)
            drop = score_drop(before, outcome)
            weight = weight_of(comparison.head, fixture.head[0].severity)
            key = worst_first_key(weight, drop, comparison.name, fixture.fixture)
            found.append(Candidate(comparison, fixture, outcome, before, facts, key))
    # the base branch's own Evals first: an Eval the pull request adds weighs its fixtures as
    # it chooses (`EvalComparison.added`)
    found.sort(key=lambda c: (c.comparison.added, c.facts.pooled_driver, *c.key))
    return found


class Blocking:
    """A run's blocking fixtures worst first (`blocking`), each one's `Reason` read when it is
    first asked for, then kept: every rendering of one comment (the file's and the terminal's,
    the comment's and the job summary's) lists the same reasons, each within its own budget,
    and reads their traces once."""

    def __init__(
        self,
        comparisons: list[EvalComparison],
        private: set[tuple[str, str]],
        trace_of: TraceSource | None,
    ) -> None:
        self.candidates = blocking(comparisons)
        self._private, self._trace_of = private, trace_of
        self._read: list[Reason] = []

    def reasons(self) -> Iterator[Reason]:
        """Each candidate's reason, in order, read only as far as it is asked for."""
        for index, candidate in enumerate(self.candidates):
            if index == len(self._read):
                self._read.append(reason_of(candidate, self._private, self._trace_of))
            yield self._read[index]


def reason_of(
    candidate: Candidate, private: set[tuple[str, str]], trace_of: TraceSource | None
) -> Reason:
    comparison, fixture, outcome = candidate.comparison, candidate.fixture, candidate.outcome
    head = shown_run(fixture.head, outcome)
    sequential = comparison.head.sequential
    call = sequential.of(fixture.fixture) if sequential is not None else None
    statistics = (
        _sequential_statistics(call, candidate.facts)
        if call is not None
        else _statistics(
            outcome, candidate.base_outcome, comparison.head.min_rep_pass_rate, head, fixture.base
        )
    )
    reason = Reason(
        eval=comparison.name,
        fixture=fixture.fixture,
        private=(comparison.name, fixture.fixture) in private,
        severity=head.severity,
        regressed=candidate.facts.regressed,
        facts=candidate.facts,
        statistics=statistics,
    )
    if reason.private:
        return reason
    base = next(
        (r for r in fixture.base if r.rep == head.rep), fixture.base[0] if fixture.base else None
    )
    head_trace = _trace(head, trace_of)
    base_trace = _trace(base, trace_of) if base is not None else None
    evidence, step = _evidence(head, head_trace, base_trace)
    return replace(
        reason,
        evidence=evidence,
        evidence_step=step,
        assertion=_assertion(head),
        head_tools=_tools(head_trace),
        base_tools=_tools(base_trace),
        divergent_turn=(
            first_divergent_turn(base_trace, head_trace)
            if base_trace is not None and head_trace is not None
            else None
        ),
    )


def shown_run(runs: list[FixtureResult], outcome: FixtureOutcome | None) -> FixtureResult:
    """The rep a fixture is shown by: the outcome's (the first that did not pass)."""
    if outcome is not None:
        for run in runs:
            if run.rep == outcome.shown_rep:
                return run
    return next((r for r in runs if not r.passed), runs[0])


def _statistics(
    head: FixtureOutcome | None,
    base: FixtureOutcome | None,
    rule: float,
    run: FixtureResult,
    base_runs: list[FixtureResult],
) -> str:
    """The outcome over reps; with one rep, the score's change from base."""
    if head is not None and head.reps > 1:
        return reps_text(head, rule)
    after = head.score if head is not None else run.score
    before = base.score if base is not None else None
    if before is None and base_runs:
        before = sum(r.score for r in base_runs) / len(base_runs)
    if before is not None:
        return f"score {before:.2f} → {after:.2f} ({delta_text(after - before)})"
    return f"score {after:.2f}"


def _sequential_statistics(call: FixtureVerdictRecord, facts: FixtureFacts) -> str:
    """With adaptive reps: its verdict and the numbers of the test that decided it."""
    if facts.pooled_driver:  # its own bound decides nothing here: the pooled test's does
        return (
            f"{call.verdict}: head {call.head_passes}/{call.head_runs} · base {call.base_text} · "
            f"its failed reps drove the {POOLED_TEST}"
        )
    return f"{call.verdict}: {call.numbers} ({FIXTURE_TEST})"


def _assertion(run: FixtureResult) -> str:
    """The first gating assertion that did not pass, "type: message"; else the run's message
    (a run that timed out or failed: why, its assertions were not evaluated)."""
    if run.timed_out or run.message.startswith(RUN_FAILED):
        return run.message  # why no assertion was evaluated: the provider's words, if it said
    for assertion in run.assertions:
        if assertion.status is not Status.passed and not assertion.advisory:
            detail = assertion.message or assertion.status.value
            return f"{assertion.type}: {detail}"
    return run.message


def _tools(trace: Trace | None) -> tuple[str, ...] | None:
    if trace is None or not trace.steps:
        return None
    return tuple(s.tool or "?" for s in trace.steps if s.type is StepType.tool_call)


def _evidence(
    head: FixtureResult, head_trace: Trace | None, base_trace: Trace | None
) -> tuple[tuple[Piece, ...], int | None]:
    """The first divergent step when head takes another step than base; else the judge's
    first supported violation; else a step whose text differs; else nothing."""
    found = None
    if head_trace is not None and base_trace is not None:
        found = first_divergence(base_trace, head_trace)
    if found is not None and found.kind is DivergenceKind.steps:
        assert head_trace is not None and base_trace is not None
        before = _step_at(base_trace, found.step)
        after = _step_at(head_trace, found.step)
        return _divergence(found.step, before, after), found.step
    violation = _violation(head)
    if violation is not None:
        return violation
    if found is not None and head_trace is not None:
        differs = (f"step {found.step}: ", False), *_what(_step_at(head_trace, found.step))
        return (*differs, (" differs from base's", False)), found.step
    return (), None


def _trace(run: FixtureResult, trace_of: TraceSource | None) -> Trace | None:
    if run.trace is not None:
        return run.trace
    if trace_of is None:
        return None
    try:
        return trace_of(run)
    except (OSError, ValueError, KeyError):
        return None


def _step_at(trace: Trace, number: int) -> Step | None:
    return trace.steps[number - 1] if 0 < number <= len(trace.steps) else None


def _what(step: Step | None) -> tuple[Piece, ...]:
    if step is None:
        return (("nothing (its run ended)", False),)
    if step.type is StepType.tool_call and step.tool:
        return ((step.tool, True),)
    if step.type is StepType.tool_result and step.tool:
        return (("the result of ", False), (step.tool, True))
    words = {
        StepType.final: "the final answer",
        StepType.assistant: "a message",
        StepType.error: "an error",
        StepType.input: "the input",
    }
    return ((words.get(step.type, step.type.value), False),)


def _divergence(number: int, before: Step | None, after: Step | None) -> tuple[Piece, ...]:
    if (
        before is not None
        and after is not None
        and before.type is after.type is StepType.tool_call
        and before.tool == after.tool
        and after.tool
    ):
        named = _arguments_named(differing_arguments(before, after))
        return (
            (f"step {number}: ", False),
            (after.tool, True),
            (" with other arguments", False),
            *named,
        )
    return (
        (f"step {number}: base ", False),
        *_what(before),
        (" → head ", False),
        *_what(after),
    )


def _arguments_named(differ: ArgumentDiff | None) -> tuple[Piece, ...]:
    """ ": `order_id`, `options.expand` and 2 more": the first few arguments that differ, each
    as code (agent output, made inert and short where it is shown)."""
    if differ is None or not all(differ.paths):
        return ()  # the arguments as a whole: "with other arguments" says it
    names = [".".join(path) for path in differ.paths]
    pieces: list[Piece] = [(": ", False)]
    for position, name in enumerate(names[:ARGUMENTS_NAMED]):
        pieces += [(", ", False)] if position else []
        pieces.append((name, True))
    more = len(names) - ARGUMENTS_NAMED + differ.more
    if more > 0:
        pieces.append((f" and {more} more", False))
    return tuple(pieces)


def _violation(run: FixtureResult) -> tuple[tuple[Piece, ...], int | None] | None:
    verdicts: list[JudgeVerdict] = [
        a.judge for a in run.assertions if a.judge is not None and not a.advisory
    ]
    violations = [v for verdict in verdicts for v in verdict.violations]
    if not violations:
        return None
    chosen = next((v for v in violations if v.supported), violations[0])
    where = f"step {chosen.evidence_step}" if chosen.evidence_step is not None else "no step"
    text = f"judge: {where} · {chosen.severity} · {chosen.rule}"
    if chosen.quote:
        quote = cap_chars(chosen.quote, QUOTE_LIMIT)
        text += f" — “{quote}”"
    if not chosen.supported:
        text += " (unsupported by the trace)"
    return ((text, False),), chosen.evidence_step if chosen.supported else None


def counts_phrases(summary: RunSummary) -> list[str]:
    """What the counts line says, as every surface says it: first what blocks an Eval beside
    its fixtures' own results (a pooled test, a pairwise judge), so that fixtures that all
    pass on their own never read as a pass; then, of the fixtures that gate, how many pass,
    fail and (when any) are not settled, which add up to them; zero counts but the first
    three are left out."""
    c = summary.counts
    crit = c.critical_regressions
    own = " on their own" if summary.blocked_by else ""
    gating = (
        f"{c.passing}/{c.fixtures} fixtures pass on head{own}"
        if c.fixtures or not c.advisory
        else "no fixture gates"
    )
    phrases = [
        *summary.blocked_by,
        gating,
        f"{c.regressions} regression{'s' if c.regressions != 1 else ''}"
        + (f" ({crit} critical)" if crit else ""),
        f"{c.failing} failing",
    ]
    if c.not_settled:
        phrases.append(f"{c.not_settled} not settled")
    optional = [
        (c.fixed, "fixed"),
        (c.new, "new" + (f" ({c.pending} gating once merged)" if c.pending else "")),
        (c.errors_on_head, "errors on head" if c.errors_on_head != 1 else "error on head"),
        (c.unavailable, "unavailable"),
        (c.timed_out, "timed out"),
        (c.flaky, "flaky"),
        (c.advisory, "advisory (not gating)"),
        (c.judges_disagree, "where judges disagree"),
        (c.removed, "removed"),
    ]
    phrases += [f"{n} {what}" for n, what in optional if n]
    return phrases


def figures_text(summary: RunSummary, run: RunInfo) -> str:
    """ "wall time 13.6 s (runs summed 88.3 s) · 21 model calls, 35,255 tokens incl. judge,
    $0.0291", then attribution's apart where it ran ("· attribution: 8 model calls, …"); the
    parts not measured are left out."""
    summed = f"runs summed {seconds_text(summary.run_time_summed_s)}"
    wall = run.wall_time_s
    parts = [summed if wall is None else f"wall time {seconds_text(wall)} ({summed})"]
    if run.spent is not None:
        parts.append(run.spent.text())
    if run.attribution_spent is not None:
        parts.append(f"attribution: {run.attribution_spent.text()}")
    return " · ".join(parts)
