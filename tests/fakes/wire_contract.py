"""The providers' own published types as the judge of what goes over the wire.

Requests are validated with pydantic's TypeAdapter over the official SDKs' request TypedDicts
(PyPI `openai`: `CompletionCreateParams…`, `ResponseCreateParams…`, `EmbeddingCreateParams`;
`anthropic`: `MessageCreateParams…`, the streaming or non-streaming one as `stream` says),
replies with their response models (`ChatCompletion`, `Response`, `CreateEmbeddingResponse`,
`Message`, the model lists' `Model` / `ModelInfo`) and stream events with theirs
(`ChatCompletionChunk`, the `ResponseStreamEvent` and `RawMessageStreamEvent` unions). The
scripted model server checks every request it receives and every reply and event it renders
itself, so neither evalward nor the fake can drift from the real APIs unnoticed.

Two things TypeAdapter does not do by itself, done here: items of `Iterable[...]` fields are
validated lazily (as they are iterated), so the result is walked to the end; and keys a
TypedDict does not declare are dropped silently, so the validated result must equal the input
(nothing dropped, nothing coerced).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any, get_args

from pydantic import TypeAdapter, ValidationError


@cache
def _openai_request(streaming: bool) -> TypeAdapter[Any]:
    from openai.types.chat import completion_create_params as chat

    return TypeAdapter(
        chat.CompletionCreateParamsStreaming
        if streaming
        else chat.CompletionCreateParamsNonStreaming
    )


@cache
def _responses_request(streaming: bool) -> TypeAdapter[Any]:
    from openai.types.responses import response_create_params as responses

    return TypeAdapter(
        responses.ResponseCreateParamsStreaming
        if streaming
        else responses.ResponseCreateParamsNonStreaming
    )


@cache
def _embeddings_request() -> TypeAdapter[Any]:
    from openai.types.embedding_create_params import EmbeddingCreateParams

    return TypeAdapter(EmbeddingCreateParams)


@cache
def _anthropic_request(streaming: bool) -> TypeAdapter[Any]:
    from anthropic.types import message_create_params as messages

    return TypeAdapter(
        messages.MessageCreateParamsStreaming
        if streaming
        else messages.MessageCreateParamsNonStreaming
    )


def _streaming(body: Any) -> bool:
    return isinstance(body, dict) and body.get("stream") is True


def materialise(value: Any) -> Any:
    """Validated data with every lazily validated iterable walked into a list."""
    if isinstance(value, Mapping):
        return {key: materialise(item) for key, item in value.items()}
    if isinstance(value, str | bytes):
        return value
    if isinstance(value, Iterable):
        return [materialise(item) for item in value]
    return value


def _problem(adapter: TypeAdapter[Any], body: Any) -> str | None:
    try:
        validated = materialise(adapter.validate_python(body))
    except ValidationError as exc:
        return str(exc)
    if validated != body:
        dropped = _differences(body, validated)
        return f"keys or values the types do not declare: {'; '.join(dropped)}"
    return None


def _differences(sent: Any, kept: Any, path: str = "") -> list[str]:
    if isinstance(sent, dict) and isinstance(kept, dict):
        out = [f"{path}.{key} (dropped)" for key in sent if key not in kept]
        for key in sent:
            if key in kept:
                out += _differences(sent[key], kept[key], f"{path}.{key}")
        return out
    if isinstance(sent, list) and isinstance(kept, list) and len(sent) == len(kept):
        return [
            d
            for i, pair in enumerate(zip(sent, kept, strict=True))
            for d in _differences(*pair, f"{path}[{i}]")
        ]
    return [] if sent == kept else [f"{path}: sent {sent!r}, kept {kept!r}"]


def openai_request_problem(body: Any) -> str | None:
    """Why `body` is not a Chat Completions request the OpenAI SDK's types accept, or None."""
    return _problem(_openai_request(_streaming(body)), body)


