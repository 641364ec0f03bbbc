"""OpenTelemetry GenAI spans (a JSON export) converted into the one Trace model.

Two export shapes are read: OTLP/JSON (`resourceSpans[].scopeSpans[].spans[]`, attributes as
`[{key, value: {stringValue | intValue | ...}}]`) and the flat form of the console and file
exporters (a list of spans, or `{"spans": [...]}`, attributes as a plain object).

Following the GenAI semantic conventions: a span whose `gen_ai.operation.name` is
`execute_tool` (or whose name starts with `execute_tool`) is one tool call — name from
`gen_ai.tool.name`, arguments from `gen_ai.tool.call.arguments`, result from
`gen_ai.tool.call.result`. Model spans (`chat`, `text_completion`, `generate_content`,
`invoke_agent`) carry `gen_ai.input.messages` / `gen_ai.output.messages` (role + parts); the
first one's user text is the input and the last one's assistant text the final answer.
Older instrumentations' `gen_ai.prompt` / `gen_ai.completion` attributes are read too.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from evalward.errors import NoSpans, ProtocolError
from evalward.rundata.trace import StepType, Trace, tool_arguments
from evalward.runtime.telemetry.protocol import short
from evalward.text import jsontext

MODEL_OPERATIONS = ("chat", "text_completion", "generate_content", "invoke_agent")


@dataclass(frozen=True)
class Span:
    trace_id: str
    name: str
    start: float
    attributes: dict[str, Any]

    @property
    def is_tool(self) -> bool:
        """A tool's execution: `execute_tool` by operation or name, or a span that names a
        tool and is no model call."""
        if self.operation == "execute_tool":
            return True
        return "gen_ai.tool.name" in self.attributes and self.operation not in MODEL_OPERATIONS

    @property
    def operation(self) -> str:
        operation = str(self.attributes.get("gen_ai.operation.name") or "")
        if not operation and self.name.startswith("execute_tool"):
            return "execute_tool"
        return operation


def looks_like_spans(document: object) -> bool:
    if isinstance(document, Mapping):
        if "resourceSpans" in document:
            return True
        document = document.get("spans")
    return (
        isinstance(document, list)
        and bool(document)
        and all(isinstance(s, Mapping) for s in document)
        and any("attributes" in s and ("name" in s or "span_id" in s) for s in document)
    )


def read_spans(document: object) -> list[Span]:
    """The spans of an export, in start order. A part not in its shape is a ProtocolError
    that says where (`resourceSpans[0].scopeSpans[1].spans[2].attributes[3]`) and what."""
    raw: list[tuple[str, Mapping[str, Any]]] = []
    if isinstance(document, Mapping) and "resourceSpans" in document:
        for r, resource in _objects(document.get("resourceSpans"), "resourceSpans"):
            key = "scopeSpans" if "scopeSpans" in resource else "instrumentationLibrarySpans"
            for c, scope in _objects(resource.get(key), f"{r}.{key}"):
                raw += _objects(scope.get("spans"), f"{c}.spans")
    elif isinstance(document, Mapping):
        raw = _objects(document.get("spans"), "spans", lenient=True)
    elif isinstance(document, list):
        raw = _objects(document, "", lenient=True)
    spans = [_span(span, where) for where, span in raw]
    if not spans:
        raise NoSpans("no spans found (expected OTLP/JSON `resourceSpans` or a span list)")
    return sorted(spans, key=lambda s: s.start)


def _objects(
    value: object, where: str, *, lenient: bool = False
) -> list[tuple[str, Mapping[str, Any]]]:
    """`value`, a list of objects (or nothing), each with where it is; with `lenient`, what
    is not an object is passed over (a span list may hold other lines of a file)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ProtocolError(f"{where or 'the document'} must be a list, got {short(value)}")
    out = []
    for index, item in enumerate(value):
        if isinstance(item, Mapping):
            out.append((f"{where}[{index}]", item))
        elif not lenient:
            raise ProtocolError(f"{where}[{index}] must be an object, got {short(item)}")
    return out


def from_otel_spans(document: object) -> tuple[Trace, str]:
    """The trace and its trace id."""
    spans = read_spans(document)
    trace = Trace()
    models = [s for s in spans if s.operation in MODEL_OPERATIONS or _has_messages(s)]
    if models:
        for message in _messages(models[0], "gen_ai.input.messages", "gen_ai.prompt"):
            if message.get("role") == "user":
                trace.add(StepType.input, content=_parts_text(message))
    for step_type, fields in tool_steps(spans):
        trace.add(step_type, **fields)
    if models:
        answers = [
            _parts_text(m)
            for m in _messages(models[-1], "gen_ai.output.messages", "gen_ai.completion")
            if m.get("role", "assistant") == "assistant"
        ]
        answer = "".join(a for a in answers if a)
        if answer:
            trace.add(StepType.final, content=answer)
    return trace, spans[0].trace_id


TOOL_ATTRIBUTES = (
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
)
"""The attributes `tool_steps` reads of a tool's span (and `Span.is_tool` of any span)."""


def tool_spans(spans: Iterable[Span]) -> list[Span]:
    """The spans `tool_steps` makes steps of, each with only the attributes it reads: what
    a run keeps of its exports until its end gives the same steps as the whole exports."""
    return [
        replace(span, attributes={k: v for k, v in span.attributes.items() if k in TOOL_ATTRIBUTES})
        for span in spans
        if span.is_tool
    ]


