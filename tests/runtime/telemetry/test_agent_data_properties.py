"""Property-based: every reader of what an agent supplies takes any JSON shape. An OTLP
export (JSON or protobuf), a trace event on stdout or the events channel, an http agent's
reply and a request body the model proxy reads either go into the run's trace, whose
record then writes, or are refused with that reader's own located error: never another
exception, which would end the whole run. So are the files a pull request builds its
environment from (a requirements file, a `pyproject.toml`, a `package.json`, their locks):
taken, or that side's error naming the file."""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from evalward.errors import AgentRunError, ProtocolError, WireError
from evalward.providers.base import RunLabels
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.command import CommandOutput
from evalward.runtime.environments.environment_inputs import check_input
from evalward.runtime.proxy.wire import FORMATS, embeddings
from evalward.runtime.proxy.wire.unreported import request_tokens
from evalward.runtime.telemetry import otlp
from evalward.runtime.telemetry.otel import from_otel_spans
from evalward.runtime.telemetry.protocol import apply_event, apply_response
from evalward.text import jsontext

pytestmark = pytest.mark.hostile

PROPERTY = settings(max_examples=150, deadline=None)
KEYS = [
    # OTLP/JSON and the flat span forms
    "resourceSpans", "scopeSpans", "instrumentationLibrarySpans", "spans", "attributes",
    "key", "value", "stringValue", "intValue", "boolValue", "doubleValue", "bytesValue",
    "arrayValue", "kvlistValue", "values", "name", "traceId", "spanId", "context", "trace_id",
    "span_id", "startTimeUnixNano", "start_time", "gen_ai.operation.name", "gen_ai.tool.name",
    "gen_ai.tool.call.id", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.prompt", "gen_ai.completion",
    "gen_ai.prompt.0.role", "gen_ai.prompt.0.content", "role", "parts", "content", "text",
    # trace events and http replies
    "type", "tool", "id", "arguments", "output", "is_error", "isError", "message", "model",
    "started_at", "duration_ms", "input_tokens", "output_tokens", "cost_usd", "trace", "final",
    # request bodies the proxy reads
    "messages", "input", "tool_calls", "tool_call_id", "function", "call_id", "stream",
    "stream_options", "include_usage", "tools", "system", "instructions", "max_tokens",
    "temperature", "tool_use_id", "previous_response_id",
]  # fmt: skip
WORDS = [
    "execute_tool", "chat", "final", "tool_call", "tool_result", "usage", "assistant", "error",
    "user", "function_call_output", "tool_use", "text", "zz", "3", "1e999",
]  # fmt: skip
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.sampled_from([10**400, -1, 0])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(WORDS)
    | st.text(max_size=12)
)
FINITE = SCALARS.filter(lambda v: not isinstance(v, float) or math.isfinite(v))
"""What reaches a reader: evalward's JSON parser refuses NaN and infinities first."""


def json_of(scalars: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=5)
        ),
        max_leaves=30,
    )


RAW_JSON = json_of(SCALARS)
JSON = json_of(FINITE)
OBJECTS = st.dictionaries(st.sampled_from(KEYS), JSON, max_size=6)
PARTS = st.dictionaries(st.sampled_from(KEYS), JSON | st.lists(OBJECTS, max_size=3), max_size=6)
BODIES = OBJECTS | st.fixed_dictionaries(
    {"model": st.text(max_size=8)},
    optional={
        "messages": st.lists(PARTS, max_size=4),
        "input": st.lists(PARTS, max_size=4) | JSON,
        "tools": st.lists(PARTS, max_size=3),
        "system": JSON | st.lists(PARTS, max_size=2),
        "stream": JSON,
        "stream_options": JSON,
    },
)


def as_agents_send(value: Any) -> Any:
    """`value` as it reaches a reader: JSON an agent wrote, parsed as evalward parses it
    (what is no JSON, `NaN` or `1e999`, is refused before any reader sees it)."""
    try:
        return jsontext.loads(json.dumps(value))
    except ValueError:
        assume(False)


def written(trace: Trace) -> None:
    """The run's record holds the trace: it must write as strict JSON, as results.json is."""
    json.dumps(trace.model_dump(mode="json"), allow_nan=False)


def exported(body: bytes, content_type: str = "application/json") -> Trace:
    """A run's trace after one export, as its receiver takes it and the run's end merges
    it: the spans' steps, or one located error step, and a 400 to the exporter."""
    trace, exports = Trace(), otlp.KeptSpans()
    problem = otlp.take_export(trace, exports, body, content_type, "")
    otlp.merge_exports(trace, exports)
    if problem is not None:
        (error,) = trace.steps
        assert error.type is StepType.error and problem in error.content
    written(trace)
    return trace


@PROPERTY
@given(RAW_JSON)
def test_an_otlp_json_export_is_merged_or_a_located_error(document: Any) -> None:
    exported(json.dumps(document).encode())


