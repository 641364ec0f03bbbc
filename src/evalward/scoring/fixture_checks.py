"""Each assertion of one run, checked: the reading of the run it needs (its turn, its
transform), then its kind's check — a judge, a code scorer, embeddings, a state criterion, a
deterministic check, or a group (`assertSet`) of them.

A group is promptfoo's and AgentV's `assert-set` (docs/assertions.md, "Groups": a member in
error makes it an error, errors failing closed). A member whose judge cannot decide is left
out, but the group carries why (`cannot_decide`): its Eval is inconclusive unless other
evidence fails it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from evalward.errors import TransformError
from evalward.providers.base import RunLabels
from evalward.resources.checks.assertions import (
    Assertion,
    AssertSetAssertion,
    JudgeAssertion,
    SimilarAssertion,
    tool_fields,
)
from evalward.resources.checks.code_scorer import CodeAssertion
from evalward.resources.checks.state_assertions import STATE_TYPES
from evalward.resources.models import EvalFixtureSpec
from evalward.rundata.playground_state import PlaygroundRun
from evalward.rundata.results import Status
from evalward.rundata.trace import Trace
from evalward.scoring.assertions import check, output_text, reports_only
from evalward.scoring.code.code_scorer import CodeScorers, scorer_case
from evalward.scoring.code.transform import Transformed, transform_output
from evalward.scoring.judges.judge import JudgeCase
from evalward.scoring.judges.panel import EvalJudge, JudgeOutcome
from evalward.scoring.reps import at_least
from evalward.scoring.similarity import check_similar
from evalward.scoring.state import check_state
from evalward.scoring.turns import judged_input, turn_not_reached, turn_trace

TIMED_OUT = "the run reached no terminal event before its timeout"
READS_OUTPUT = {
    "contains",
    "notContains",
    "equals",
    "regex",
    "jsonSchema",
    "judge",
    "code",
    "similar",
}
"""The checks that read the final message: what a fixture's transform feeds (a tool call's,
a budget's or a state criterion's check reads none of it)."""


@dataclass
class FixtureChecks:
    """What checking one run's assertions needs: the run as read (after the fixture's
    transform), the judge, the code scorers, the playground and the regex budget."""

    spec: EvalFixtureSpec
    read: Transformed
    judge: EvalJudge
    labels: RunLabels
    regex_timeout: float
    playground: PlaygroundRun | None = None
    scorers: CodeScorers | None = None
    failed_transform: str | None = None
    """Why the fixture's transform gave nothing: every check of the output is then an error."""
    removed_tools: Mapping[str, str] = field(default_factory=dict)
    """A head run of a fixture the base gates with: each tool the base side's agent has and
    the pull request removed or renamed, by its name in the fixture, and why a check that
    passes without a call of it fails (plan/preflight/tool_refs.py, `removed_tools`; a
    bring-your-own agent's, by what its runs offered their model: `unoffered_tools`)."""

    async def outcome(self, assertion: Assertion) -> JudgeOutcome:
        """One assertion's status, score and message."""
        trace = self.read.trace
        unread = _unreadable(trace)
        if unread is not None:
            return unread
        removed = self._removed(assertion)
        if removed is not None:
            return JudgeOutcome(Status.failed, 0.0, removed)
        if isinstance(assertion, STATE_TYPES):
            status, message = check_state(assertion, self.playground)
            return JudgeOutcome(status, 1.0 if status is Status.passed else 0.0, message)
        if self.failed_transform is not None and assertion.type in READS_OUTPUT:
            return JudgeOutcome(Status.error, 0.0, self.failed_transform)
        read = self.read
        if assertion.turn is not None:
            turned = turn_trace(trace, assertion.turn)
            if turned is None:
                return JudgeOutcome(Status.failed, 0.0, turn_not_reached(trace, assertion.turn))
            read = Transformed(turned, turned.final_output)
        if assertion.transform is not None:
            try:
                read = await transform_output(assertion.transform, read, self.spec, self.scorers)
            except TransformError as exc:
                return JudgeOutcome(Status.error, 0.0, str(exc))
        if isinstance(assertion, AssertSetAssertion):
            # its members read what the group reads: its turn, its transform (a group on a
            # turn the conversation never reached fails, as each member there would)
            narrowed = self if read is self.read else dataclasses.replace(self, read=read)
            return await narrowed._group(assertion)
        return await self._checked(assertion, read)

    def _removed(self, assertion: Assertion) -> str | None:
        """Why the assertion fails unread: a field of it that passes without a call names a
        tool the pull request took from the agent (`removed_tools`)."""
        for _, name, wants_a_call in tool_fields(assertion):
            if not wants_a_call and name in self.removed_tools:
                return self.removed_tools[name]
        return None

    async def _checked(self, assertion: Assertion, read: Transformed) -> JudgeOutcome:
        trace = read.trace
        if isinstance(assertion, JudgeAssertion):
            spec = self.spec
            shown = JudgeCase(
                assertion.rubric, judged_input(spec), trace, spec.reference, spec.sidecar or None
            )
            return await self.judge.grade(assertion, shown, self.labels)
        if isinstance(assertion, CodeAssertion):
            if self.scorers is None:
                return JudgeOutcome(Status.error, 0.0, "code scorers are not run here")
            case = scorer_case(self.spec, trace, read.value)
            return await self.scorers.score(assertion, case)
        if isinstance(assertion, SimilarAssertion):
            text = output_text(assertion.field, trace)
            if isinstance(text, tuple):
                return JudgeOutcome(text[0], 0.0, text[1])
            return await check_similar(assertion, text, self.judge.providers, self.labels.rep)
        status, message = check(assertion, trace, regex_timeout=self.regex_timeout)
        score = 1.0 if status is Status.passed else 0.0
        return JudgeOutcome(status, score, message, advisory=reports_only(assertion))

    async def outcomes(self, assertions: list[Assertion]) -> list[JudgeOutcome]:
        """Each assertion's outcome, in order: all at once when one of them waits on
        something (a judge, a scorer, embeddings, a transform, a group that may hold one),
        else one after the other, as none of them waits (a task each cost ten times what a
        `contains` costs)."""
        if any(isinstance(a, _WAITING) or a.transform is not None for a in assertions):
            return list(await asyncio.gather(*(self.outcome(a) for a in assertions)))
        return [await self.outcome(a) for a in assertions]

    async def _group(self, group: AssertSetAssertion) -> JudgeOutcome:
        members = group.assertions
        outcomes = await self.outcomes(members)
        return group_outcome(group, list(zip(members, outcomes, strict=True)))


