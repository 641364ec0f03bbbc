"""OpenAI Chat Completions over httpx; any compatible server works through its base URL."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from evalward.errors import ProviderError
from evalward.providers.base import ChatMessage, ChatRequest, ChatResponse, ToolCall
from evalward.providers.retry import RETRYABLE_STATUS, RetryPolicy
from evalward.runtime.trace import Usage

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIProvider:
    name = "openai"

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 16,
    ) -> None:
        self._client = client
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._base_url = base_url
        self._api_key = api_key
        self._retry = retry or RetryPolicy()
        self._limit = asyncio.Semaphore(max_concurrency)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        body = request_body(request)
        headers = {"content-type": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        async with self._limit:
            response = await self._post(body, headers)
        return parse_response(response, request.model)

    async def _post(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        last_problem = ""
        for attempt in range(1, self._retry.attempts + 1):
            response: httpx.Response | None = None
            try:
                response = await self._client.post(self._url, json=body, headers=headers)
            except httpx.TimeoutException:
                last_problem = "the request timed out"
            except httpx.TransportError as exc:
                last_problem = f"cannot reach {self._base_url}: {type(exc).__name__}"
            else:
                if response.status_code < 300:
                    try:
                        data = response.json()
                    except ValueError:
                        last_problem = "the response was not valid JSON"
                    else:
                        if isinstance(data, dict):
                            return data
                        last_problem = "the response was not a JSON object"
                elif response.status_code in RETRYABLE_STATUS:
                    last_problem = f"HTTP {response.status_code}"
                else:
                    raise ProviderError(_refusal(response, self._base_url))
            if attempt < self._retry.attempts:
                await asyncio.sleep(self._retry.delay(attempt, response))
        raise ProviderError(
            f"openai: {last_problem} after {self._retry.attempts} attempts ({self._base_url})"
        )

    async def aclose(self) -> None:
        await self._client.aclose()


def _refusal(response: httpx.Response, base_url: str) -> str:
    detail = ""
    try:
        error = response.json().get("error")
        if isinstance(error, dict):
            detail = str(error.get("message", ""))[:300]
    except (ValueError, AttributeError):
        detail = ""
    if response.status_code == 401:
        return (
            f"openai: the server at {base_url} rejected the API key (HTTP 401). "
            "Check OPENAI_API_KEY."
        )
    return f"openai: HTTP {response.status_code} from {base_url}" + (
        f": {detail}" if detail else ""
    )


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
                arguments=_arguments(function.get("arguments")),
            )
        )
    usage = data.get("usage") or {}
    return ChatResponse(
        content=message.get("content") or "",
        tool_calls=tuple(calls),
        usage=Usage(
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
        ),
        stop_reason=str(choice.get("finish_reason") or ""),
        model=str(data.get("model") or model),
    )


def _arguments(raw: object) -> dict[str, Any]:
    """Tool arguments are a JSON string on the wire; the trace always holds an object."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str) or not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"_unparsed": raw}
    return parsed if isinstance(parsed, dict) else {"_value": parsed}
