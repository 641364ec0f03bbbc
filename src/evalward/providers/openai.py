"""OpenAI Chat Completions over HTTP; any compatible server works through its base URL."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

from evalward.http.client import HttpClient, Reply
from evalward.providers.base import ChatMessage, ChatRequest, ChatResponse, ToolCall
from evalward.providers.reply_fields import WireReader
from evalward.providers.retry import (
    Endpoint,
    RetryPolicy,
    error_of,
    send,
    settle,
)
from evalward.providers.tool_choice import openai_choice
from evalward.providers.vendor_api import VendorApi
from evalward.rundata.trace import Usage, tool_arguments

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIProvider(VendorApi):
    """Chat Completions. The key goes in the Authorization header and nowhere else."""

    name = "openai"

    def __init__(
        self,
        client: HttpClient,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 64,
        key_env: str = "OPENAI_API_KEY",
        api_version: str | None = None,
    ) -> None:
        endpoint = Endpoint("openai", base_url, base_url.rstrip("/") + "/chat/completions", key_env)
        super().__init__(client, endpoint, retry, max_concurrency)
        self._api_key = api_key
        self._api_version = api_version
        """Azure OpenAI's dated API: per-deployment URLs, `?api-version=`, the `api-key`
        header (None: OpenAI's own API shape, which Azure's v1 API serves too)."""
        self._refused: dict[str, set[str]] = {}
        """Per model, the parameters its server refused (`adapted`): not sent again."""

    async def complete(self, request: ChatRequest) -> ChatResponse:
        refused = self._refused.setdefault(request.model, set())
        body = adapted(request_body(request), refused)
        headers = self._headers({})
        endpoint = self._at("chat/completions", request.model)
        async with self._limit:
            answer = await send(self._client, endpoint, body, headers, self._retry)
            for _ in ADAPTABLE:
                parameter = refused_parameter(answer.reply, body)
                if parameter is None:
                    break
                refused.add(parameter)
                body = adapted(body, refused)
                answer = await send(self._client, endpoint, body, headers, self._retry)
        data = settle(answer, endpoint, headers, self._retry)
        return parse_response(data, request.model)

    def _at(self, path: str, model: str) -> Endpoint:
        """`path` below the base URL; under Azure's dated API, below the model's deployment
        (a model list, with no model, below the base URL), with the API version."""
        base = self._endpoint.base_url.rstrip("/")
        if self._api_version is None:
            return self._endpoint.at(f"{base}/{path}")
        below = f"{base}/deployments/{quote(model, safe='')}" if model else base
        return self._endpoint.at(f"{below}/{path}?{urlencode({'api-version': self._api_version})}")

    def _headers(self, agent: Mapping[str, str]) -> dict[str, str]:
        """Nothing of the agent's headers is sent: organisation and project belong to the
        key's account."""
        del agent
        if not self._api_key:
            return {}
        if self._api_version is not None:
            return {"api-key": self._api_key}  # Azure's dated API
        return {"authorization": f"Bearer {self._api_key}"}


def request_body(request: ChatRequest) -> dict[str, Any]:
    """The Chat Completions body (`tool_choice` with any tools: `openai_choice` says why)."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [_message(m) for m in request.messages],
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
        body["tool_choice"] = openai_choice(request.tool_choice)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    return body


ADAPTABLE = ("max_tokens", "temperature")
"""Parameters a model may refuse, and how a request does without them: OpenAI's reasoning
models (o-series, GPT-5) want `max_completion_tokens` for `max_tokens`, and only their
default temperature (the judge asks for 0), while most compatible servers know only
`max_tokens`."""


def refused_parameter(reply: Reply, body: Mapping[str, Any]) -> str | None:
    """The parameter of `body` an HTTP 400 names as unsupported (OpenAI's
    `{"error": {"param": …, "code": "unsupported_parameter" | "unsupported_value"}}`)."""
    if reply.status != 400:
        return None
    error = error_of(reply)
    param = error.get("param")
    unsupported = error.get("code") in ("unsupported_parameter", "unsupported_value")
    return str(param) if unsupported and param in ADAPTABLE and param in body else None


REASONING_ALLOWANCE = 8192
"""Tokens added to `max_tokens` when it is sent as `max_completion_tokens`: a reasoning
model's limit counts its hidden reasoning too, and at the judge's 2,048 it could spend them
all thinking and answer nothing."""


def adapted(body: dict[str, Any], refused: set[str]) -> dict[str, Any]:
    """`body` without the parameters its model refused: `max_tokens` is sent as
    `max_completion_tokens` (with room to reason), `temperature` is left to the model's
    default."""
    if not refused & body.keys():
        return body
    out = {key: value for key, value in body.items() if key not in refused}
    if "max_tokens" in refused and "max_tokens" in body:
        out["max_completion_tokens"] = body["max_tokens"] + REASONING_ALLOWANCE
    return out


def _message(message: ChatMessage) -> dict[str, Any]:
    """One message. An assistant turn that only calls tools carries `content: ""`, not null:
    the API accepts both, llama-cpp-python's server only a string."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.parts:  # content parts as the fixture wrote them
        out["content"] = [dict(part) for part in message.parts]
    if message.tool_calls:
        out["tool_calls"] = wire_calls(message.tool_calls)
    return out


