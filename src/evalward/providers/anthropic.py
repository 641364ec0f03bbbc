"""Anthropic Messages API over HTTP: `tool_use` / `tool_result` blocks and `stop_reason`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evalward.http.client import HttpClient
from evalward.providers.base import ChatMessage, ChatRequest, ChatResponse, ToolCall
from evalward.providers.reply_fields import WireReader
from evalward.providers.retry import Endpoint, RetryPolicy, settle
from evalward.providers.tool_choice import anthropic_choice
from evalward.providers.vendor_api import VendorApi
from evalward.rundata.trace import Usage

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_VERSION = "2023-06-01"
NO_SAMPLING_VERSION = "2026-10-21"
"""The first API version that refuses `temperature`, `top_p` and `top_k` in a request."""
DEFAULT_MAX_TOKENS = 4096
"""The Messages API requires `max_tokens`; used when the agent sets none."""


class AnthropicProvider(VendorApi):
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
        root = base_url.rstrip("/")
        self._v1 = root if root.endswith("/v1") else f"{root}/v1"
        endpoint = Endpoint("anthropic", base_url, f"{self._v1}/messages", key_env)
        super().__init__(client, endpoint, retry, max_concurrency)
        self._api_key = api_key
        self._version = version

    async def complete(self, request: ChatRequest) -> ChatResponse:
        answer = await self.forward("messages", request_body(request, self._version), {})
        data = settle(answer, self._endpoint, self._headers({}), self._retry)
        return parse_response(data, request.model)

    def _at(self, path: str, model: str) -> Endpoint:
        """`path` below `/v1`, whatever the model."""
        del model
        return self._endpoint.at(f"{self._v1}/{path}")

    def _headers(self, agent: Mapping[str, str]) -> dict[str, str]:
        """The agent's `anthropic-version` and `anthropic-beta` go along: they shape the
        request it wrote."""
        sent = {"anthropic-version": agent.get("anthropic-version") or self._version}
        if agent.get("anthropic-beta"):
            sent["anthropic-beta"] = agent["anthropic-beta"]
        if self._api_key:
            sent["x-api-key"] = self._api_key
        return sent


def request_body(request: ChatRequest, version: str = DEFAULT_VERSION) -> dict[str, Any]:
    """System prompts go top-level; tool results ride in the next user turn as blocks;
    `temperature` is sent only to versions before `NO_SAMPLING_VERSION`."""
    systems = [m for m in request.messages if m.role == "system" and m.content]
    system: str | list[dict[str, Any]] = "\n\n".join(m.content for m in systems)
    if any(m.parts for m in systems):  # content parts as written (cache_control kept)
        system = [
            dict(p) for m in systems for p in m.parts or ({"type": "text", "text": m.content},)
        ]
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
        choice = anthropic_choice(request.tool_choice)
        if choice is not None:
            body["tool_choice"] = choice
    if request.temperature is not None and version < NO_SAMPLING_VERSION:
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
    blocks: list[dict[str, Any]] = [dict(part) for part in message.parts]
    if message.content and not message.parts:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        )
    if not blocks:
        blocks.append({"type": "text", "text": ""})
    return message.role, blocks


def parse_response(data: object, model: str, read: WireReader | None = None) -> ChatResponse:
    """A Messages reply, every field read through `read` (`reply_fields`: checked, by
    default; the model proxy reads the replies it passes on leniently). Blocks other than
    `text` and `tool_use` (thinking, server tools) are not part of the answer."""
    read = read or WireReader("anthropic")
    reply = read.mapping(data, "the reply")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, raw in enumerate(read.array(reply.get("content"), "content")):
        where = f"content[{index}]"
        block = read.mapping(raw, where)
        kind = read.text(block.get("type"), f"{where}.type")
        if kind == "text":
            texts.append(read.text(block.get("text"), f"{where}.text"))
        elif kind == "tool_use":
            calls.append(
                ToolCall(
                    id=read.optional_text(block.get("id"), f"{where}.id") or f"toolu_{index}",
                    name=read.name(block.get("name"), f"{where}.name"),
                    arguments=read.optional_mapping(block.get("input"), f"{where}.input"),
                )
            )
    usage = read.optional_mapping(reply.get("usage"), "usage")  # 0 each when it says nothing
    return ChatResponse(
        content="".join(texts),
        tool_calls=tuple(calls),
        usage=Usage(
            input_tokens=read.count(usage.get("input_tokens"), "usage.input_tokens")
            + cache_tokens(usage, read),
            output_tokens=read.count(usage.get("output_tokens"), "usage.output_tokens"),
        ),
        stop_reason=read.optional_text(reply.get("stop_reason"), "stop_reason"),
        model=read.optional_text(reply.get("model"), "model") or model,
    )


CACHE_WRITE_PRICE = 1.25
"""What a token Anthropic writes to its prompt cache costs, in input tokens (a five-minute
cache); one written to a one-hour cache costs `CACHE_WRITE_1H_PRICE`, one read from it a tenth."""
CACHE_WRITE_1H_PRICE = 2.0


def cache_tokens(usage: Mapping[str, Any], read: WireReader) -> int:
    """The input tokens Anthropic's prompt cache costs, which its `input_tokens` leaves out
    though it bills them: a token written counted as the input tokens it is priced at (1.25,
    or 2 for a one-hour cache), a token read as a tenth of one, so the price table's input
    price gives what the call cost."""
    written = read.count(
        usage.get("cache_creation_input_tokens"), "usage.cache_creation_input_tokens"
    )
    split = usage.get("cache_creation")
    hour = read.count(split.get("ephemeral_1h_input_tokens"), "") if isinstance(split, dict) else 0
    hour = min(hour, written)
    read_back = read.count(usage.get("cache_read_input_tokens"), "usage.cache_read_input_tokens")
    return (
        math.ceil((written - hour) * CACHE_WRITE_PRICE)
        + math.ceil(hour * CACHE_WRITE_1H_PRICE)
        + math.ceil(read_back / 10)
    )
