"""OpenAI Responses (`POST /v1/responses`), whole and streamed: what the OpenAI Agents SDK,
Pydantic AI's `openai:` models and the Vercel AI SDK's `openai(...)` send by default.

A request's `input` is a string or a list of items: messages (`role`, `content` as a string
or `input_text` / `output_text` parts), `function_call` items the model asked for and
`function_call_output` items the agent answered with (and a custom tool's
`custom_tool_call` and `custom_tool_call_output`, its free-text `input` read as the
arguments' `input`); `instructions` is the system prompt. A reply's `output` holds `message`
items (`output_text` parts) and `function_call` (or `custom_tool_call`) items. A request
that offers any other tool than a function or custom one (`mcp`, `web_search`,
`local_shell`, …) is refused, since its calls would not be the run's steps, and a reply item
that is no message, reasoning or call the proxy reads is an error of the run. A stream is
typed events (`response.created`, `response.output_text.delta`, …) ending in
`response.completed` (or `.incomplete` / `.failed`), which carries the whole response.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from evalward.errors import WireError
from evalward.http.sse import Event
from evalward.providers.base import (
    ChatMessage,
    ChatRequest,
    ChatResponse,
    RunLabels,
    ToolCall,
    ToolSpec,
)
from evalward.rundata.trace import tool_arguments
from evalward.runtime.proxy.wire.base import (
    Kind,
    SeenResult,
    Turn,
    TypedEvents,
    chat_request,
    event_object,
    items,
    lenient_text,
    mapping,
    names_in,
    text_of,
    tool_spec,
    unread_parts,
)
from evalward.text.cuts import cap_chars

FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")
READ_TOOLS = ("function", "custom", "namespace")
"""The tools whose calls a reply holds as items the proxy reads (a namespace groups function
and custom tools); any other is one the provider calls itself (`mcp`, `web_search`, …) or
whose calls come back as items of their own (`local_shell`, `computer_use_preview`, …)."""
READ_ITEMS = ("message", "reasoning", "compaction", "function_call", "custom_tool_call")
"""The items of a reply's `output` the proxy reads, or that call nothing: any other is a call
it does not observe (`mcp_call`, `web_search_call`, `local_shell_call`, …)."""


def events_of(reply: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A whole `response` as the events the API streams it in, numbered in order."""
    events: list[dict[str, Any]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    opening = {**reply, "status": "in_progress", "output": [], "usage": None}
    emit("response.created", response=opening)
    emit("response.in_progress", response=opening)
    for index, item in enumerate(items(reply.get("output"))):
        item_id = str(item.get("id") or f"item_{index}")
        if item.get("type") == "message":
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            for number, part in enumerate(items(item.get("content"))):
                where = {"item_id": item_id, "output_index": index, "content_index": number}
                text = str(part.get("text") or "")
                emit("response.content_part.added", **where, part={**part, "text": ""})
                emit("response.output_text.delta", **where, delta=text, logprobs=[])
                emit("response.output_text.done", **where, text=text, logprobs=[])
                emit("response.content_part.done", **where, part=dict(part))
        elif item.get("type") == "function_call":
            arguments = str(item.get("arguments") or "")
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            where = {"item_id": item_id, "output_index": index}
            emit("response.function_call_arguments.delta", **where, delta=arguments)
            emit(
                "response.function_call_arguments.done",
                **where,
                arguments=arguments,
                name=item.get("name"),
            )
        else:
            emit("response.output_item.added", output_index=index, item=dict(item))
        emit("response.output_item.done", output_index=index, item=dict(item))
    status = reply.get("status")
    final = f"response.{status}" if status in ("incomplete", "failed") else "response.completed"
    emit(final, response=dict(reply))
    return events


class Responses(TypedEvents):
    kind = Kind.responses

    @staticmethod
    def accumulator(body: Mapping[str, Any]) -> _Events:
        del body
        return _Events()

    events_of = staticmethod(events_of)

    @staticmethod
    def unobserved(body: Mapping[str, Any]) -> str | None:
        if body.get("background") not in (None, False):
            return (
                "evalward's model proxy does not serve `background` responses: the reply is "
                "written after the call is answered and read from a route the proxy does not "
                "serve, so what it says and what it costs would go unseen and uncounted; "
                "leave `background` out (stream the reply if it is long)"
            )
        for index, tool in enumerate(items(body.get("tools"))):
            if tool.get("type") not in READ_TOOLS:
                return (
                    f"evalward's model proxy does not serve tools[{index}], a "
                    f"`{cap_chars(str(tool.get('type')), 60)}` tool: it reads function and "
                    "custom tools' calls as the run's tool calls, and this tool's would go "
                    "unseen (the provider makes them itself, or the reply holds them as items "
                    "of their own); offer what it does as a function tool the agent runs"
                )
        return None

    @staticmethod
    def turn(reply: Mapping[str, Any], request: Mapping[str, Any] | None = None) -> Turn:
        del request
        texts: list[str] = []
        calls: list[ToolCall] = []
        output = items(reply.get("output"))
        for item in output:
            if item.get("type") == "message":
                texts += [
                    lenient_text(part.get("text") or part.get("refusal"))
                    for part in items(item.get("content"))
                ]
            elif item.get("type") in ("function_call", "custom_tool_call"):
                calls.append(_call(item))
        stop = _stop_reason(reply, bool(calls))
        return Turn("".join(texts), tuple(calls), stop, unread_parts(output, READ_ITEMS, "item"))

    @staticmethod
    def offered(body: Mapping[str, Any]) -> list[str]:
        """Each function and custom tool's name, a namespace's as its calls are named
        (`crm.delete_account`)."""
        names = []
        for tool in items(body.get("tools")):
            if tool.get("type") == "namespace":
                names += [f"{tool.get('name')}.{name}" for name in names_in(tool.get("tools"))]
            elif tool.get("name"):
                names.append(str(tool["name"]))
        return names

    @staticmethod
    def results(body: Mapping[str, Any]) -> list[SeenResult]:
        return [
            SeenResult(str(item.get("call_id") or ""), _output_text(item.get("output")))
            for item in items(body.get("input"))
            if item.get("type") in ("function_call_output", "custom_tool_call_output")
        ]

    @staticmethod
    def chat_request(body: Mapping[str, Any], labels: RunLabels) -> ChatRequest:
        max_tokens = body.get("max_output_tokens")
        return chat_request(body, labels, _messages(body), _tools(body), max_tokens)

    @staticmethod
    def reply(response: ChatResponse, body: Mapping[str, Any], number: int) -> dict[str, Any]:
        output: list[dict[str, Any]] = []
        if response.content:
            output.append(
                {
                    "id": f"msg_evalward_{number}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": response.content, "annotations": []}
                    ],
                }
            )
        output += [
            {
                "id": f"fc_evalward_{number}_{index}",
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": json.dumps(call.arguments),
                "status": "completed",
            }
            for index, call in enumerate(response.tool_calls)
        ]
        return {
            "id": f"resp_evalward_{number}",
            "object": "response",
            "created_at": int(time.time()),
            "model": str(body.get("model", "")),
            "status": "completed",
            "output": output,
            "parallel_tool_calls": body.get("parallel_tool_calls") is not False,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": list(items(body.get("tools"))),
            "usage": {
                "input_tokens": response.usage.input_tokens,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": response.usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": response.usage.total_tokens,
            },
        }


