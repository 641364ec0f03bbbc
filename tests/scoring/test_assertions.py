"""Every deterministic assertion type, table-driven, with its edge cases."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from evalward.resources.checks.patterns import compiled_pattern
from evalward.resources.models import Assertion
from evalward.rundata.results import Status
from evalward.rundata.trace import NO_SUCH_TOOL, StepType, Trace, Usage
from evalward.scoring.assertions import check, model_turns

pytestmark = pytest.mark.unit

ASSERTION: TypeAdapter[Any] = TypeAdapter(Assertion)


def trace_of(
    *tools: str | tuple[str, dict[str, Any]], final: str = "done", tokens: int = 0
) -> Trace:
    trace = Trace()
    trace.add(StepType.input, content="hi")
    for tool in tools:
        name, arguments = (tool, {}) if isinstance(tool, str) else tool
        trace.add(StepType.tool_call, tool=name, arguments=arguments)
        trace.add(StepType.tool_result, tool=name, output="ok")
    trace.add(StepType.final, content=final, usage=Usage(input_tokens=tokens))
    return trace


def run(assertion: dict[str, Any], trace: Trace) -> tuple[Status, str]:
    return check(ASSERTION.validate_python(assertion), trace)


@pytest.mark.parametrize(
    ("assertion", "tools", "expected"),
    [
        ({"type": "toolCalled", "tool": "a"}, ["a"], Status.passed),
        ({"type": "toolCalled", "tool": "a"}, ["b"], Status.failed),
        ({"type": "toolCalled", "tool": "a"}, [], Status.failed),
        # before: some call of a precedes the first call of b
        ({"type": "toolCalled", "tool": "a", "before": ["b"]}, ["a", "b"], Status.passed),
        ({"type": "toolCalled", "tool": "a", "before": ["b"]}, ["b", "a"], Status.failed),
        ({"type": "toolCalled", "tool": "a", "before": ["b"]}, ["a", "b", "a"], Status.passed),
        # ... and a `before` tool that is never called does not block the pass
        ({"type": "toolCalled", "tool": "a", "before": ["b"]}, ["a"], Status.passed),
        # ... but `a` itself must be called
        ({"type": "toolCalled", "tool": "a", "before": ["b"]}, [], Status.failed),
        # ... a call of a `before` tool counts however it is named: a twin of it on another
        # server (two qualified names the bare one could be) is no way round it
        (
            {"type": "toolCalled", "tool": "lookup", "before": ["refund"]},
            ["orders__refund", "audit__refund", "orders__lookup"],
            Status.failed,
        ),
        (
            {"type": "toolCalled", "tool": "lookup", "before": ["refund"]},
            ["orders__lookup", "orders__refund", "audit__refund"],
            Status.passed,
        ),
        # before several: a precedes the first call of every one of them
        ({"type": "toolCalled", "tool": "a", "before": ["b", "c"]}, ["c", "a", "b"], Status.failed),
        ({"type": "toolCalled", "tool": "a", "before": ["b", "c"]}, ["a", "c", "b"], Status.passed),
        # after: some call of a follows the first call of b; b never called fails
        ({"type": "toolCalled", "tool": "a", "after": ["b"]}, ["b", "a"], Status.passed),
        ({"type": "toolCalled", "tool": "a", "after": ["b"]}, ["a", "b"], Status.failed),
        ({"type": "toolCalled", "tool": "a", "after": ["b"]}, ["a"], Status.failed),
        ({"type": "toolCalled", "tool": "a", "after": ["b"]}, ["a", "b", "a"], Status.passed),
        ({"type": "toolCalled", "tool": "a", "after": ["b", "c"]}, ["b", "a", "c"], Status.failed),
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
        ({"type": "toolNotCalled", "tool": "a"}, [], Status.passed),
        ({"type": "toolNotCalled", "tool": "a"}, ["b", "a"], Status.failed),
        ({"type": "toolNotCalled", "tool": "a", "after": ["b"]}, ["a", "b"], Status.passed),
        ({"type": "toolNotCalled", "tool": "a", "after": ["b"]}, ["b", "a"], Status.failed),
        ({"type": "toolNotCalled", "tool": "a", "after": ["b"]}, ["a"], Status.passed),
        # after several: counted from the first call of any of them
        ({"type": "toolNotCalled", "tool": "a", "after": ["b", "c"]}, ["c", "a"], Status.failed),
        ({"type": "toolSequence", "tools": ["a", "c"]}, ["a", "b", "c"], Status.passed),
        ({"type": "toolSequence", "tools": ["c", "a"]}, ["a", "b", "c"], Status.failed),
        ({"type": "toolSequence", "tools": ["a", "a"]}, ["a"], Status.failed),
        ({"type": "toolSequence", "tools": ["a", "a"]}, ["a", "b", "a"], Status.passed),
    ],
)
def test_tool_ordering(assertion: dict[str, Any], tools: list[str], expected: Status) -> None:
    status, message = run(assertion, trace_of(*tools))
    assert status is expected, message


@pytest.mark.parametrize(
    ("mode", "tools", "expected"),
    [
        ("strict", ["a", "b"], Status.passed),
        ("strict", ["b", "a"], Status.failed),
        ("strict", ["a", "b", "b"], Status.failed),
        ("unordered", ["b", "a"], Status.passed),
        ("unordered", ["a", "b", "b"], Status.failed),
        ("unordered", ["a"], Status.failed),
        # subset: only reference tools, each no more often than in the reference
        ("subset", ["a"], Status.passed),
        ("subset", [], Status.passed),
        ("subset", ["a", "a"], Status.failed),
        ("subset", ["a", "c"], Status.failed),
        # superset: every reference call, extra calls allowed
        ("superset", ["c", "b", "a", "c"], Status.passed),
        ("superset", ["a"], Status.failed),
    ],
)
def test_trajectory_modes(mode: str, tools: list[str], expected: Status) -> None:
    assertion = {"type": "trajectory", "tools": ["a", "b"], "mode": mode}
    status, message = run(assertion, trace_of(*tools))
    assert status is expected, message


def trace_asking(*tools: str) -> Trace:
    """A trace of `tools` called in order; a name ending in `!` is one the agent was not
    offered, which evalward answered itself (nothing ran)."""
    trace = Trace()
    trace.add(StepType.input, content="hi")
    for number, tool in enumerate(tools):
        name, offered = tool.rstrip("!"), not tool.endswith("!")
        trace.add(StepType.tool_call, tool=name, call_id=f"c{number}", arguments={"id": "1"})
        answer = {"output": "ok"} if offered else {"output": "error", "source": NO_SUCH_TOOL}
        trace.add(StepType.tool_result, tool=name, call_id=f"c{number}", **answer)
    trace.add(StepType.final, content="done")
    return trace


@pytest.mark.parametrize(
    ("assertion", "tools", "expected"),
    [
        ({"type": "toolCalled", "tool": "a"}, ["a!"], Status.failed),
        ({"type": "toolCalled", "tool": "a"}, ["a!", "a"], Status.passed),
        ({"type": "toolCalled", "tool": "a", "before": ["b"]}, ["b!", "a"], Status.passed),
        ({"type": "toolCalled", "tool": "a", "after": ["b"]}, ["b!", "a"], Status.failed),
        ({"type": "toolArgs", "tool": "a", "args": {"id": "1"}}, ["a!"], Status.failed),
        ({"type": "toolSequence", "tools": ["a", "b"]}, ["a!", "b"], Status.failed),
        ({"type": "toolSequence", "tools": ["a", "b"]}, ["a", "b!", "b"], Status.passed),
        # a call the model made counts where calls fail the check
        ({"type": "toolNotCalled", "tool": "a"}, ["a!"], Status.failed),
        ({"type": "toolNotCalled", "tool": "a", "after": ["b"]}, ["b", "a!"], Status.failed),
        ({"type": "trajectory", "tools": ["a", "b"], "mode": "strict"}, ["a!", "b"], Status.failed),
        (
            {"type": "trajectory", "tools": ["a", "b"], "mode": "unordered"},
            ["b", "a!"],
            Status.failed,
        ),
        (
            {"type": "trajectory", "tools": ["a", "b"], "mode": "superset"},
            ["a!", "b"],
            Status.failed,
        ),
        ({"type": "trajectory", "tools": ["a", "b"], "mode": "subset"}, ["c!"], Status.failed),
        ({"type": "trajectory", "tools": ["a", "b"], "mode": "subset"}, ["a!"], Status.passed),
    ],
)
def test_a_call_of_a_tool_not_offered_passes_no_check_and_fails_those_calls_fail(
    assertion: dict[str, Any], tools: list[str], expected: Status
) -> None:
    """A model may name a tool the agent was not offered (one a pull request renamed, a
    mock script's reply written for the base): evalward answers it and nothing runs. It is
    no call of that tool for a check a call passes, and still a call the model made for one
    a call fails."""
    status, message = run(assertion, trace_asking(*tools))
    assert status is expected, message
    if assertion["type"] == "toolCalled" and tools == ["a!"]:
        assert message == (
            "a was never called (calls: none); the model asked for a, but the agent was not "
            "offered a tool of that name"
        )


def test_a_call_of_another_name_not_offered_is_named_not_suggested() -> None:
    """A mock script's typo (`lookup_ordr`) reaches no tool: the check says the model asked
    for it, rather than suggesting the check be rewritten to the typo."""
    status, message = run(
        {"type": "toolCalled", "tool": "lookup_order"}, trace_asking("lookup_ordr!")
    )
    assert status is Status.failed
    assert message == (
        "lookup_order was never called (calls: none); the model asked for tools the agent was "
        "not offered: 'lookup_ordr'"
    )


@pytest.mark.parametrize(
    ("args", "mode", "calls", "expected"),
    [
        ({"id": "1"}, "partial", [{"id": "1", "note": "x"}], Status.passed),
        ({"id": "1"}, "exact", [{"id": "1", "note": "x"}], Status.failed),
        ({"id": "1"}, "exact", [{"id": "2"}, {"id": "1"}], Status.passed),
        ({"id": 1}, "partial", [{"id": "1"}], Status.failed),
        ({"n": 1}, "exact", [{"n": 1.0}], Status.passed),
        ({"flag": True}, "partial", [{"flag": 1}], Status.failed),
        ({"a": {"b": 1}}, "partial", [{"a": {"b": 1, "c": 2}}], Status.passed),
        ({"a": {"b": 1}}, "exact", [{"a": {"b": 1, "c": 2}}], Status.failed),
        ({"xs": [1, 2]}, "partial", [{"xs": [1, 2, 3]}], Status.failed),
        ({}, "partial", [{"anything": 1}], Status.passed),
        ({}, "exact", [{"anything": 1}], Status.failed),
    ],
)
def test_tool_args(
    args: dict[str, Any], mode: str, calls: list[dict[str, Any]], expected: Status
) -> None:
    trace = trace_of(*(("lookup", c) for c in calls), "other")
    assertion = {"type": "toolArgs", "tool": "lookup", "args": args, "mode": mode}
    status, message = run(assertion, trace)
    assert status is expected, message


def test_tool_args_fails_when_the_tool_is_never_called() -> None:
    status, message = run({"type": "toolArgs", "tool": "x", "args": {}}, trace_of("y"))
    assert status is Status.failed
    assert "never called" in message


@pytest.mark.parametrize(
    ("assertion", "final", "expected"),
    [
        ({"type": "contains", "value": "answer:"}, "answer: 4", Status.passed),
        ({"type": "contains", "value": "Answer:"}, "answer: 4", Status.failed),
        ({"type": "notContains", "value": "refund"}, "shipped", Status.passed),
        ({"type": "notContains", "value": "refund"}, "a refund", Status.failed),
        ({"type": "regex", "pattern": r"\d{4}-\d\d"}, "on 2026-11", Status.passed),
        ({"type": "regex", "pattern": r"^\d+$"}, "12 apples", Status.failed),
        ({"type": "regex", "pattern": r"(?i)^ANSWER"}, "answer: 4", Status.passed),
        ({"type": "regex", "pattern": "^ok$", "field": "s"}, '{"s": "ok"}', Status.passed),
        ({"type": "contains", "value": "ok", "field": "status"}, '{"status": "ok"}', Status.passed),
        ({"type": "contains", "value": "ok", "field": "a.b"}, '{"a": {"b": "no"}}', Status.failed),
        ({"type": "contains", "value": "b", "field": "xs.1"}, '{"xs": ["a", "b"]}', Status.passed),
        ({"type": "contains", "value": "ok", "field": "status"}, "plain text", Status.error),
        ({"type": "contains", "value": "ok", "field": "missing"}, '{"status": "ok"}', Status.error),
        ({"type": "notContains", "value": "x", "field": "missing"}, '{"a": 1}', Status.error),
        # equals: the whole message (outer whitespace ignored) or a JSON value at `field`
        ({"type": "equals", "value": "4"}, " 4\n", Status.passed),
        ({"type": "equals", "value": "4"}, "answer: 4", Status.failed),
        ({"type": "equals", "value": 3, "field": "n"}, '{"n": 3}', Status.passed),
        ({"type": "equals", "value": 3, "field": "n"}, '{"n": "3"}', Status.failed),
        ({"type": "equals", "value": [1, 2], "field": "xs"}, '{"xs": [1, 2]}', Status.passed),
        ({"type": "equals", "value": True, "field": "ok"}, '{"ok": 1}', Status.failed),
        ({"type": "equals", "value": 3, "field": "n"}, "not json", Status.error),
    ],
)
def test_text_assertions(assertion: dict[str, Any], final: str, expected: Status) -> None:
    status, message = run(assertion, trace_of(final=final))
    assert status is expected, message


SCHEMA = {
    "$id": "https://orders.example/order.json",  # its $refs resolve within it, never fetched
    "type": "object",
    "required": ["order_id", "status"],
    "properties": {"order_id": {"$ref": "#order-id"}, "status": {"$ref": "status.json"}},
    "$defs": {
        "order_id": {"$anchor": "order-id", "type": "string"},
        "status": {"$id": "status.json", "enum": ["shipped", "pending"]},
    },
}


@pytest.mark.parametrize(
    ("final", "field", "expected", "says"),
    [
        ('{"order_id": "1", "status": "shipped"}', None, Status.passed, "validates"),
        ('{"order_id": "1", "status": "lost"}', None, Status.failed, "status"),
        ('{"order_id": 1}', None, Status.failed, "(and 1 more)"),
        ("Order 1 shipped", None, Status.failed, "not JSON"),
        ('{"data": {"order_id": "1", "status": "pending"}}', "data", Status.passed, "validates"),
        ('{"data": 1}', "missing", Status.error, "not in the final message"),
    ],
)
def test_json_schema(final: str, field: str | None, expected: Status, says: str) -> None:
    assertion: dict[str, Any] = {"type": "jsonSchema", "schema": SCHEMA}
    if field:
        assertion["field"] = field
    status, message = run(assertion, trace_of(final=final))
    assert status is expected, message
    assert says in message


def test_an_invalid_json_schema_is_rejected_at_load_time() -> None:
    with pytest.raises(ValidationError, match=r"invalid JSON Schema at properties/n/type"):
        ASSERTION.validate_python(
            {"type": "jsonSchema", "schema": {"properties": {"n": {"type": "numbr"}}}}
        )


def test_an_invalid_regex_is_rejected_at_load_time() -> None:
    with pytest.raises(ValidationError, match="invalid regular expression"):
        ASSERTION.validate_python({"type": "regex", "pattern": "(unclosed"})


def test_a_pattern_compiled_to_load_its_fixture_is_the_one_that_matches() -> None:
    """Suites give most fixtures a pattern of their own: compiling is the cost, so it is paid
    once, and the pattern that matched is the pattern that was loaded."""
    pattern = r"(?i)order #0*4711(?!\d) ships"
    assertion = ASSERTION.validate_python({"type": "regex", "pattern": pattern})
    assert compiled_pattern(pattern) is compiled_pattern(assertion.pattern)
    assert run({"type": "regex", "pattern": pattern}, trace_of(final="Order #04711 ships")) == (
        Status.passed,
        f"/{pattern}/ matched 'Order #04711 ships'",
    )
    assert run({"type": "regex", "pattern": pattern}, trace_of(final="order #47110 ships")) == (
        Status.failed,
        f"/{pattern}/ did not match the final message",
    )
    with pytest.raises(ValueError, match=r"^invalid regular expression: missing \)"):
        compiled_pattern("(unclosed")


def test_a_pathological_regex_is_stopped_and_reported_as_an_error() -> None:
    assertion = ASSERTION.validate_python({"type": "regex", "pattern": r"^(a|aa)+$"})
    status, message = check(assertion, trace_of(final="a" * 40 + "b"), regex_timeout=0.05)
    assert status is Status.error
    assert "did not finish within 0.05 s" in message


def test_cost_is_a_cap_on_the_tokens_of_the_whole_run() -> None:
    trace = Trace()
    trace.add(StepType.tool_call, tool="a", arguments={}, usage=Usage(input_tokens=60))
    trace.add(StepType.final, content="x", usage=Usage(input_tokens=30, output_tokens=10))
    assert run({"type": "cost", "maxTokens": 100}, trace)[0] is Status.passed
    assert run({"type": "cost", "maxTokens": 99}, trace)[0] is Status.failed


def test_cost_in_dollars_is_a_cap_on_what_the_priced_calls_cost() -> None:
    trace = Trace()
    trace.add(
        StepType.tool_call, tool="a", arguments={}, usage=Usage(input_tokens=60, cost_usd=0.002)
    )
    trace.add(StepType.final, content="x", usage=Usage(input_tokens=30, cost_usd=0.001))
    assert run({"type": "cost", "maxUsd": 0.003}, trace) == (Status.passed, "cost $0.003 ≤ $0.003")
    assert run({"type": "cost", "maxUsd": 0.0029}, trace) == (
        Status.failed,
        "cost $0.003 > $0.0029",
    )
    # both bounds: both must hold
    assert run({"type": "cost", "maxUsd": 1, "maxTokens": 89}, trace)[0] is Status.failed
    assert run({"type": "cost", "maxUsd": 1, "maxTokens": 90}, trace)[0] is Status.passed


def test_a_cost_is_read_against_its_bound_as_a_sum_of_prices() -> None:
    trace = Trace()
    trace.add(StepType.tool_call, tool="a", arguments={}, usage=Usage(cost_usd=0.1))
    trace.add(StepType.final, content="x", usage=Usage(cost_usd=0.2))
    assert trace.usage.cost_usd == 0.30000000000000004  # what the floats add up to
    assert run({"type": "cost", "maxUsd": 0.3}, trace) == (Status.passed, "cost $0.3 ≤ $0.3")
    # a cost over its bound by less than six digits show keeps the digits that show it
    over = Trace()
    over.add(StepType.final, content="x", usage=Usage(cost_usd=0.3000001))
    assert run({"type": "cost", "maxUsd": 0.3}, over) == (Status.failed, "cost $0.3000001 > $0.3")


def test_a_cost_in_dollars_that_is_not_known_is_an_error_never_a_pass() -> None:
    """A call to a model with no price would make the run look cheaper than it was."""
    unpriced = Trace()
    unpriced.add(StepType.final, content="x", usage=Usage(input_tokens=30))
    status, message = run({"type": "cost", "maxUsd": 100}, unpriced)
    assert status is Status.error and "has no price" in message and "pricing" in message
    partly = Trace()
    partly.add(StepType.tool_call, tool="a", arguments={}, usage=Usage(input_tokens=9))
    partly.add(StepType.final, content="x", usage=Usage(input_tokens=30, cost_usd=0.001))
    assert run({"type": "cost", "maxUsd": 100}, partly)[0] is Status.error


def test_a_cost_assertion_needs_a_bound() -> None:
    with pytest.raises(ValidationError, match="needs `maxTokens`, `maxUsd` or both"):
        ASSERTION.validate_python({"type": "cost"})


def timed_trace(run_ms: float, *step_ms: float) -> Trace:
    trace = Trace(duration_ms=run_ms)
    trace.add(StepType.input, content="hi")
    for ms in step_ms:
        trace.add(StepType.tool_call, tool="t", arguments={}, duration_ms=ms)
    return trace


@pytest.mark.parametrize(
    ("assertion", "trace", "expected"),
    [
        ({"type": "latency", "maxMs": 1000}, timed_trace(1000, 10), Status.passed),
        ({"type": "latency", "maxMs": 1000}, timed_trace(1000.5, 10), Status.failed),
        (
            {"type": "latency", "maxMs": 300, "scope": "step"},
            timed_trace(900, 300, 250),
            Status.passed,
        ),
        (
            {"type": "latency", "maxMs": 300, "scope": "step"},
            timed_trace(400, 100, 301),
            Status.failed,
        ),
        ({"type": "latency", "maxMs": 300, "scope": "step"}, timed_trace(400), Status.error),
    ],
)
def test_latency(assertion: dict[str, Any], trace: Trace, expected: Status) -> None:
    status, message = run(assertion, trace)
    assert status is expected, message


def test_a_run_over_its_latency_bound_is_never_written_at_it() -> None:
    over = run({"type": "latency", "maxMs": 1000}, timed_trace(1000.5, 10))
    assert over == (Status.failed, "run took 1000.5 ms > 1000 ms")
    assert run({"type": "latency", "maxMs": 1000}, timed_trace(1203.4))[1] == (
        "run took 1203 ms > 1000 ms"
    )


def multi_turn_trace() -> Trace:
    """Two model turns with tool calls (the first with two parallel calls), then the answer."""
    trace = Trace()
    trace.add(StepType.input, content="hi")
    trace.add(StepType.assistant, content="let me look")
    trace.add(StepType.tool_call, tool="a", arguments={})
    trace.add(StepType.tool_call, tool="b", arguments={})
    trace.add(StepType.tool_result, tool="a", output="1")
    trace.add(StepType.tool_result, tool="b", output="2")
    trace.add(StepType.tool_call, tool="c", arguments={})
    trace.add(StepType.tool_result, tool="c", output="3")
    trace.add(StepType.final, content="done")
    return trace


@pytest.mark.parametrize(
    ("assertion", "expected"),
    [
        ({"type": "maxSteps", "max": 3}, Status.passed),
        ({"type": "maxSteps", "max": 2}, Status.failed),
        ({"type": "maxSteps", "max": 3, "count": "toolCalls"}, Status.passed),
        ({"type": "maxSteps", "max": 2, "count": "toolCalls"}, Status.failed),
        ({"type": "maxSteps", "max": 9, "count": "steps"}, Status.passed),
        ({"type": "maxSteps", "max": 8, "count": "steps"}, Status.failed),
    ],
)
def test_max_steps(assertion: dict[str, Any], expected: Status) -> None:
    assert model_turns(multi_turn_trace()) == 3
    status, message = run(assertion, multi_turn_trace())
    assert status is expected, message


def test_a_judge_assertion_is_not_deterministic() -> None:
    assertion = ASSERTION.validate_python({"type": "judge", "rubric": "be nice"})
    assert check(assertion, trace_of())[0] is Status.error


def test_every_assertion_accepts_weight_severity_and_axis() -> None:
    for kind, fields in {
        "contains": {"value": "x"},
        "equals": {"value": "x"},
        "jsonSchema": {"schema": {}},
        "toolArgs": {"tool": "t"},
        "trajectory": {"tools": []},
        "maxSteps": {"max": 1},
        "latency": {"maxMs": 1},
    }.items():
        parsed = ASSERTION.validate_python(
            {"type": kind, **fields, "weight": 2, "severity": "high", "axis": "safety"}
        )
        assert (parsed.weight, parsed.severity.value, parsed.axis) == (2, "high", "safety")
        assert json.loads(parsed.model_dump_json(by_alias=True))["type"] == kind


def test_each_pattern_of_a_suite_larger_than_the_cache_is_compiled_once() -> None:
    """A suite loads every fixture before it scores any: with more distinct patterns than
    the cache holds, each must still be compiled once, not once to load and again to score."""
    count = compiled_pattern.cache_info().maxsize + 100
    assert count is not None
    compiled_pattern.cache_clear()
    loaded = [
        ASSERTION.validate_python({"type": "regex", "pattern": rf"case {n}\b"})
        for n in range(count)
    ]
    results = [check(a, trace_of(final=f"case {n}")) for n, a in enumerate(loaded)]

    assert [status for status, _ in results] == [Status.passed] * count
    assert compiled_pattern.cache_info().misses == count


def test_a_tool_s_latency_bounds_each_call_of_that_tool_only() -> None:
    trace = Trace()
    trace.add(StepType.tool_result, tool="search", output="x", duration_ms=40.0)
    trace.add(StepType.tool_result, tool="export", output="x", duration_ms=900.0)
    trace.add(StepType.tool_result, tool="search", output="x", duration_ms=120.0)
    bound = {"type": "latency", "tool": "search", "maxMs": 100}

    assert run(bound, trace) == (
        Status.failed,
        "slowest call of search (step #3) took 120 ms > 100 ms",
    )
    assert run({**bound, "maxMs": 150}, trace)[0] is Status.passed  # export is not bounded
    assert run({**bound, "tool": "lookup"}, trace) == (
        Status.failed,
        "tool 'lookup' was not called, so no call of it was in time",
    )
    untimed = Trace()
    untimed.add(StepType.tool_result, tool="search", output="x")
    assert run(bound, untimed)[0] is Status.error
    with pytest.raises(ValidationError, match="drop `scope: run`"):
        ASSERTION.validate_python({**bound, "scope": "run"})