_WAITING = (JudgeAssertion, CodeAssertion, SimilarAssertion, AssertSetAssertion)


def group_outcome(
    group: AssertSetAssertion, results: list[tuple[Assertion, JudgeOutcome]]
) -> JudgeOutcome:
    """A group's outcome from its members' (see the module's docstring), carrying why a
    member's judge cannot decide."""
    undecided = next((o.cannot_decide for _, o in results if o.cannot_decide), "")
    return dataclasses.replace(_group_outcome(group, results), cannot_decide=undecided)


def _group_outcome(
    group: AssertSetAssertion, results: list[tuple[Assertion, JudgeOutcome]]
) -> JudgeOutcome:
    counted = [(a, o) for a, o in results if not o.advisory and o.status is not Status.skipped]
    errors = [(a, o) for a, o in counted if o.status is Status.error]
    if errors:
        said = "a member is an error: " + "; ".join(f"{a.type}: {o.message}" for a, o in errors)
        unavailable = all(o.unavailable for _, o in errors)
        return JudgeOutcome(Status.error, 0.0, said, unavailable=unavailable)
    if not counted:
        return JudgeOutcome(Status.skipped, 0.0, "no member of the group was evaluated")
    total = sum(a.weight for a, _ in counted)
    score = sum(a.weight * o.score for a, o in counted) / total if total > 0 else 0.0
    passing = sum(o.status is Status.passed for _, o in counted)
    failed = [f"{a.type}: {o.message}" for a, o in counted if o.status is Status.failed]
    share = f"{passing}/{len(counted)} members passed, score {score:.2f}"
    if group.threshold is not None:
        passed = at_least(score, group.threshold)
        said = f"{share} {'≥' if passed else '<'} threshold {group.threshold:g}"
    else:
        passed = not failed and all(a.weight == 0 or o.status is Status.passed for a, o in counted)
        said = share
    if failed:
        said += " (" + "; ".join(failed) + ")"
    return JudgeOutcome(Status.passed if passed else Status.failed, score, said)


def _unreadable(trace: Trace) -> JudgeOutcome | None:
    """Why no assertion of the run is read: it timed out, or did not complete."""
    if trace.timed_out:
        return JudgeOutcome(Status.skipped, 0.0, f"not evaluated: {TIMED_OUT}")
    if trace.error is not None:
        # An unfinished run is no evidence either way: scoring its partial trace would
        # credit e.g. `toolNotCalled` for a run that never happened.
        return JudgeOutcome(Status.error, 0.0, "not evaluated: the run did not complete")
    return None


async def fixture_read(
    spec: EvalFixtureSpec, trace: Trace, scorers: CodeScorers | None
) -> tuple[Transformed, str | None]:
    """The run as its checks read it: after the fixture's `transform`, when it has one (and
    the run completed), else as it is; and why the transform gave nothing, when it failed."""
    read = Transformed(trace, trace.final_output)
    if spec.transform is None or trace.timed_out or trace.error is not None:
        return read, None
    try:
        return await transform_output(spec.transform, read, spec, scorers), None
    except TransformError as exc:
        return read, str(exc)