def tool_steps(spans: Iterable[Span]) -> Iterator[tuple[StepType, dict[str, Any]]]:
    """The tool calls (and results) the spans show, as trace steps' fields: a span per tool
    execution, named by `gen_ai.tool.name`."""
    for span in spans:
        if not span.is_tool:
            continue
        name = str(
            span.attributes.get("gen_ai.tool.name")
            or span.name.removeprefix("execute_tool").strip()
        )
        raw_id = span.attributes.get("gen_ai.tool.call.id")
        call_id = str(raw_id) if raw_id else None
        arguments = tool_arguments(span.attributes.get("gen_ai.tool.call.arguments"))
        yield StepType.tool_call, {"tool": name, "call_id": call_id, "arguments": arguments}
        result = span.attributes.get("gen_ai.tool.call.result")
        if result is not None:
            output = result if isinstance(result, str) else json.dumps(result)
            yield StepType.tool_result, {"tool": name, "call_id": call_id, "output": output}


def _span(raw: Mapping[str, Any], where: str) -> Span:
    context = raw.get("context") if isinstance(raw.get("context"), Mapping) else {}
    assert isinstance(context, Mapping)
    trace_id = str(raw.get("traceId") or context.get("trace_id") or raw.get("trace_id") or "")
    start: Any = raw.get("startTimeUnixNano") or raw.get("start_time") or 0
    try:
        start_key = float(start)
    except (TypeError, ValueError, OverflowError):
        try:  # the console exporter writes ISO timestamps
            start_key = dt.datetime.fromisoformat(str(start).replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError):
            start_key = 0.0
    attributes = _attributes(raw.get("attributes"), f"{where}.attributes")
    return Span(
        trace_id,
        str(raw.get("name") or ""),
        start_key if math.isfinite(start_key) else 0.0,
        attributes,
    )


def _attributes(raw: object, where: str) -> dict[str, Any]:
    """Attributes as OTLP/JSON writes them (`[{key, value: AnyValue}]`) or as a plain object
    (the flat exporters)."""
    if isinstance(raw, Mapping):
        return dict(raw)
    return {
        str(item.get("key")): _any_value(item.get("value"), f"{at} ({item.get('key')})")
        for at, item in _objects(raw, where)
        if "key" in item
    }


_INT64_TEXT = re.compile(r"[+-]?[0-9]{1,19}")
"""An OTLP intValue as JSON writes one (an int64, as text): ASCII digits, so `int` reads it."""


def _any_value(value: object, where: str) -> Any:
    """OTLP/JSON AnyValue: {stringValue}, {intValue: "3"}, {arrayValue: {values: [...]}}, ..."""
    if not isinstance(value, Mapping):
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        number = value["intValue"]
        if isinstance(number, str) and _INT64_TEXT.fullmatch(number.strip()):
            number = int(number)
        if isinstance(number, int) and not isinstance(number, bool) and -(2**63) <= number < 2**63:
            return number
        raise ProtocolError(f"{where}: intValue must be a 64-bit integer, got {short(number)}")
    if "arrayValue" in value:
        values = _values(value["arrayValue"], f"{where}.arrayValue")
        return [_any_value(v, f"{where}.arrayValue.values[{i}]") for i, v in enumerate(values)]
    if "kvlistValue" in value:
        pairs = _objects(_values(value["kvlistValue"], f"{where}.kvlistValue"), f"{where}.kvlist")
        return {str(kv.get("key")): _any_value(kv.get("value"), at) for at, kv in pairs}
    return None


def _values(holder: object, where: str) -> list[Any]:
    """The `values` of an arrayValue or kvlistValue (`{"values": [...]}`)."""
    if holder is None:
        return []
    values = holder.get("values") if isinstance(holder, Mapping) else holder
    if values is None:
        return []
    if not isinstance(holder, Mapping) or not isinstance(values, list):
        raise ProtocolError(f"{where} must be an object with a `values` list, got {short(holder)}")
    return values


def _has_messages(span: Span) -> bool:
    return any(k in span.attributes for k in ("gen_ai.input.messages", "gen_ai.output.messages"))


def _messages(span: Span, key: str, legacy: str) -> list[Mapping[str, Any]]:
    value = span.attributes.get(key)
    if isinstance(value, str):
        try:
            value = jsontext.loads(value)
        except ValueError:
            value = [{"role": "user" if "input" in key else "assistant", "content": value}]
    if isinstance(value, list):
        return [m for m in value if isinstance(m, Mapping)]
    return _legacy(span.attributes, legacy)


def _legacy(attributes: Mapping[str, Any], prefix: str) -> list[Mapping[str, Any]]:
    """`gen_ai.prompt` as text, or indexed `gen_ai.prompt.0.role` / `.content` attributes."""
    value = attributes.get(prefix)
    if isinstance(value, str):
        role = "user" if prefix.endswith("prompt") else "assistant"
        return [{"role": role, "content": value}]
    messages: list[Mapping[str, Any]] = []
    index = 0
    while f"{prefix}.{index}.content" in attributes or f"{prefix}.{index}.role" in attributes:
        messages.append(
            {
                "role": attributes.get(f"{prefix}.{index}.role", "user"),
                "content": attributes.get(f"{prefix}.{index}.content", ""),
            }
        )
        index += 1
    return messages


def _parts_text(message: Mapping[str, Any]) -> str:
    parts = message.get("parts")
    if isinstance(parts, Iterable) and not isinstance(parts, str | bytes):
        return "".join(
            str(p.get("content") or p.get("text") or "")
            for p in parts
            if isinstance(p, Mapping) and p.get("type", "text") == "text"
        )
    content = message.get("content")
    if isinstance(content, list):
        return "".join(
            str(p.get("text") or p.get("content") or "") for p in content if isinstance(p, Mapping)
        )
    return "" if content is None else str(content)
