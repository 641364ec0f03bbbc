"""Google's Gemini API over HTTP (`models/{model}:generateContent`): `functionCall` and
`functionResponse` parts, `usageMetadata`, the key in `x-goog-api-key`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalward.http.client import HttpClient
from evalward.providers.base import ChatMessage, ChatRequest, ChatResponse, ToolCall
from evalward.providers.reply_fields import WireReader
from evalward.providers.retry import Endpoint, RetryPolicy, settle
from evalward.providers.tool_choice import gemini_choice
from evalward.providers.vendor_api import VendorApi
from evalward.rundata.trace import Usage

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
VERSION = "v1beta"
"""The API version evalward's own calls use: function calling and `systemInstruction` are
in it, as in every SDK's default."""


class GeminiProvider(VendorApi):
    """The Gemini API. The key goes in the `x-goog-api-key` header, never in the URL."""

    name = "gemini"

    def __init__(
        self,
        client: HttpClient,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 64,
        key_env: str = "",
    ) -> None:
        self._root = base_url.rstrip("/")
        endpoint = Endpoint("gemini", base_url, self._root, key_env)
        super().__init__(client, endpoint, retry, max_concurrency)
        self._api_key = api_key

    async def complete(self, request: ChatRequest) -> ChatResponse:
        path = f"{VERSION}/models/{request.model}:generateContent"
        answer = await self.forward(path, request_body(request), {})
        data = settle(answer, self._endpoint, self._headers({}), self._retry)
        return parse_response(data, request.model)

    def _at(self, path: str, model: str) -> Endpoint:
        """`path` below the server's root: the version and the model are in it."""
        del model
        return self._endpoint.at(f"{self._root}/{path}")

    def _headers(self, agent: Mapping[str, str]) -> dict[str, str]:
        """Only the key: nothing of the agent's headers shapes a Gemini request."""
        del agent
        return {"x-goog-api-key": self._api_key} if self._api_key else {}


def request_body(request: ChatRequest) -> dict[str, Any]:
    """System prompts as `systemInstruction`; a tool's result a `functionResponse` part in
    the next user turn, named as its call was; the Agent's `toolChoice` as `toolConfig`."""
    names = {c.id: c.name for m in request.messages for c in m.tool_calls}
    system = "\n\n".join(m.content for m in request.messages if m.role == "system" and m.content)
    contents: list[dict[str, Any]] = []
    for message in request.messages:
        if message.role == "system":
            continue
        role, parts = _parts(message, names)
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    if request.tools:
        declared = [
            {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
            for t in request.tools
        ]
        body["tools"] = [{"functionDeclarations": declared}]
        choice = gemini_choice(request.tool_choice)
        if choice is not None:
            body["toolConfig"] = choice
    config: dict[str, Any] = {}
    if request.max_tokens:
        config["maxOutputTokens"] = request.max_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if config:
        body["generationConfig"] = config
    return body


def _parts(message: ChatMessage, names: Mapping[str, str]) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        name = names.get(message.tool_call_id or "", "")
        answer = {"name": name, "response": {"result": message.content}}
        return "user", [{"functionResponse": answer}]
    role = "model" if message.role == "assistant" else "user"
    return role, said_parts(message.content, message.tool_calls)


def said_parts(content: str, calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """What a turn said as Gemini's parts: its text, then a `functionCall` per call (one
    empty text where it said nothing, as a content needs a part)."""
    parts: list[dict[str, Any]] = [{"text": content}] if content else []
    parts += [{"functionCall": {"name": c.name, "args": c.arguments}} for c in calls]
    return parts or [{"text": ""}]


def parse_response(
    data: object, model: str, read: WireReader | None = None, *, unnamed: str = "gemini-call"
) -> ChatResponse:
    """A `GenerateContentResponse`, its first candidate's parts read through `read` (checked
    by default; leniently for a reply the model proxy passes on). A thought is no part of the
    answer; a call without an `id` (the Gemini API gives none) is `{unnamed}-{k}`, the k-th
    call of the reply."""
    read = read or WireReader("gemini")
    reply = read.mapping(data, "the reply")
    candidates = read.optional_array(reply.get("candidates"), "candidates")
    first = read.optional_mapping(candidates[0] if candidates else None, "candidates[0]")
    content = read.optional_mapping(first.get("content"), "candidates[0].content")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, raw in enumerate(read.optional_array(content.get("parts"), "content.parts")):
        where = f"candidates[0].content.parts[{index}]"
        part = read.mapping(raw, where)
        if isinstance(part.get("text"), str) and part.get("thought") is not True:
            texts.append(part["text"])
        call = part.get("functionCall")
        if call is not None:
            call = read.mapping(call, f"{where}.functionCall")
            calls.append(
                ToolCall(
                    id=read.optional_text(call.get("id"), f"{where}.functionCall.id")
                    or f"{unnamed}-{len(calls)}",
                    name=read.name(call.get("name"), f"{where}.functionCall.name"),
                    arguments=read.optional_mapping(call.get("args"), f"{where}.functionCall.args"),
                )
            )
    return ChatResponse(
        content="".join(texts),
        tool_calls=tuple(calls),
        usage=usage(reply, read),
        stop_reason=read.optional_text(first.get("finishReason"), "finishReason"),
        model=read.optional_text(reply.get("modelVersion"), "modelVersion") or model,
    )


def usage(reply: Mapping[str, Any], read: WireReader) -> Usage:
    """`usageMetadata` as evalward counts it: the prompt's tokens (`promptTokenCount`, which
    holds `cachedContentTokenCount`, counted at the full input price as OpenAI's cached tokens
    are) with those of the tools' prompts (`toolUsePromptTokenCount`) as input; the answer's
    (`candidatesTokenCount`) and the thinking's (`thoughtsTokenCount`, billed as output) as
    output."""
    meta = read.optional_mapping(reply.get("usageMetadata"), "usageMetadata")

    def counted(name: str) -> int:
        return read.count(meta.get(name), f"usageMetadata.{name}")

    return Usage(
        input_tokens=counted("promptTokenCount") + counted("toolUsePromptTokenCount"),
        output_tokens=counted("candidatesTokenCount") + counted("thoughtsTokenCount"),
    )