def _call(item: Mapping[str, Any]) -> ToolCall:
    """A `function_call` or `custom_tool_call` item (a custom tool's free-text `input` is its
    arguments' `input`), named with its `namespace` when it has one (`crm.delete_account`)."""
    name = str(item.get("name") or "")
    if name and item.get("namespace"):
        name = f"{item['namespace']}.{name}"
    if item.get("type") == "custom_tool_call":
        arguments = {"input": lenient_text(item.get("input"))}
    else:
        arguments = tool_arguments(item.get("arguments"))
    return ToolCall(str(item.get("call_id") or item.get("id") or ""), name, arguments)


def _stop_reason(reply: Mapping[str, Any], called: bool) -> str:
    """A Chat Completions-like stop reason: `length` for a reply cut at its token limit."""
    if reply.get("status") == "incomplete":
        reason = mapping(reply.get("incomplete_details")).get("reason")
        return "length" if reason == "max_output_tokens" else str(reason or "incomplete")
    return "tool_calls" if called else str(reply.get("status") or "")


def _output_text(output: object) -> str:
    return lenient_text(output) if isinstance(output, str | list) else json.dumps(output)


class _Events:
    """Responses stream events added up into a `response`: the final event carries it
    whole; items that were done before a stream broke off are kept when it does not."""

    def __init__(self) -> None:
        self.error: str | None = None
        self._response: dict[str, Any] | None = None
        self._done: dict[int, dict[str, Any]] = {}
        self._final = False

    def feed(self, event: Event) -> bool:
        if (data := event_object(event)) is None:
            return True
        kind = data.get("type") or event.event
        if kind in ("response.created", "response.in_progress", *FINAL_EVENTS):
            self._response = dict(mapping(data.get("response")))
            self._final = self._final or kind in FINAL_EVENTS
            error = mapping(self._response.get("error"))
            if kind == "response.failed" and error:
                self.error = lenient_text(error.get("message") or error)
        elif kind == "response.output_item.done":
            index = data.get("output_index")
            self._done[index if isinstance(index, int) else len(self._done)] = dict(
                mapping(data.get("item"))
            )
        elif kind == "error":
            self.error = lenient_text(data.get("message") or data)
        return True

    def result(self) -> dict[str, Any] | None:
        if self._response is None:
            return None
        if self._final:
            return self._response
        return {**self._response, "output": [item for _, item in sorted(self._done.items())]}