@PROPERTY
@given(st.dictionaries(st.sampled_from(KEYS[:30]), JSON, max_size=4))
def test_an_otlp_resource_spans_document_is_merged_or_a_located_error(inner: Any) -> None:
    for document in (
        {"resourceSpans": [{"scopeSpans": [{"spans": [inner]}]}]},
        {"resourceSpans": [inner]},
        {"resourceSpans": [{"scopeSpans": [inner]}]},
        {"spans": [{"name": "execute_tool x", "attributes": [{"key": "k", "value": inner}]}]},
    ):
        exported(json.dumps(document).encode())


@PROPERTY
@given(st.binary(max_size=200))
def test_an_otlp_protobuf_export_is_merged_or_a_located_error(body: bytes) -> None:
    exported(body, otlp.PROTOBUF)


@PROPERTY
@given(JSON)
def test_a_span_file_to_promote_is_read_or_refused(document: Any) -> None:
    try:
        trace, _ = from_otel_spans(as_agents_send(document))
    except ProtocolError:
        return
    written(trace)


@PROPERTY
@given(st.lists(OBJECTS | JSON, max_size=6))
def test_trace_events_are_applied_or_refused_with_a_protocol_error(events: list[Any]) -> None:
    trace = Trace()
    for event in as_agents_send(events):
        with contextlib.suppress(ProtocolError):
            apply_event(trace, event)
    written(trace)


@PROPERTY
@given(JSON | OBJECTS)
def test_an_http_agents_reply_is_applied_or_refused_with_a_protocol_error(body: Any) -> None:
    trace = Trace()
    with contextlib.suppress(ProtocolError):
        apply_response(trace, as_agents_send(body))
    written(trace)


@PROPERTY
@given(st.lists(OBJECTS | JSON, max_size=6), st.sampled_from(["events", "stdout"]))
def test_lines_on_stdout_and_the_events_channel_are_taken_or_a_located_problem(
    events: list[Any], channel: str
) -> None:
    for stdout in ("events", "mixed", "text"):
        output = CommandOutput(Trace(), stdout)
        for event in events:
            output.take(json.dumps(event).encode() + b"\n", channel)
        assert all("line" in problem for problem in output.problem)
        output.answer()
        written(output.trace)


@PROPERTY
@given(BODIES)
def test_a_request_body_the_proxy_reads_is_read_or_refused_as_a_bad_request(
    body: dict[str, Any],
) -> None:
    body = as_agents_send(body)
    request_tokens(body)
    labels = RunLabels(agent="a", fixture="f")
    with contextlib.suppress(WireError):  # a mock script's embeddings
        embeddings.mock_reply(body)
    for fmt in FORMATS.values():
        fmt.streamed(body)
        fmt.results(body)
        with contextlib.suppress(WireError):
            fmt.upstream(dict(body))
            fmt.accumulator(body)
        with contextlib.suppress(WireError):  # what a mock script is asked
            fmt.chat_request(body, labels)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=3000))
@example(depth=58)
@example(depth=59)
def test_json_nested_deeply_is_refused_before_it_reaches_a_trace_that_could_not_be_written(
    depth: int,
) -> None:
    nested = "[" * depth + "]" * depth
    event = '{"type": "tool_call", "tool": "t", "arguments": {"a": ' + nested + "}}"
    output = CommandOutput(Trace(), "events")
    output.take(event.encode(), "events")
    assert len(output.trace.steps) + len(output.problem) == 1
    written(output.trace)
    attribute = '{"key": "gen_ai.tool.call.arguments", "value": {"stringValue": 1, "x": %s}}'
    span = '{"name": "execute_tool t", "attributes": [%s]}' % (attribute % nested)
    trace = exported(b'{"spans": [%s]}' % span.encode())
    refused = depth + 6 > jsontext.AGENT_DEPTH  # the document holds it six deep
    assert any(s.type is StepType.error for s in trace.steps) == refused


ENVIRONMENT_FILES = [
    "package.json", "package-lock.json", "npm-shrinkwrap.json", "pyproject.toml", "uv.lock",
    "requirements.txt", ".python-version",
]  # fmt: skip


def toml_of(value: Any) -> str:
    """`value` as a TOML author might write it: JSON arrays, strings and numbers are TOML's
    too; objects and `null` are not (a malformed file)."""
    return f"[tool]\nvalue = {json.dumps(value)}\n"


@PROPERTY
@given(
    st.sampled_from(ENVIRONMENT_FILES),
    RAW_JSON.map(lambda v: json.dumps(v).encode())
    | RAW_JSON.map(lambda v: toml_of(v).encode())
    | st.binary(max_size=200)
    | st.integers(min_value=1, max_value=3000).map(lambda d: b"[" * d + b"]" * d),
)
def test_an_environment_file_is_taken_or_refused_naming_it(name: str, content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "agent").mkdir()
        (Path(folder) / "agent" / name).write_bytes(content)
        try:
            check_input(Path(folder).resolve(), f"agent/{name}")
        except AgentRunError as exc:
            assert str(exc).startswith(f"agent/{name}: "), exc
