"""The two wire formats the model proxy speaks to agents: OpenAI Chat Completions and
Anthropic Messages.

Real providers get the agent's request body as it is (full fidelity: `response_format`,
`tool_choice`, images, betas). Only a mock-script run reads the body: it becomes a
`ChatRequest` for the mock provider, and the mock's reply is written back in the shape the
agent asked in. Errors the proxy answers itself are in each provider's own error shape, so an
SDK raises its usual exception with evalward's message in it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from evalward.providers.base import (
    ChatMessage,
    ChatRequest,
    ChatResponse,
    RunLabels,
    ToolCall,
    ToolSpec,
)
from evalward.trace import tool_arguments

Api = Literal["openai", "anthropic"]


class WireError(ValueError):
    """A request body the proxy cannot read; the message names the field."""


@dataclass(frozen=True)
class ProblemKind:
    status: int
    openai_type: str
    openai_code: str | None
    anthropic_type: str


class Problem(Enum):
    """Errors the proxy answers itself, with each provider's status and error type."""

    bad_request = ProblemKind(400, "invalid_request_error", None, "invalid_request_error")
    unauthorized = ProblemKind(
        401, "invalid_request_error", "invalid_api_key", "authentication_error"
    )
    not_found = ProblemKind(404, "invalid_request_error", "unknown_url", "not_found_error")
    too_large = ProblemKind(413, "invalid_request_error", None, "request_too_large")
    budget = ProblemKind(429, "insufficient_quota", "insufficient_quota", "rate_limit_error")
    upstream = ProblemKind(502, "server_error", None, "api_error")


def error_body(api: Api, problem: Problem, message: str) -> dict[str, Any]:
    kind = problem.value
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind.anthropic_type, "message": message}}
    return {
        "error": {
            "message": message,
            "type": kind.openai_type,
            "param": None,
            "code": kind.openai_code,
        }
    }


# --- requests, for the mock provider --------------------------------------------------------


def chat_request(api: Api, body: Mapping[str, Any], labels: RunLabels) -> ChatRequest:
    """The agent's request as a ChatRequest; WireError when its shape is not the API's."""
    messages = _anthropic_messages(body) if api == "anthropic" else _openai_messages(body)
    tools = _anthropic_tools(body) if api == "anthropic" else _openai_tools(body)
    temperature = body.get("temperature")
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    return ChatRequest(
        model=str(body.get("model", "")),
        messages=tuple(messages),
        tools=tuple(tools),
        temperature=float(temperature) if isinstance(temperature, int | float) else None,
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        labels=labels,
    )


def _list(body: Mapping[str, Any], key: str, *, required: bool = False) -> list[Any]:
    value = body.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list) or (required and not value):
        raise WireError(f"`{key}` must be a {'non-empty ' if required else ''}list")
    return value


def _text(content: object) -> str:
    """A message's text: a string, or the `text` of its text parts / blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text") or "")
            for part in content
            if isinstance(part, dict) and part.get("type") in ("text", "input_text")
        )
    raise WireError(f"message content must be a string or a list of parts, got {content!r:.60}")


def _openai_messages(body: Mapping[str, Any]) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    for index, message in enumerate(_list(body, "messages", required=True)):
        if not isinstance(message, dict):
            raise WireError(f"messages[{index}] must be an object")
        role = message.get("role")
        content = _text(message.get("content"))
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


def _openai_tools(body: Mapping[str, Any]) -> list[ToolSpec]:
    tools = []
    for index, tool in enumerate(_list(body, "tools")):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not function.get("name"):
            raise WireError(f"tools[{index}] must be {{type: function, function: {{name, ...}}}}")
        tools.append(
            ToolSpec(
                name=str(function["name"]),
                description=str(function.get("description") or ""),
                parameters=dict(function.get("parameters") or {}),
            )
        )
    return tools


def _anthropic_messages(body: Mapping[str, Any]) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    system = body.get("system")
    if system:
        out.append(ChatMessage(role="system", content=_text(system)))
    for index, message in enumerate(_list(body, "messages", required=True)):
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
                texts.append(_text(block.get("text")))
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
                        content=_text(block.get("content")),
                        tool_call_id=str(block.get("tool_use_id") or ""),
                    )
                )
        if message["role"] == "assistant":
            out.append(ChatMessage("assistant", "".join(texts), tool_calls=tuple(calls)))
        elif texts:
            out.append(ChatMessage("user", "".join(texts)))
    return out


def _anthropic_tools(body: Mapping[str, Any]) -> list[ToolSpec]:
    tools = []
    for index, tool in enumerate(_list(body, "tools")):
        if not isinstance(tool, dict) or not tool.get("name"):
            raise WireError(f"tools[{index}] must be an object with a `name`")
        tools.append(
            ToolSpec(
                name=str(tool["name"]),
                description=str(tool.get("description") or ""),
                parameters=dict(tool.get("input_schema") or {}),
            )
        )
    return tools


# --- responses, from the mock provider ------------------------------------------------------


def response_body(api: Api, response: ChatResponse, model: str, number: int) -> dict[str, Any]:
    """A ChatResponse written as the API's reply. `number` makes the id unique in the run."""
    if api == "anthropic":
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
            "model": model,
            "content": content,
            "stop_reason": "tool_use" if response.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": response.usage.input_tokens,
                "output_tokens": response.usage.output_tokens,
            },
        }
    message: dict[str, Any] = {"role": "assistant", "content": response.content or None}
    if response.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in response.tool_calls
        ]
    return {
        "id": f"chatcmpl-evalward-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
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
