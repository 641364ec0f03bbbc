"""Deterministic assertions over a trace. Each returns pass / fail (score 1 / 0) or error.

The exact semantics of every type, the ordering rules over the trace's tool calls among them,
are documented in docs/assertions.md.

An assertion that cannot be evaluated (a `field` that is not there, a regex that runs out of
time) is `error`, never a silent pass or fail.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from itertools import pairwise
from typing import Any

from evalward.resources.checks.assertions import (
    ArgsMode,
    Assertion,
    ContainsAssertion,
    CostAssertion,
    EqualsAssertion,
    JsonSchemaAssertion,
    LatencyAssertion,
    LatencyScope,
    MaxStepsAssertion,
    NotContainsAssertion,
    RegexAssertion,
    StepCount,
    ToolArgsAssertion,
    ToolCalledAssertion,
    ToolNotCalledAssertion,
    ToolSequenceAssertion,
    TrajectoryAssertion,
    TrajectoryMode,
)
from evalward.resources.common import json_schema_validator, unresolved_ref
from evalward.rundata.playground_state import same
from evalward.rundata.results import Status
from evalward.rundata.trace import StepType, Trace
from evalward.scoring.reps import TOLERANCE
from evalward.text import jsontext, tool_names
from evalward.text.counts import and_others
from evalward.text.cuts import cap_chars
from evalward.text.numbers import side_text

CheckOutcome = tuple[Status, str]
"""A deterministic check's status and the message that says why (assertions and state
criteria alike)."""

REGEX_TIMEOUT_SECONDS = 1.0
"""A regex match that takes longer is an error: a pathological pattern cannot hang a run."""


def check(
    assertion: Assertion, trace: Trace, *, regex_timeout: float = REGEX_TIMEOUT_SECONDS
) -> CheckOutcome:
    """Evaluate one deterministic assertion against a trace."""
    checker = _CHECKERS.get(type(assertion))
    try:
        if isinstance(assertion, RegexAssertion):
            return _regex(assertion, trace, regex_timeout)
        if checker is None:
            return Status.error, f"assertion type {assertion.type!r} is not deterministic"
        return checker(assertion, trace)
    except _NotCalled as exc:
        return Status.failed, str(exc)
    except _Unevaluable as exc:
        return Status.error, str(exc)


class _Unevaluable(Exception):
    pass


class _NotCalled(_Unevaluable):
    """A check of a tool's calls when the run never called it: a failure, not an error."""


def pass_or_fail(ok: bool, passed: str, failed: str) -> CheckOutcome:
    return (Status.passed, passed) if ok else (Status.failed, failed)


def _calls(
    trace: Trace, *written: str, ambiguous: bool = False, answered: bool = True
) -> list[str]:
    """The tools called, in order; a qualified name that means a `written` one, as written.
    `answered`: only the calls a tool answered (`Trace.answered_calls`), for the checks a
    call passes: a model's call of a tool the agent was not offered ran nothing, and is no
    call of it. The checks a call fails count every call the model made."""
    steps = trace.answered_calls() if answered else trace.tool_calls()
    return tool_names.as_written([step.tool or "" for step in steps], written, ambiguous=ambiguous)


def _not_offered(trace: Trace, tool: str) -> str:
    """What to add where `tool` was never called but the model asked for tools the agent
    was not offered (that one, or another name: a mock script's typo, a renamed tool), so
    that the hint points at the call, not at the check."""
    answered = {id(step) for step in trace.answered_calls()}
    asked = [s.tool or "" for s in trace.tool_calls() if id(s) not in answered]
    if not asked:
        return ""
    if tool in tool_names.as_written(asked, [tool]):
        return f"; the model asked for {tool}, but the agent was not offered a tool of that name"
    return f"; the model asked for tools the agent was not offered: {_listing(asked)}"


def _first(calls: list[str], tool: str) -> int | None:
    return calls.index(tool) if tool in calls else None


def _listing(calls: list[str]) -> str:
    """The tools called, each quoted as `_short` quotes a value: a name is the model's to
    choose, and unquoted one holding `, ` would read as two calls."""
    return ", ".join(_short(name) for name in calls) if calls else "none"


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return repr(cap_chars(text, limit))


# --- tool calls ----------------------------------------------------------------------------


