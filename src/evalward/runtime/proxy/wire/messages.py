"""Anthropic Messages (`POST /v1/messages`), whole and streamed.

A stream is `message_start` (the message, input tokens), then per content block
`content_block_start`, deltas (`text_delta`, `input_json_delta` fragments of a tool call's
input, thinking deltas) and `content_block_stop`, then `message_delta` (stop reason, output
tokens) and `message_stop`; `ping` and `error` may come between.

A request with `mcp_servers` or a server tool (one the provider calls itself) is refused, and
a reply block that is no text, thinking or `tool_use` is an error of the run: those calls
would not be the run's steps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalward.errors import WireError
from evalward.http.sse import Event
from evalward.providers.anthropic import cache_tokens, parse_response
from evalward.providers.base import (
    ChatMessage,
    ChatRequest,
    ChatResponse,
    RunLabels,
    ToolCall,
    ToolSpec,
)
from evalward.rundata.trace import Usage
from evalward.runtime.proxy.wire.base import (
    PASSED_ON,
    Kind,
    SeenResult,
    Turn,
    TypedEvents,
    chat_request,
    count,
    event_object,
    index_of,
    items,
    lenient_text,
    list_field,
    mapping,
    names_in,
    text_of,
    tool_spec,
    unread_parts,
)
from evalward.text import jsontext
from evalward.text.cuts import cap_chars

CLIENT_TOOLS = ("bash_", "text_editor_", "computer_", "memory_")
"""Anthropic's tools the agent runs itself (a `type` per version): their calls come back as
`tool_use` blocks, which the proxy reads. Any other typed tool is a server tool, which the
provider calls itself (`web_search_…`, `web_fetch_…`, `code_execution_…`, `mcp_toolset`)."""
READ_BLOCKS = ("text", "thinking", "redacted_thinking", "compaction", "tool_use")
"""The blocks of a reply the proxy reads, or that call nothing: any other is a call it does
not observe (`server_tool_use`, `mcp_tool_use`, their results)."""


def events_of(reply: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A whole `message` as the events the API streams it in."""
    usage = mapping(reply.get("usage"))
    start = {
        **{k: v for k, v in reply.items() if k not in ("content", "stop_reason", "usage")},
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": count(usage.get("input_tokens")), "output_tokens": 0},
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(items(reply.get("content"))):
        kind = block.get("type")
        if kind == "tool_use":
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input", {}))}
        elif kind == "text":
            opened = {**block, "text": ""}
            delta = {"type": "text_delta", "text": str(block.get("text") or "")}
        else:
            opened, delta = dict(block), {}
        events.append({"type": "content_block_start", "index": index, "content_block": opened})
        if delta:
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": reply.get("stop_reason"),
                "stop_sequence": reply.get("stop_sequence"),
            },
            "usage": {"output_tokens": count(usage.get("output_tokens"))},
        }
    )
    events.append({"type": "message_stop"})
    return events


class Messages(TypedEvents):
    kind = Kind.messages

    @staticmethod
    def accumulator(body: Mapping[str, Any]) -> _Blocks:
        del body
        return _Blocks()

    events_of = staticmethod(events_of)

    @staticmethod
    def usage(reply: Mapping[str, Any]) -> Usage:
        """`input_tokens` and `output_tokens`, with what the prompt cache cost beside them
        (`cache_tokens`: Anthropic bills it, and its `input_tokens` leaves it out)."""
        used = TypedEvents.usage(reply)
        cached = cache_tokens(mapping(reply.get("usage")), PASSED_ON)
        return used.model_copy(update={"input_tokens": used.input_tokens + cached})

    @staticmethod
    def unobserved(body: Mapping[str, Any]) -> str | None:
        if body.get("mcp_servers"):
            return (
                "evalward's model proxy does not serve `mcp_servers`: the provider would call "
                "those servers' tools itself, and evalward does not read those calls as the "
                "run's tool calls; connect to the server in the agent and offer its tools as tools"
            )
        for index, tool in enumerate(items(body.get("tools"))):
            kind = tool.get("type")
            client = isinstance(kind, str) and kind.startswith(CLIENT_TOOLS)
            if kind in (None, "custom") or client:
                continue
            return (
                f"evalward's model proxy does not serve tools[{index}], a "
                f"`{cap_chars(str(kind), 60)}` tool: the provider calls it itself, and evalward "
                "does not read those calls as the run's tool calls; offer what it does as a tool "
                "the agent runs"
            )
        return None

    @staticmethod
    def turn(reply: Mapping[str, Any], request: Mapping[str, Any] | None = None) -> Turn:
        del request
        said = parse_response(reply, "", PASSED_ON)
        unread = unread_parts(items(reply.get("content")), READ_BLOCKS, "block")
        return Turn(said.content, said.tool_calls, said.stop_reason, unread)

    @staticmethod
    def offered(body: Mapping[str, Any]) -> list[str]:
        return names_in(body.get("tools"))

    @staticmethod
    def results(body: Mapping[str, Any]) -> list[SeenResult]:
        return [
            SeenResult(
                str(block.get("tool_use_id") or ""),
                lenient_text(block.get("content")),
                block.get("is_error") is True,
            )
            for message in items(body.get("messages"))
            if message.get("role") == "user"
            for block in items(message.get("content"))
            if block.get("type") == "tool_result"
        ]

    @staticmethod
    def chat_request(body: Mapping[str, Any], labels: RunLabels) -> ChatRequest:
        max_tokens = body.get("max_tokens")
        return chat_request(body, labels, _messages(body), _tools(body), max_tokens)

    @staticmethod
    def reply(response: ChatResponse, body: Mapping[str, Any], number: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if response.content:
            content.append({"type": "text", "text": response.content})
        content += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
            for c in response.tool_calls
        ]
        return {
            "id": f"msg_evalward_{number}",
            "type": "message",
            "role": "assistant",
            "model": str(body.get("model", "")),
            "content": content,
            "stop_reason": "tool_use" if response.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": response.usage.input_tokens,
                "output_tokens": response.usage.output_tokens,
            },
        }