def _messages(body: Mapping[str, Any]) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    if body.get("instructions"):
        out.append(ChatMessage(role="system", content=text_of(body["instructions"])))
    given = body.get("input")
    if isinstance(given, str):
        return [*out, ChatMessage(role="user", content=given)]
    if not isinstance(given, list) or not given:
        raise WireError("`input` must be a string or a non-empty list of items")
    for index, item in enumerate(given):
        if not isinstance(item, dict):
            raise WireError(f"input[{index}] must be an object")
        kind = item.get("type", "message")
        if kind == "message":
            out.append(_message(item, index))
        elif kind == "function_call":
            call = ToolCall(
                id=str(item.get("call_id") or item.get("id") or f"call_{index}"),
                name=str(item.get("name") or ""),
                arguments=tool_arguments(item.get("arguments")),
            )
            last = out[-1] if out else None
            if last is not None and last.role == "assistant":
                out[-1] = ChatMessage("assistant", last.content, (*last.tool_calls, call))
            else:
                out.append(ChatMessage("assistant", "", (call,)))
        elif kind == "function_call_output":
            out.append(
                ChatMessage(
                    role="tool",
                    content=_output_text(item.get("output")),
                    tool_call_id=str(item.get("call_id") or ""),
                )
            )
        # reasoning items and references to stored items carry nothing a mock reply reads
    return out


def _message(item: Mapping[str, Any], index: int) -> ChatMessage:
    role = item.get("role")
    content = text_of(item.get("content"))
    if role in ("system", "developer"):
        return ChatMessage(role="system", content=content)
    if role in ("user", "assistant"):
        return ChatMessage(role=role, content=content)
    raise WireError(f"input[{index}].role {role!r} is not system, developer, user or assistant")


def _tools(body: Mapping[str, Any]) -> list[ToolSpec]:
    tools = []
    for index, tool in enumerate(items(body.get("tools"))):
        if tool.get("type") != "function":
            raise WireError(
                f"tools[{index}] is a {tool.get('type')!r} tool, which a mock script cannot "
                "answer: only function tools are served without a provider"
            )
        if not tool.get("name"):
            raise WireError(f"tools[{index}] must have a `name`")
        tools.append(tool_spec(tool, "parameters"))
    return tools
