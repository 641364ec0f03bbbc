"""Anthropic Messages API over HTTP: `tool_use` / `tool_result` blocks and `stop_reason`."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from evalward.errors import ProviderError
from evalward.httpclient import HttpClient
from evalward.providers.base import ChatMessage, ChatRequest, ChatResponse, ToolCall
from evalward.providers.retry import Answer, Endpoint, RetryPolicy, post_json, send
from evalward.runtime.trace import Usage

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
"""The Messages API requires `max_tokens`; used when the agent sets none."""


class AnthropicProvider:
    """Messages API. The key goes in the `x-api-key` header and nowhere else."""

    name = "anthropic"

    def __init__(
        self,
        client: HttpClient,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        version: str = DEFAULT_VERSION,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 64,
        key_env: str = "ANTHROPIC_API_KEY",
    ) -> None:
        self._client = client
        root = base_url.rstrip("/")
        url = root + ("/messages" if root.endswith("/v1") else "/v1/messages")
        self._endpoint = Endpoint("anthropic", base_url, url, key_env)
        self._api_key = api_key
        self._version = version
        self._retry = retry or RetryPolicy()
        self._limit = asyncio.Semaphore(max_concurrency)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        body = request_body(request)
        headers = {"anthropic-version": self._version}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        async with self._limit:
            data = await post_json(self._client, self._endpoint, body, headers, self._retry)
        return parse_response(data, request.model)

    async def forward(self, body: dict[str, Any], headers: Mapping[str, str]) -> Answer:
        """POST an agent's own request body (the model proxy's upstream call) with the key,
        the retries and the concurrency limit of every other call. The agent's
        `anthropic-version` and `anthropic-beta` go along: they shape the request it wrote."""
        sent = {"anthropic-version": headers.get("anthropic-version") or self._version}
        if headers.get("anthropic-beta"):
            sent["anthropic-beta"] = headers["anthropic-beta"]
        if self._api_key:
            sent["x-api-key"] = self._api_key
        async with self._limit:
            return await send(self._client, self._endpoint, body, sent, self._retry)

    async def aclose(self) -> None:
        await self._client.aclose()


def request_body(request: ChatRequest) -> dict[str, Any]:
    """System prompts go top-level; tool results ride in the next user turn as blocks."""
    system = "\n\n".join(m.content for m in request.messages if m.role == "system" and m.content)
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        if message.role == "system":
            continue
        role, blocks = _blocks(message)
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": messages,
    }
    if system:
        body["system"] = system
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def _blocks(message: ChatMessage) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        return "user", [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
        ]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        )
    if not blocks:
        blocks.append({"type": "text", "text": ""})
    return message.role, blocks


def parse_response(data: dict[str, Any], model: str) -> ChatResponse:
    content = data.get("content")
    if not isinstance(content, list):
        raise ProviderError("anthropic: the response has no `content` list")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            texts.append(str(block.get("text") or ""))
        elif block.get("type") == "tool_use":
            arguments = block.get("input")
            calls.append(
                ToolCall(
                    id=str(block.get("id") or f"toolu_{index}"),
                    name=str(block.get("name") or ""),
                    arguments=arguments if isinstance(arguments, dict) else {},
                )
            )
    return ChatResponse(
        content="".join(texts),
        tool_calls=tuple(calls),
        usage=usage_of(data),
        stop_reason=str(data.get("stop_reason") or ""),
        model=str(data.get("model") or model),
    )


def usage_of(data: Mapping[str, Any]) -> Usage:
    """Tokens of a Messages response (`usage.input_tokens` / `output_tokens`)."""
    usage = data.get("usage")
    if not isinstance(usage, Mapping):
        return Usage()
    return Usage(
        input_tokens=_count(usage.get("input_tokens")),
        output_tokens=_count(usage.get("output_tokens")),
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