def wire_calls(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    """Tool calls as Chat Completions writes them (sent, or in a reply the model proxy makes)."""
    return [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for call in calls
    ]


def parse_response(data: object, model: str, read: WireReader | None = None) -> ChatResponse:
    """A Chat Completions reply, every field read through `read` (`reply_fields`: checked, by
    default; the model proxy reads the replies it passes on leniently).

    Shapes compatible servers send are understood: `content` as a list of text parts or null,
    no `usage`, `reasoning_content` beside `content` (not part of the answer), extra fields.
    """
    read = read or WireReader("openai")
    reply = read.mapping(data, "the reply")
    choices = read.array(reply.get("choices"), "choices")
    first = choices[0] if choices else read.wrong("choices", "a non-empty list", choices, {})
    choice = read.mapping(first, "choices[0]")
    message = read.mapping(choice.get("message"), "choices[0].message")
    content = _content(read, message.get("content"), "choices[0].message.content")
    calls: list[ToolCall] = []
    raw_calls = read.optional_array(message.get("tool_calls"), "choices[0].message.tool_calls")
    for index, raw in enumerate(raw_calls):
        where = f"choices[0].message.tool_calls[{index}]"
        calls.append(_tool_call(read, read.mapping(raw, where), where, index))
    # the older function calling: one call, with no id (a server that sends `tool_calls`
    # may say it again in `function_call`, as llama-cpp-python does: read once)
    if message.get("function_call") is not None and not calls:
        where = "choices[0].message.function_call"
        legacy = read.mapping(message["function_call"], where)
        name = read.name(legacy.get("name"), f"{where}.name")
        arguments = read.optional_text(legacy.get("arguments"), f"{where}.arguments")
        calls.append(ToolCall(function_call_id(name, arguments), name, tool_arguments(arguments)))
    return ChatResponse(
        content=content,
        tool_calls=tuple(calls),
        usage=reply_usage(reply, read),
        stop_reason=read.optional_text(choice.get("finish_reason"), "choices[0].finish_reason"),
        model=read.optional_text(reply.get("model"), "model") or model,
    )


def function_call_id(name: str, arguments: str) -> str:
    """The id of a call made through the older function calling (`functions`, a reply's
    `function_call`), which has none: one made of its name and arguments, so the `function`
    message that follows it in the conversation is read as its result."""
    digest = hashlib.sha256(f"{name}\0{arguments}".encode()).hexdigest()
    return f"function_call-{digest[:12]}"


def _tool_call(read: WireReader, call: Mapping[str, Any], where: str, index: int) -> ToolCall:
    """A function tool's call, or a custom tool's (`type: custom`), whose free-text `input`
    is its arguments' `input`."""
    call_id = read.optional_text(call.get("id"), f"{where}.id") or f"call_{index}"
    if call.get("type") == "custom":
        custom = read.mapping(call.get("custom"), f"{where}.custom")
        return ToolCall(
            id=call_id,
            name=read.name(custom.get("name"), f"{where}.custom.name"),
            arguments={"input": read.text(custom.get("input"), f"{where}.custom.input")},
        )
    function = read.mapping(call.get("function"), f"{where}.function")
    arguments = function.get("arguments")
    if arguments is not None and not isinstance(arguments, str | dict):
        arguments = read.wrong(f"{where}.function.arguments", "a JSON string", arguments, None)
    return ToolCall(
        id=call_id,
        name=read.name(function.get("name"), f"{where}.function.name"),
        arguments=tool_arguments(arguments),
    )


def reply_usage(reply: Mapping[str, Any], read: WireReader) -> Usage:
    """The tokens a Chat Completions reply says it used (0 each when it says nothing)."""
    usage = read.optional_mapping(reply.get("usage"), "usage")
    return Usage(
        input_tokens=read.count(usage.get("prompt_tokens"), "usage.prompt_tokens"),
        output_tokens=read.count(usage.get("completion_tokens"), "usage.completion_tokens"),
    )


def _content(read: WireReader, value: object, path: str) -> str:
    """Text, null, or a list of content parts whose `text` parts are joined; parts of other
    types (a refusal, an image) are not the answer's text."""
    if value is None or isinstance(value, str):
        return value or ""
    if not isinstance(value, list):
        return read.wrong(path, "a string, null or a list of content parts", value, "")
    texts: list[str] = []
    for index, raw in enumerate(read.array(value, path)):
        part = read.mapping(raw, f"{path}[{index}]")
        if part.get("type") == "text":
            texts.append(read.text(part.get("text"), f"{path}[{index}].text"))
    return "".join(texts)