class _Blocks:
    """Message stream events added up into a `message`."""

    def __init__(self) -> None:
        self.error: str | None = None
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, str] = {}

    def feed(self, event: Event) -> bool:
        if (data := event_object(event)) is None:
            return True
        kind = data.get("type") or event.event
        if kind == "message_start":
            self._message = dict(mapping(data.get("message")))
            self._message["usage"] = dict(mapping(self._message.get("usage")))
        elif kind == "content_block_start":
            self._blocks[index_of(data)] = dict(mapping(data.get("content_block")))
        elif kind == "content_block_delta":
            self._delta(index_of(data), mapping(data.get("delta")))
        elif kind == "content_block_stop":
            self._close(index_of(data))
        elif kind == "message_delta" and self._message is not None:
            self._message.update(mapping(data.get("delta")))
            self._message["usage"].update(mapping(data.get("usage")))
        elif kind == "error":
            self.error = lenient_text(mapping(data.get("error")).get("message") or data)
        return True

    def _delta(self, index: int, delta: Mapping[str, Any]) -> None:
        block = self._blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = str(block.get("text") or "") + str(delta.get("text") or "")
        elif kind == "input_json_delta":
            self._json[index] = self._json.get(index, "") + str(delta.get("partial_json") or "")
        elif kind == "thinking_delta":
            block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking") or "")
        elif kind == "signature_delta":
            block["signature"] = str(delta.get("signature") or "")

    def _close(self, index: int) -> None:
        partial = self._json.pop(index, None)
        if partial is None or index not in self._blocks:
            return
        try:
            self._blocks[index]["input"] = jsontext.loads(partial) if partial.strip() else {}
        except ValueError:
            self._blocks[index]["input"] = {"_unparsed": partial}

    def result(self) -> dict[str, Any] | None:
        if self._message is None:
            return None
        for index in list(self._json):
            self._close(index)
        return {**self._message, "content": [b for _, b in sorted(self._blocks.items())]}


def _messages(body: Mapping[str, Any]) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    system = body.get("system")
    if system:
        out.append(ChatMessage(role="system", content=text_of(system)))
    for index, message in enumerate(list_field(body, "messages", required=True)):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise WireError(f"messages[{index}] must be an object with role user or assistant")
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in blocks:
            if not isinstance(block, dict):
                raise WireError(f"messages[{index}].content must hold content blocks")
            if block.get("type") == "text":
                texts.append(text_of(block.get("text")))
            elif block.get("type") == "tool_use":
                arguments = block.get("input")
                calls.append(
                    ToolCall(
                        id=str(block.get("id") or ""),
                        name=str(block.get("name") or ""),
                        arguments=arguments if isinstance(arguments, dict) else {},
                    )
                )
            elif block.get("type") == "tool_result":
                out.append(
                    ChatMessage(
                        role="tool",
                        content=text_of(block.get("content")),
                        tool_call_id=str(block.get("tool_use_id") or ""),
                    )
                )
        if message["role"] == "assistant":
            out.append(ChatMessage("assistant", "".join(texts), tool_calls=tuple(calls)))
        elif texts:
            out.append(ChatMessage("user", "".join(texts)))
    return out


def _tools(body: Mapping[str, Any]) -> list[ToolSpec]:
    tools = []
    for index, tool in enumerate(list_field(body, "tools")):
        if not isinstance(tool, dict) or not tool.get("name"):
            raise WireError(f"tools[{index}] must be an object with a `name`")
        tools.append(tool_spec(tool, "input_schema"))
    return tools