def _tool_called(a: ToolCalledAssertion, trace: Trace) -> CheckOutcome:
    calls = _calls(trace, a.tool, *a.before, *a.after)
    positions = [i for i, name in enumerate(calls) if name == a.tool]
    if not positions:
        hint = _not_offered(trace, a.tool) or tool_names.hint(a.tool, calls)
        return Status.failed, f"{a.tool} was never called (calls: {_listing(calls)}){hint}"
    # a call of a `before` tool fails the check however it is named: a qualified name two
    # tools could be is each of them, as `toolNotCalled` counts it, so that a twin of the
    # tool on another server does not make the call that came first no call of it
    against = _calls(trace, *a.before, ambiguous=True)
    for position in positions:
        before_ok = all(
            (first := _first(against, other)) is None or position < first for other in a.before
        )
        after_ok = all(
            (first := _first(calls, other)) is not None and position > first for other in a.after
        )
        if before_ok and after_ok:
            return Status.passed, f"{a.tool} called at call #{position + 1}"
    conditions = [f"before {', '.join(a.before)}"] if a.before else []
    conditions += [f"after {', '.join(a.after)}"] if a.after else []
    return (
        Status.failed,
        f"{a.tool} was called, but not {' and '.join(conditions)} (calls: {_listing(calls)})",
    )


def _tool_not_called(a: ToolNotCalledAssertion, trace: Trace) -> CheckOutcome:
    calls = _calls(trace, a.tool, *a.after, ambiguous=True, answered=False)
    if not a.after:
        return pass_or_fail(a.tool not in calls, f"{a.tool} was not called", f"{a.tool} was called")
    firsts = [f for other in a.after if (f := _first(calls, other)) is not None]
    if not firsts:
        return Status.passed, f"none of {', '.join(a.after)} was called"
    start = min(firsts)
    late = [i for i, name in enumerate(calls) if name == a.tool and i > start]
    return pass_or_fail(
        not late,
        f"{a.tool} was not called after {', '.join(a.after)}",
        f"{a.tool} was called after {', '.join(a.after)} (calls: {_listing(calls)})",
    )


def _tool_sequence(a: ToolSequenceAssertion, trace: Trace) -> CheckOutcome:
    calls = _calls(trace, *a.tools)
    remaining = iter(calls)
    ok = all(any(name == wanted for name in remaining) for wanted in a.tools)
    return pass_or_fail(
        ok,
        f"calls follow {' → '.join(a.tools)}",
        f"expected {' → '.join(a.tools)} in order; calls were {_listing(calls)}"
        + "".join(tool_names.hint(t, calls) for t in dict.fromkeys(a.tools) if t not in calls),
    )


def _tool_args(a: ToolArgsAssertion, trace: Trace) -> CheckOutcome:
    names = _calls(trace, a.tool)
    calls = [s for s, name in zip(trace.answered_calls(), names, strict=True) if name == a.tool]
    if not calls:
        hint = _not_offered(trace, a.tool) or tool_names.hint(a.tool, names)
        return Status.failed, f"{a.tool} was never called{hint}"
    match = same if a.mode is ArgsMode.exact else _partial
    for step in calls:
        if match(a.args, step.arguments or {}):
            return Status.passed, f"{a.tool} called with matching arguments at step {step.index}"
    seen = "; ".join(_short(s.arguments or {}, 120) for s in calls[:3])
    return (
        Status.failed,
        f"no call of {a.tool} had arguments matching {_short(a.args, 120)} ({a.mode.value}); "
        f"calls had {seen}",
    )


