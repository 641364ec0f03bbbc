"""OpenAI Chat Completions (`POST /v1/chat/completions`), whole and streamed.

A streamed call is metered by its usage chunk, which the API sends only when the request
asks for it (`stream_options.include_usage`). The proxy asks for it upstream whatever the
agent asked, and keeps the usage chunk from an agent that did not ask for it, so the agent
sees the stream it requested.

A reply's tool calls are its `tool_calls` (function and custom tools) and, in the older
function calling, its `function_call`, answered by a `function` message. A request for
several choices (`n` above 1) is refused: the trace reads one choice as what
the model said, and which of several an agent acted on cannot be known.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from evalward.errors import WireError
from evalward.http import sse
from evalward.http.sse import Event
from evalward.providers.base import (
    ChatMessage,
    ChatRequest,
    ChatResponse,
    RunLabels,
    ToolCall,
    ToolSpec,
)
from evalward.providers.openai import function_call_id, parse_response, reply_usage, wire_calls
from evalward.providers.reply_fields import shown
from evalward.rundata.trace import Usage, tool_arguments
from evalward.runtime.proxy.wire.base import (
    PASSED_ON,
    Kind,
    SeenResult,
    Turn,
    TypedEvents,
    chat_request,
    event_object,
    index_of,
    items,
    lenient_text,
    list_field,
    mapping,
    names_in,
    text_of,
    tool_spec,
)


class ChatCompletions:
    kind = Kind.chat
    streamed = staticmethod(TypedEvents.streamed)

    @staticmethod
    def upstream(body: dict[str, Any]) -> dict[str, Any]:
        if not ChatCompletions.streamed(body) or _asked_usage(body):
            return body
        options = {**mapping(body.get("stream_options")), "include_usage": True}
        return {**body, "stream_options": options}

    @staticmethod
    def accumulator(body: Mapping[str, Any]) -> _Chunks:
        return _Chunks(keep_usage=_asked_usage(body))

    @staticmethod
    def replay(body: Mapping[str, Any], reply: Mapping[str, Any]) -> list[bytes]:
        return [
            *(sse.encode(c) for c in chunks_of(reply, _asked_usage(body))),
            sse.encode("[DONE]"),
        ]

    @staticmethod
    def usage(reply: Mapping[str, Any]) -> Usage:
        return reply_usage(reply, PASSED_ON)

    @staticmethod
    def unobserved(body: Mapping[str, Any]) -> str | None:
        choices = body.get("n")
        if choices is None or (type(choices) is int and choices == 1):
            return None
        return (
            f"evalward's model proxy does not serve `n: {shown(choices)}`: it reads one choice "
            "of a reply as what the agent did, and could not tell which of several the agent "
            "acted on; ask for one choice (leave `n` out) and call again for another"
        )

    @staticmethod
    def turn(reply: Mapping[str, Any], request: Mapping[str, Any] | None = None) -> Turn:
        del request
        said = parse_response(reply, "", PASSED_ON)
        choices = len(items(reply.get("choices")))
        unread = (f"{choices} choices",) if choices > 1 else ()
        return Turn(said.content, said.tool_calls, said.stop_reason, unread)

    @staticmethod
    def results(body: Mapping[str, Any]) -> list[SeenResult]:
        """`tool` messages by their call id; a `function` message (the older function
        calling) as the result of the `function_call` of the assistant message before it."""
        seen, legacy = [], ""
        for message in items(body.get("messages")):
            role, content = message.get("role"), lenient_text(message.get("content"))
            if role == "assistant":
                call = mapping(message.get("function_call"))
                name, arguments = str(call.get("name") or ""), str(call.get("arguments") or "")
                legacy = function_call_id(name, arguments) if call else ""
            elif role == "tool":
                seen.append(SeenResult(str(message.get("tool_call_id") or ""), content))
            elif role == "function" and legacy:
                seen.append(SeenResult(legacy, content))
        return seen

    @staticmethod
    def offered(body: Mapping[str, Any]) -> list[str]:
        """Each tool's `function` (or `custom`) name, and the older `functions`' names."""
        defined = [mapping(tool.get(str(tool.get("type")))) for tool in items(body.get("tools"))]
        return names_in(defined) + names_in(body.get("functions"))

    @staticmethod
    def chat_request(body: Mapping[str, Any], labels: RunLabels) -> ChatRequest:
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
        return chat_request(body, labels, _messages(body), _tools(body), max_tokens)

    @staticmethod
    def reply(response: ChatResponse, body: Mapping[str, Any], number: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": response.content or None}
        if response.tool_calls:
            message["tool_calls"] = wire_calls(response.tool_calls)
        return {
            "id": f"chatcmpl-evalward-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model", "")),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if response.tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": response.usage.input_tokens,
                "completion_tokens": response.usage.output_tokens,
                "total_tokens": response.usage.total_tokens,
            },
        }


def _asked_usage(body: Mapping[str, Any]) -> bool:
    return mapping(body.get("stream_options")).get("include_usage") is True


class _Chunks:
    """`chat.completion.chunk` events added up into a `chat.completion`."""

    def __init__(self, *, keep_usage: bool) -> None:
        self.error: str | None = None
        self._keep_usage = keep_usage
        self._head: dict[str, Any] = {}
        self._choices: dict[int, dict[str, Any]] = {}
        self._usage: Mapping[str, Any] | None = None

    def feed(self, event: Event) -> bool:
        if (chunk := event_object(event)) is None:
            return True
        if "error" in chunk:
            self.error = lenient_text(mapping(chunk["error"]).get("message") or chunk["error"])
            return True
        for key in ("id", "created", "model", "system_fingerprint", "service_tier"):
            if key in chunk and key not in self._head:
                self._head[key] = chunk[key]
        for choice in items(chunk.get("choices")):
            self._add(choice)
        if isinstance(chunk.get("usage"), Mapping):
            self._usage = chunk["usage"]
            return self._keep_usage or bool(chunk.get("choices"))
        return True

    def _add(self, choice: Mapping[str, Any]) -> None:
        index = index_of(choice)
        into = self._choices.setdefault(
            index, {"content": "", "refusal": "", "calls": {}, "finish_reason": None}
        )
        delta = mapping(choice.get("delta"))
        if isinstance(delta.get("content"), str):
            into["content"] += delta["content"]
        if isinstance(delta.get("refusal"), str):
            into["refusal"] += delta["refusal"]
        legacy = mapping(delta.get("function_call"))
        if legacy:  # the older function calling: one call, its name and arguments in pieces
            call = into.setdefault("function_call", {"name": "", "arguments": ""})
            call["name"] += str(legacy.get("name") or "")
            call["arguments"] += str(legacy.get("arguments") or "")
        for fragment in items(delta.get("tool_calls")):
            number = index_of(fragment)
            call = into["calls"].setdefault(number, {"id": "", "name": "", "arguments": ""})
            call["id"] = call["id"] or str(fragment.get("id") or "")
            function = mapping(fragment.get("function"))
            call["name"] += str(function.get("name") or "")
            call["arguments"] += str(function.get("arguments") or "")
        if choice.get("finish_reason"):
            into["finish_reason"] = choice["finish_reason"]

    def result(self) -> dict[str, Any] | None:
        if not self._head and not self._choices:
            return None
        choices = []
        for index, into in sorted(self._choices.items()):
            message: dict[str, Any] = {"role": "assistant", "content": into["content"] or None}
            if into["refusal"]:
                message["refusal"] = into["refusal"]
            if "function_call" in into:
                message["function_call"] = into["function_call"]
            if into["calls"]:
                message["tool_calls"] = [
                    {
                        "id": c["id"] or f"call_{n}",
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for n, c in sorted(into["calls"].items())
                ]
            choices.append(
                {"index": index, "message": message, "finish_reason": into["finish_reason"]}
            )
        reply: dict[str, Any] = {"object": "chat.completion", **self._head, "choices": choices}
        if self._usage is not None:
            reply["usage"] = dict(self._usage)
        return reply


def chunks_of(reply: Mapping[str, Any], with_usage: bool) -> list[dict[str, Any]]:
    """A whole `chat.completion` as the chunks the API streams it in."""
    head = {
        "id": reply.get("id", "chatcmpl-evalward"),
        "object": "chat.completion.chunk",
        "created": reply.get("created", int(time.time())),
        "model": reply.get("model", ""),
    }
    chunks: list[dict[str, Any]] = []

    def chunk(index: int, delta: dict[str, Any], finish: object = None) -> None:
        choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
        chunks.append({**head, "choices": [choice]})

    for choice in items(reply.get("choices")):
        index = index_of(choice)
        message = mapping(choice.get("message"))
        chunk(index, {"role": "assistant", "content": ""})
        content = lenient_text(message.get("content"))
        if content:
            chunk(index, {"content": content})
        for number, call in enumerate(items(message.get("tool_calls"))):
            function = mapping(call.get("function"))
            arguments = function.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments or {})
            fragment = {
                "index": number,
                "id": call.get("id"),
                "type": "function",
                "function": {"name": function.get("name"), "arguments": arguments},
            }
            chunk(index, {"tool_calls": [fragment]})
        legacy = mapping(message.get("function_call"))
        if legacy:
            chunk(index, {"function_call": {k: legacy.get(k) for k in ("name", "arguments")}})
        chunk(index, {}, choice.get("finish_reason") or "stop")
    if with_usage and isinstance(reply.get("usage"), Mapping):
        chunks.append({**head, "choices": [], "usage": dict(reply["usage"])})
    return chunks


def _messages(body: Mapping[str, Any]) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    for index, message in enumerate(list_field(body, "messages", required=True)):
        if not isinstance(message, dict):
            raise WireError(f"messages[{index}] must be an object")
        role = message.get("role")
        content = text_of(message.get("content"))
        if role in ("system", "developer"):
            out.append(ChatMessage(role="system", content=content))
        elif role == "user":
            out.append(ChatMessage(role="user", content=content))
        elif role == "assistant":
            calls = []
            for number, raw in enumerate(message.get("tool_calls") or []):
                function = raw.get("function") if isinstance(raw, dict) else None
                if not isinstance(function, dict):
                    raise WireError(f"messages[{index}].tool_calls[{number}] has no `function`")
                calls.append(
                    ToolCall(
                        id=str(raw.get("id") or f"call_{number}"),
                        name=str(function.get("name") or ""),
                        arguments=tool_arguments(function.get("arguments")),
                    )
                )
            out.append(ChatMessage(role="assistant", content=content, tool_calls=tuple(calls)))
        elif role == "tool":
            call_id = message.get("tool_call_id")
            out.append(ChatMessage(role="tool", content=content, tool_call_id=str(call_id or "")))
        else:
            raise WireError(
                f"messages[{index}].role {role!r} is not system, developer, user, assistant or tool"
            )
    return out


def _tools(body: Mapping[str, Any]) -> list[ToolSpec]:
    tools = []
    for index, tool in enumerate(list_field(body, "tools")):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not function.get("name"):
            raise WireError(f"tools[{index}] must be {{type: function, function: {{name, ...}}}}")
        tools.append(tool_spec(function, "parameters"))
    return tools