def responses_request_problem(body: Any) -> str | None:
    """Why `body` is not a Responses request the OpenAI SDK's types accept, or None.

    One field the Python SDK's type requires is optional in the API (its reference gives
    `strict` of a function tool a default): the Vercel AI SDK and others leave it out, and
    the check takes that as the API does, `strict: null`, and the rest as the type says."""
    if isinstance(body, dict) and isinstance(body.get("tools"), list):
        tools = [
            {"strict": None, **tool}
            if isinstance(tool, dict) and tool.get("type") == "function"
            else tool
            for tool in body["tools"]
        ]
        body = {**body, "tools": tools}
    return _problem(_responses_request(_streaming(body)), body)


def embeddings_request_problem(body: Any) -> str | None:
    """Why `body` is not an embeddings request the OpenAI SDK's types accept, or None.

    `input` is checked here: the type's union of lazily validated iterables takes a list of
    token arrays for a token array and fails only when walked."""
    if not isinstance(body, dict):
        return f"not an object: {body!r}"
    value = body.get("input")
    if not (isinstance(value, str) or (isinstance(value, list) and value and _inputs(value))):
        return f"`input` is not a string, a token array or a non-empty list of either: {value!r}"
    return _problem(_embeddings_request(), {**body, "input": "checked above"})


SAMPLING_VERSION_END = "2026-10-21"


