from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from evalward.resources.models import Assertion
from evalward.results import Status
from evalward.runtime.trace import StepType, Trace
from evalward.scoring.assertions import check

ASSERTION: TypeAdapter[Any] = TypeAdapter(Assertion)


def trace_of(*tools: str, final: str = "done", tokens: int = 0) -> Trace:
    trace = Trace()
    trace.add(StepType.input, content="hi")
    for tool in tools:
        trace.add(StepType.tool_call, tool=tool, arguments={})
        trace.add(StepType.tool_result, tool=tool, output="ok")
    from evalward.runtime.trace import Usage

    trace.add(StepType.final, content=final, usage=Usage(input_tokens=tokens))
    return trace


@pytest.mark.parametrize(
    ("assertion", "tools", "expected"),
    [
        ({"type": "toolCalled", "tool": "a"}, ["a"], Status.passed),
        ({"type": "toolCalled", "tool": "a"}, ["b"], Status.failed),
        # before: some call of a precedes the first call of b
        ({"type": "toolCalled", "tool": "a", "before": ["b"]}, ["a", "b"], Status.passed),
        ({"type": "toolCalled", "tool": "a", "before": ["b"]}, ["b", "a"], Status.failed),
        ({"type": "toolCalled", "tool": "a", "before": ["b"]}, ["a", "b", "a"], Status.passed),
        # ... and a `before` tool that is never called does not block the pass
        ({"type": "toolCalled", "tool": "a", "before": ["b"]}, ["a"], Status.passed),
        # after: some call of a follows the first call of b; b never called fails
        ({"type": "toolCalled", "tool": "a", "after": ["b"]}, ["b", "a"], Status.passed),
        ({"type": "toolCalled", "tool": "a", "after": ["b"]}, ["a", "b"], Status.failed),
        ({"type": "toolCalled", "tool": "a", "after": ["b"]}, ["a"], Status.failed),
        # both conditions must hold for one and the same call
        (
            {"type": "toolCalled", "tool": "a", "after": ["x"], "before": ["y"]},
            ["x", "a", "y"],
            Status.passed,
        ),
        (
            {"type": "toolCalled", "tool": "a", "after": ["x"], "before": ["y"]},
            ["a", "x", "y", "a"],
            Status.failed,
        ),
        ({"type": "toolNotCalled", "tool": "a"}, ["b"], Status.passed),
        ({"type": "toolNotCalled", "tool": "a"}, ["b", "a"], Status.failed),
        ({"type": "toolNotCalled", "tool": "a", "after": ["b"]}, ["a", "b"], Status.passed),
        ({"type": "toolNotCalled", "tool": "a", "after": ["b"]}, ["b", "a"], Status.failed),
        ({"type": "toolNotCalled", "tool": "a", "after": ["b"]}, ["a"], Status.passed),
        ({"type": "toolSequence", "tools": ["a", "c"]}, ["a", "b", "c"], Status.passed),
        ({"type": "toolSequence", "tools": ["c", "a"]}, ["a", "b", "c"], Status.failed),
        ({"type": "toolSequence", "tools": ["a", "a"]}, ["a"], Status.failed),
    ],
)
def test_tool_ordering(assertion: dict[str, Any], tools: list[str], expected: Status) -> None:
    status, message = check(ASSERTION.validate_python(assertion), trace_of(*tools))
    assert status is expected, message


@pytest.mark.parametrize(
    ("assertion", "final", "expected"),
    [
        ({"type": "contains", "value": "answer:"}, "answer: 4", Status.passed),
        ({"type": "contains", "value": "Answer:"}, "answer: 4", Status.failed),
        ({"type": "notContains", "value": "refund"}, "shipped", Status.passed),
        ({"type": "notContains", "value": "refund"}, "a refund", Status.failed),
        ({"type": "regex", "pattern": r"\d{4}-\d\d"}, "on 2026-11", Status.passed),
        ({"type": "regex", "pattern": r"^\d+$"}, "12 apples", Status.failed),
        ({"type": "contains", "value": "ok", "field": "status"}, '{"status": "ok"}', Status.passed),
        ({"type": "contains", "value": "ok", "field": "a.b"}, '{"a": {"b": "no"}}', Status.failed),
        ({"type": "contains", "value": "ok", "field": "status"}, "plain text", Status.error),
        ({"type": "contains", "value": "ok", "field": "missing"}, '{"status": "ok"}', Status.error),
    ],
)
def test_text_assertions(assertion: dict[str, Any], final: str, expected: Status) -> None:
    status, message = check(ASSERTION.validate_python(assertion), trace_of(final=final))
    assert status is expected, message


def test_cost_is_a_cap_on_total_tokens() -> None:
    assertion = ASSERTION.validate_python({"type": "cost", "maxTokens": 100})
    assert check(assertion, trace_of(tokens=100))[0] is Status.passed
    assert check(assertion, trace_of(tokens=101))[0] is Status.failed
