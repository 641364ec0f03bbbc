"""OpenAI Chat Completions over HTTP; any compatible server works through its base URL."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from evalward.errors import ProviderError
from evalward.httpclient import HttpClient
from evalward.providers.base import ChatMessage, ChatRequest, ChatResponse, ToolCall
from evalward.providers.retry import Answer, Endpoint, RetryPolicy, post_json, send
from evalward.runtime.trace import Usage, tool_arguments

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIProvider:
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
    ) -> None:
        self._client = client
        self._endpoint = Endpoint(
            "openai", base_url, base_url.rstrip("/") + "/chat/completions", key_env
        )
        self._api_key = api_key
        self._retry = retry or RetryPolicy()
        self._limit = asyncio.Semaphore(max_concurrency)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        body = request_body(request)
        headers: dict[str, str] = {}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        async with self._limit:
            data = await post_json(self._client, self._endpoint, body, headers, self._retry)
        return parse_response(data, request.model)

    async def forward(self, body: dict[str, Any], headers: Mapping[str, str]) -> Answer:
        """POST an agent's own request body (the model proxy's upstream call) with the key,
        the retries and the concurrency limit of every other call. Nothing of the agent's
        headers is sent: organisation and project belong to the key's account."""
        del headers
        auth = {"authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        async with self._limit:
            return await send(self._client, self._endpoint, body, auth, self._retry)

    async def aclose(self) -> None:
        await self._client.aclose()


def request_body(request: ChatRequest) -> dict[str, Any]:
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
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    return body


def _message(message: ChatMessage) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ]
    return out


def parse_response(data: dict[str, Any], model: str) -> ChatResponse:
    try:
        choice = data["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise ProviderError("openai: the response has no choices[0].message") from None
    calls: list[ToolCall] = []
    for index, raw in enumerate(message.get("tool_calls") or []):
        function = raw.get("function") or {}
        calls.append(
            ToolCall(
                id=str(raw.get("id") or f"call_{index}"),
                name=str(function.get("name", "")),
                arguments=tool_arguments(function.get("arguments")),
            )
        )
    return ChatResponse(
        content=message.get("content") or "",
        tool_calls=tuple(calls),
        usage=usage_of(data),
        stop_reason=str(choice.get("finish_reason") or ""),
        model=str(data.get("model") or model),
    )


def usage_of(data: Mapping[str, Any]) -> Usage:
    """Tokens of a Chat Completions response (`usage.prompt_tokens` / `completion_tokens`)."""
    usage = data.get("usage")
    if not isinstance(usage, Mapping):
        return Usage()
    return Usage(
        input_tokens=_count(usage.get("prompt_tokens")),
        output_tokens=_count(usage.get("completion_tokens")),
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
