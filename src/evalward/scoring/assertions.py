"""Deterministic assertions over a trace. Each returns pass / fail (score 1 / 0) or error.

Ordering semantics (steps are the trace's tool calls, in order):

- `toolCalled tool before: [X]`: some call of `tool` comes before the first call of each X;
  an X that is never called does not prevent the pass.
- `toolCalled tool after: [Y]`: some call of `tool` comes after the first call of each Y;
  a Y that is never called makes it fail.
- With both, one and the same call of `tool` must satisfy every condition.
- `toolNotCalled tool after: [Y]`: no call of `tool` comes after the first call of any Y.
- `toolSequence tools`: the list appears in the calls as a subsequence (gaps allowed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from evalward.resources.models import (
    Assertion,
    ContainsAssertion,
    CostAssertion,
    JudgeAssertion,
    LatencyAssertion,
    NotContainsAssertion,
    RegexAssertion,
    ToolCalledAssertion,
    ToolNotCalledAssertion,
    ToolSequenceAssertion,
)
from evalward.results import Status
from evalward.runtime.trace import Trace

Outcome = tuple[Status, str]


def check(assertion: Assertion, trace: Trace) -> Outcome:
    """Evaluate one deterministic assertion against a trace."""
    checker = _CHECKERS.get(type(assertion))
    if checker is None:
        return Status.error, f"assertion type {assertion.type!r} cannot be evaluated here"
    try:
        return checker(assertion, trace)
    except _Unevaluable as exc:
        return Status.error, str(exc)


class _Unevaluable(Exception):
    pass


def _verdict(ok: bool, passed: str, failed: str) -> Outcome:
    return (Status.passed, passed) if ok else (Status.failed, failed)


def _calls(trace: Trace) -> list[str]:
    return [step.tool or "" for step in trace.tool_calls()]


def _first(calls: list[str], tool: str) -> int | None:
    return calls.index(tool) if tool in calls else None


def _tool_called(a: ToolCalledAssertion, trace: Trace) -> Outcome:
    calls = _calls(trace)
    positions = [i for i, name in enumerate(calls) if name == a.tool]
    if not positions:
        return Status.failed, f"{a.tool} was never called (calls: {_listing(calls)})"
    for position in positions:
        before_ok = all(
            (first := _first(calls, other)) is None or position < first for other in a.before
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


def _tool_not_called(a: ToolNotCalledAssertion, trace: Trace) -> Outcome:
    calls = _calls(trace)
    if not a.after:
        return _verdict(a.tool not in calls, f"{a.tool} was not called", f"{a.tool} was called")
    firsts = [f for other in a.after if (f := _first(calls, other)) is not None]
    if not firsts:
        return Status.passed, f"none of {', '.join(a.after)} was called"
    start = min(firsts)
    late = [i for i, name in enumerate(calls) if name == a.tool and i > start]
    return _verdict(
        not late,
        f"{a.tool} was not called after {', '.join(a.after)}",
        f"{a.tool} was called after {', '.join(a.after)} (calls: {_listing(calls)})",
    )


def _tool_sequence(a: ToolSequenceAssertion, trace: Trace) -> Outcome:
    calls = _calls(trace)
    remaining = iter(calls)
    ok = all(any(name == wanted for name in remaining) for wanted in a.tools)
    return _verdict(
        ok,
        f"calls follow {' → '.join(a.tools)}",
        f"expected {' → '.join(a.tools)} in order; calls were {_listing(calls)}",
    )


def _listing(calls: list[str]) -> str:
    return ", ".join(calls) if calls else "none"


def _target_text(field: str | None, trace: Trace) -> str:
    output = trace.final_output
    if field is None:
        return output
    try:
        value: Any = json.loads(output)
    except ValueError:
        raise _Unevaluable(f"field {field!r} was given but the final message is not JSON") from None
    for part in field.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise _Unevaluable(f"field {field!r} is not in the final message")
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _contains(a: ContainsAssertion, trace: Trace) -> Outcome:
    text = _target_text(a.field, trace)
    return _verdict(
        a.value in text, f"contains {a.value!r}", f"{a.value!r} not found in the final message"
    )


def _not_contains(a: NotContainsAssertion, trace: Trace) -> Outcome:
    text = _target_text(a.field, trace)
    return _verdict(
        a.value not in text,
        f"does not contain {a.value!r}",
        f"{a.value!r} found in the final message",
    )


def _regex(a: RegexAssertion, trace: Trace) -> Outcome:
    match = re.search(a.pattern, trace.final_output)
    return _verdict(
        match is not None,
        f"/{a.pattern}/ matched {match.group(0)[:80]!r}" if match else "",
        f"/{a.pattern}/ did not match the final message",
    )


def _cost(a: CostAssertion, trace: Trace) -> Outcome:
    used = trace.usage.total_tokens
    return _verdict(
        used <= a.max_tokens,
        f"{used} tokens ≤ {a.max_tokens}",
        f"{used} tokens > {a.max_tokens}",
    )


def _latency(a: LatencyAssertion, trace: Trace) -> Outcome:
    took = trace.duration_ms
    return _verdict(
        took <= a.max_ms, f"{took:.0f} ms ≤ {a.max_ms:.0f} ms", f"{took:.0f} ms > {a.max_ms:.0f} ms"
    )


def _judge(a: JudgeAssertion, trace: Trace) -> Outcome:
    del a, trace
    raise _Unevaluable("judge assertions need an LLM judge, which this build does not run")


_CHECKERS: dict[type[Any], Callable[[Any, Trace], Outcome]] = {
    ToolCalledAssertion: _tool_called,
    ToolNotCalledAssertion: _tool_not_called,
    ToolSequenceAssertion: _tool_sequence,
    ContainsAssertion: _contains,
    NotContainsAssertion: _not_contains,
    RegexAssertion: _regex,
    CostAssertion: _cost,
    LatencyAssertion: _latency,
    JudgeAssertion: _judge,
}