def _tokens(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(type(t) is int for t in value)


def _inputs(values: list[Any]) -> bool:
    """A token array, or a list of strings, or a list of token arrays."""
    return (
        _tokens(values)
        or all(isinstance(v, str) for v in values)
        or all(_tokens(v) for v in values)
    )


def anthropic_request_problem(body: Any, version: str = SAMPLING_VERSION_END) -> str | None:
    """Why `body` is not a Messages request the Anthropic SDK's types accept, or None.

    The SDK's types follow API version 2026-10-21, which has no sampling parameters. Earlier
    versions (evalward's default header is 2023-06-01) still take `temperature`: for those it
    must be a number in [0, 1], and the rest of the body is checked against the types."""
    if isinstance(body, dict) and "temperature" in body:
        if version >= SAMPLING_VERSION_END:
            return f"`temperature` sent with anthropic-version {version}, which refuses it"
        temperature = body["temperature"]
        if isinstance(temperature, bool) or not isinstance(temperature, int | float):
            return f"`temperature` is not a number: {temperature!r}"
        if not 0 <= temperature <= 1:
            return f"`temperature` is outside [0, 1]: {temperature!r}"
        body = {key: value for key, value in body.items() if key != "temperature"}
    return _problem(_anthropic_request(_streaming(body)), body)


def _model_problem(model: Any, body: Any) -> str | None:
    try:
        model.model_validate(body)
    except ValidationError as exc:
        return str(exc)
    return None


def openai_reply_problem(body: Any) -> str | None:
    from openai.types.chat import ChatCompletion

    return _model_problem(ChatCompletion, body)


def anthropic_reply_problem(body: Any) -> str | None:
    from anthropic.types import Message

    return _model_problem(Message, body)


def response_problem(body: Any) -> str | None:
    """Why `body` is not a Responses API `Response` object, or None."""
    from openai.types.responses import Response

    return _model_problem(Response, body)


def _union_members(union: Any) -> dict[str, Any]:
    """A discriminated union of models (`Annotated[Union[...], discriminator]`) by `type`."""
    members: dict[str, Any] = {}
    for model in get_args(get_args(union)[0]):
        for literal in get_args(model.model_fields["type"].annotation):
            members[literal] = model
    return members


@cache
def _response_events() -> dict[str, Any]:
    from openai.types.responses import ResponseStreamEvent

    return _union_members(ResponseStreamEvent)


@cache
def _message_events() -> dict[str, Any]:
    from anthropic.types import RawMessageStreamEvent

    return _union_members(RawMessageStreamEvent)


def _event_problem(members: dict[str, Any], data: Any, union: str) -> str | None:
    """Validated against the union member its `type` names, as the SDKs' discriminated union
    does, so that the error names that member's fields rather than every member's."""
    kind = data.get("type") if isinstance(data, dict) else None
    if not isinstance(kind, str) or kind not in members:
        return f"not a {union}: no member has type {kind!r}"
    return _model_problem(members[kind], data)


def chat_chunk_problem(data: Any) -> str | None:
    """Why one `data:` of a streamed Chat Completion is not a `ChatCompletionChunk` (or, for
    an error in the middle of a stream, not `{"error": ErrorObject}`), or None."""
    from openai.types.chat import ChatCompletionChunk
    from openai.types.shared import ErrorObject

    if isinstance(data, dict) and set(data) == {"error"}:
        return _model_problem(ErrorObject, data["error"])
    return _model_problem(ChatCompletionChunk, data)


def response_event_problem(data: Any) -> str | None:
    """Why one event of a streamed Response is not a `ResponseStreamEvent`, or None."""
    return _event_problem(_response_events(), data, "ResponseStreamEvent")


def anthropic_event_problem(event: str | None, data: Any) -> str | None:
    """Why one event of a streamed Message is not a `RawMessageStreamEvent`, a `ping` or an
    `error` (an `ErrorResponse`), or its `event:` name differs from its `type`, or None."""
    from anthropic.types import ErrorResponse

    kind = data.get("type") if isinstance(data, dict) else None
    if event != kind:
        return f"event {event!r} carries data of type {kind!r}"
    if kind == "ping":
        return None if data == {"type": "ping"} else f"a ping with fields: {data!r}"
    if kind == "error":
        return _model_problem(ErrorResponse, data)
    return _event_problem(_message_events(), data, "RawMessageStreamEvent")


def embeddings_reply_problem(body: Any) -> str | None:
    """Why `body` is not a `CreateEmbeddingResponse`, or None. A base64 `embedding` is read
    as the SDK reads it (little-endian float32) before it is checked."""
    from openai.types import CreateEmbeddingResponse

    if isinstance(body, dict) and isinstance(body.get("data"), list):
        data = []
        for item in body["data"]:
            vector = item.get("embedding") if isinstance(item, dict) else None
            if isinstance(vector, str):
                try:
                    raw = base64.b64decode(vector, validate=True)
                    vector = list(struct.unpack(f"<{len(raw) // 4}f", raw))
                except (ValueError, struct.error) as exc:
                    return f"data[{len(data)}].embedding is not base64 float32: {exc}"
                item = {**item, "embedding": vector}
            data.append(item)
        body = {**body, "data": data}
    return _model_problem(CreateEmbeddingResponse, body)


def openai_models_problem(body: Any) -> str | None:
    """Why `body` is not OpenAI's model list (`object: list`, `data` of `Model`), or None."""
    from openai.pagination import SyncPage
    from openai.types import Model

    if not isinstance(body, dict) or body.get("object") != "list":
        return f"not a list object: {body!r}"
    return _model_problem(SyncPage[Model], body)


def anthropic_models_problem(body: Any) -> str | None:
    """Why `body` is not a page of Anthropic's model list (`data` of `ModelInfo`, `has_more`,
    `first_id`, `last_id`), or None."""
    from anthropic.pagination import SyncPage
    from anthropic.types import ModelInfo

    missing = {"data", "has_more", "first_id", "last_id"} - set(
        body if isinstance(body, dict) else {}
    )
    if missing:
        return f"a model list page without {sorted(missing)}"
    return _model_problem(SyncPage[ModelInfo], body)


# --- Google's Gemini API ------------------------------------------------------------------------
# No SDK of Google's is among the tests' packages, so its shapes are written here from Google's
# published REST reference (ai.google.dev/api/generate-content, /api/caching#Content,
# /api/caching#Tool): the fields each object may hold, in the lowerCamelCase the reference
# gives (the API also takes snake case; the SDKs send their schemas' `parameters_json_schema`
# so), and the enums the fake's replies use.

GEMINI_REQUEST = {
    "contents", "tools", "toolConfig", "safetySettings", "systemInstruction",
    "generationConfig", "cachedContent",
}  # fmt: skip
GEMINI_CONTENT = {"role", "parts"}
GEMINI_PART = {
    "text", "inlineData", "functionCall", "functionResponse", "fileData", "executableCode",
    "codeExecutionResult", "thought", "thoughtSignature", "videoMetadata", "partMetadata",
}  # fmt: skip
GEMINI_CALL = {"id", "name", "args"}
GEMINI_RESPONSE_PART = {"id", "name", "response", "parts", "willContinue", "scheduling"}
GEMINI_DECLARATION = {
    "name", "description", "behavior", "parameters", "parametersJsonSchema", "response",
    "responseJsonSchema", "parameters_json_schema", "response_json_schema",
}  # fmt: skip
GEMINI_REPLY = {"candidates", "promptFeedback", "usageMetadata", "modelVersion", "responseId"}
GEMINI_CANDIDATE = {
    "content", "finishReason", "safetyRatings", "citationMetadata", "tokenCount",
    "groundingAttributions", "groundingMetadata", "avgLogprobs", "logprobsResult",
    "urlContextMetadata", "index", "finishMessage",
}  # fmt: skip
GEMINI_USAGE = {
    "promptTokenCount", "cachedContentTokenCount", "candidatesTokenCount",
    "toolUsePromptTokenCount", "thoughtsTokenCount", "totalTokenCount", "promptTokensDetails",
    "cacheTokensDetails", "candidatesTokensDetails", "toolUsePromptTokensDetails",
}  # fmt: skip
GEMINI_FINISH = {
    "FINISH_REASON_UNSPECIFIED", "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "LANGUAGE",
    "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "MALFORMED_FUNCTION_CALL",
    "IMAGE_SAFETY", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS",
}  # fmt: skip


def _fields(value: Any, allowed: set[str], path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path} is not an object"]
    return [f"{path}.{key} is no field of it" for key in value if key not in allowed]


def _gemini_content(content: Any, path: str, roles: set[str]) -> list[str]:
    found = _fields(content, GEMINI_CONTENT, path)
    if found:
        return found
    if "role" in content and content["role"] not in roles:
        found.append(f"{path}.role is {content['role']!r}")
    parts = content.get("parts")
    if not isinstance(parts, list):
        return [*found, f"{path}.parts is not a list"]
    for index, part in enumerate(parts):
        where = f"{path}.parts[{index}]"
        found += _fields(part, GEMINI_PART, where)
        if isinstance(part, dict) and "functionCall" in part:
            found += _fields(part["functionCall"], GEMINI_CALL, f"{where}.functionCall")
        if isinstance(part, dict) and "functionResponse" in part:
            answer = part["functionResponse"]
            found += _fields(answer, GEMINI_RESPONSE_PART, f"{where}.functionResponse")
            if isinstance(answer, dict) and not isinstance(answer.get("response"), dict):
                found.append(f"{where}.functionResponse.response is not an object")
    return found


def gemini_request_problem(body: Any) -> str | None:
    """A `GenerateContentRequest`'s body as the reference gives it (the model is the path's)."""
    found = _fields(body, GEMINI_REQUEST, "request")
    if not found:
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            found.append("request.contents is not a non-empty list")
        for index, content in enumerate(contents or []):
            found += _gemini_content(content, f"contents[{index}]", {"user", "model"})
        for index, tool in enumerate(body.get("tools") or []):
            for at, declared in enumerate(tool.get("functionDeclarations") or []):
                where = f"tools[{index}].functionDeclarations[{at}]"
                found += _fields(declared, GEMINI_DECLARATION, where)
    return "; ".join(found) or None


def gemini_reply_problem(body: Any) -> str | None:
    """A `GenerateContentResponse`, whole or one chunk of a stream."""
    found = _fields(body, GEMINI_REPLY, "reply")
    if not found:
        for index, candidate in enumerate(body.get("candidates") or []):
            where = f"candidates[{index}]"
            found += _fields(candidate, GEMINI_CANDIDATE, where)
            if isinstance(candidate, dict):
                if "content" in candidate:
                    found += _gemini_content(candidate["content"], f"{where}.content", {"model"})
                reason = candidate.get("finishReason")
                if reason is not None and reason not in GEMINI_FINISH:
                    found.append(f"{where}.finishReason is {reason!r}")
        usage = body.get("usageMetadata")
        if usage is not None:
            found += _fields(usage, GEMINI_USAGE, "usageMetadata")
            found += [
                f"usageMetadata.{key} is not a whole number"
                for key, count in (usage.items() if isinstance(usage, dict) else [])
                if key.endswith("Count") and (not isinstance(count, int) or count < 0)
            ]
    return "; ".join(found) or None