def _partial(expected: Any, actual: Any) -> bool:
    """Objects match when every expected key matches recursively; anything else is equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and _partial(value, actual[key]) for key, value in expected.items()
        )
    return same(expected, actual)


def _trajectory(a: TrajectoryAssertion, trace: Trace) -> CheckOutcome:
    calls = _calls(trace, *a.tools, answered=False)  # every call made counts against it
    made = _calls(trace, *a.tools)  # only a call a tool answered counts towards it
    expected, actual = Counter(a.tools), Counter(calls)
    if a.mode is TrajectoryMode.strict:
        ok = calls == a.tools and made == calls
    elif a.mode is TrajectoryMode.unordered:
        ok = actual == expected and made == calls
    elif a.mode is TrajectoryMode.subset:
        ok = all(count <= expected[name] for name, count in actual.items())
    else:
        ok = all(Counter(made)[name] >= count for name, count in expected.items())
    return pass_or_fail(
        ok,
        f"tool calls match the reference ({a.mode.value})",
        f"tool calls {_listing(calls)} do not match the reference {_listing(a.tools)} "
        f"({a.mode.value})",
    )


def _max_steps(a: MaxStepsAssertion, trace: Trace) -> CheckOutcome:
    if a.count is StepCount.tool_calls:
        used, unit = len(trace.tool_calls()), "tool calls"
    elif a.count is StepCount.steps:
        used, unit = len(trace.steps), "trace steps"
    else:
        used, unit = model_turns(trace), "model turns"
    return pass_or_fail(used <= a.max, f"{used} {unit} ≤ {a.max}", f"{used} {unit} > {a.max}")


_MODEL_STEPS = frozenset({StepType.assistant, StepType.tool_call, StepType.final})


def model_turns(trace: Trace) -> int:
    """Model turns: maximal runs of consecutive assistant / tool_call / final steps."""
    is_model = [step.type in _MODEL_STEPS for step in trace.steps]
    return sum(now and not before for before, now in pairwise([False, *is_model]))


# --- the final message ---------------------------------------------------------------------


def _field_value(field: str, trace: Trace) -> Any:
    try:
        value: Any = jsontext.loads(trace.final_output)
    except ValueError:
        raise _Unevaluable(f"field {field!r} was given but the final message is not JSON") from None
    for part in field.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise _Unevaluable(f"field {field!r} is not in the final message")
    return value


def _replies(trace: Trace) -> list[str]:
    """The agent's reply to each turn of a conversation of several turns; [] for one run of
    one turn (or a conversation read on one turn), whose reply is its final message."""
    finals = [s for s in trace.steps if s.type is StepType.final and s.turn is not None]
    return [s.content for s in finals] if len({s.turn for s in finals}) > 1 else []


def _target_text(field: str | None, trace: Trace) -> str:
    """What `contains`, `notContains` and `regex` read: the JSON value at `field` as text,
    else the final message, or a conversation's every reply (a secret said on turn 1 is
    said, however the last turn ends), each on lines of its own."""
    if field is None:
        return "\n".join(_replies(trace)) or trace.final_output
    value = _field_value(field, trace)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def output_text(field: str | None, trace: Trace) -> str | CheckOutcome:
    """What a check of the final message reads (the JSON value at `field`, as text), or the
    `error` outcome that says why it cannot be read."""
    try:
        return _target_text(field, trace)
    except _Unevaluable as exc:
        return Status.error, str(exc)


def _where(field: str | None, trace: Trace | None = None) -> str:
    if field is not None:
        return f"field {field!r}"
    return "the agent's replies" if trace is not None and _replies(trace) else "the final message"


def _contains(a: ContainsAssertion, trace: Trace) -> CheckOutcome:
    text = _target_text(a.field, trace)
    return pass_or_fail(
        a.value in text,
        f"contains {a.value!r}",
        f"{a.value!r} not found in {_where(a.field, trace)}",
    )


def _not_contains(a: NotContainsAssertion, trace: Trace) -> CheckOutcome:
    text = _target_text(a.field, trace)
    return pass_or_fail(
        a.value not in text,
        f"does not contain {a.value!r}",
        f"{a.value!r} found in {_where(a.field, trace)}",
    )


def _equals(a: EqualsAssertion, trace: Trace) -> CheckOutcome:
    if a.field is None:
        expected = a.value if isinstance(a.value, str) else json.dumps(a.value)
        actual: Any = trace.final_output if a.exact else trace.final_output.strip()
        ok = actual == (expected if a.exact else expected.strip())
    else:
        actual = _field_value(a.field, trace)
        ok = same(a.value, actual)
    return pass_or_fail(
        ok,
        f"{_where(a.field)} equals {_short(a.value)}",
        f"{_where(a.field)} is {_short(actual)}, expected {_short(a.value)}",
    )


def _regex(a: RegexAssertion, trace: Trace, timeout: float) -> CheckOutcome:
    text = _target_text(a.field, trace)
    try:
        match = a.compiled.search(text, timeout=timeout)
    except TimeoutError:
        raise _Unevaluable(
            f"/{a.pattern}/ did not finish within {timeout:g} s on {len(text)} characters; "
            "simplify the pattern (nested repetition backtracks exponentially)"
        ) from None
    return pass_or_fail(
        match is not None,
        f"/{a.pattern}/ matched {cap_chars(match.group(0), 80)!r}" if match else "",
        f"/{a.pattern}/ did not match {_where(a.field, trace)}",
    )


def _json_schema(a: JsonSchemaAssertion, trace: Trace) -> CheckOutcome:
    if a.field is None:
        try:
            value: Any = jsontext.loads(trace.final_output)
        except json.JSONDecodeError as exc:
            return Status.failed, f"the final message is not JSON ({exc.msg} at {exc.pos})"
        except ValueError as exc:  # an agent's output nested deeper than the parser goes
            return Status.failed, f"the final message is not JSON ({exc})"
    else:
        value = _field_value(a.field, trace)
    from referencing.exceptions import Unresolvable  # on use, as jsonschema is

    validator = json_schema_validator(a.json_schema)
    try:
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    except RecursionError:  # a recursive schema follows the agent's nesting down
        return Status.failed, f"{_where(a.field)} is nested too deeply to check against the schema"
    except Unresolvable as exc:  # refused at load; a schema built otherwise is refused here
        raise _Unevaluable(unresolved_ref(exc)) from None
    if not errors:
        return Status.passed, f"{_where(a.field)} validates against the schema"
    first = errors[0]
    at = "/".join(str(p) for p in first.absolute_path) or "(root)"
    more = and_others(len(errors))
    return Status.failed, f"{_where(a.field)} fails the schema at {at}: {first.message}{more}"


# --- budgets -------------------------------------------------------------------------------


def _cost(a: CostAssertion, trace: Trace) -> CheckOutcome:
    usage = trace.usage
    held: list[str] = []
    if a.max_tokens is not None:
        used = usage.total_tokens
        if used > a.max_tokens:
            return Status.failed, f"{used} tokens > {a.max_tokens}"
        held.append(f"{used} tokens ≤ {a.max_tokens}")
    if a.max_usd is not None:
        # A call without a price would make the sum look smaller than what the run cost.
        parts = [s.usage for s in trace.steps] + [c.usage for c in trace.proxy_calls]
        unpriced = any(u is not None and u.cost_usd is None and u.total_tokens for u in parts)
        if usage.cost_usd is None or unpriced:
            raise _Unevaluable(
                "the run's cost is unknown: a model it called has no price; add one under "
                "`pricing` in evalward.yaml"
            )
        if usage.cost_usd > a.max_usd + TOLERANCE:  # a sum of prices: 0.1 + 0.2 is 0.3
            return (
                Status.failed,
                f"cost ${side_text(usage.cost_usd, a.max_usd, '.6g')} > ${a.max_usd:g}",
            )
        held.append(f"cost ${usage.cost_usd:.6g} ≤ ${a.max_usd:g}")
    return Status.passed, "; ".join(held)


def observed_latency(a: LatencyAssertion, trace: Trace) -> tuple[float, str]:
    """What a latency assertion measures: the run's wall time (`scope: run`) or its slowest
    timed step (`scope: step`), in ms, and how to say which."""
    if a.scope is LatencyScope.run and a.tool is None:
        return trace.duration_ms, "run took"
    timed = [s for s in trace.steps if s.duration_ms > 0]
    if a.tool is not None:
        calls = [s for s in trace.steps if s.type is StepType.tool_result and s.tool == a.tool]
        timed = [s for s in calls if s.duration_ms > 0]
        if not calls:
            raise _NotCalled(f"tool {a.tool!r} was not called, so no call of it was in time")
        if not timed:
            raise _Unevaluable(f"no call of tool {a.tool!r} carries a duration")
        slowest = max(timed, key=lambda s: s.duration_ms)
        return slowest.duration_ms, f"slowest call of {a.tool} (step #{slowest.index}) took"
    if not timed:
        raise _Unevaluable("no step of the run carries a duration, so per-step latency is unknown")
    slowest = max(timed, key=lambda s: s.duration_ms)
    return slowest.duration_ms, f"slowest step #{slowest.index} ({slowest.type.value}) took"


def _latency(a: LatencyAssertion, trace: Trace) -> CheckOutcome:
    took, what = observed_latency(a, trace)
    if a.max_ms is None:
        return Status.passed, f"{what} {took:.0f} ms (reported only: no maxMs, so it does not gate)"
    return pass_or_fail(
        took <= a.max_ms,
        f"{what} {took:.0f} ms ≤ {a.max_ms:.0f} ms",
        f"{what} {side_text(took, a.max_ms, '.0f')} ms > {a.max_ms:.0f} ms",
    )


def observed_ms(assertion: Assertion, trace: Trace) -> float | None:
    """The latency a `latency` assertion observed (None for other types, or when unknown)."""
    if not isinstance(assertion, LatencyAssertion):
        return None
    try:
        return observed_latency(assertion, trace)[0]
    except _Unevaluable:
        return None


def reports_only(assertion: Assertion) -> bool:
    """An assertion that is shown but never gates: seed 003's reserved `{type: latency}`."""
    return isinstance(assertion, LatencyAssertion) and not assertion.gates


_CHECKERS: dict[type[Any], Callable[[Any, Trace], CheckOutcome]] = {
    ToolCalledAssertion: _tool_called,
    ToolNotCalledAssertion: _tool_not_called,
    ToolSequenceAssertion: _tool_sequence,
    ToolArgsAssertion: _tool_args,
    TrajectoryAssertion: _trajectory,
    MaxStepsAssertion: _max_steps,
    ContainsAssertion: _contains,
    NotContainsAssertion: _not_contains,
    EqualsAssertion: _equals,
    JsonSchemaAssertion: _json_schema,
    CostAssertion: _cost,
    LatencyAssertion: _latency,
}
