"""The providers' own published types as the judge of what goes over the wire.

Requests are validated with pydantic's TypeAdapter over the official SDKs' request TypedDicts
(PyPI `openai`: `CompletionCreateParamsNonStreaming`; `anthropic`:
`MessageCreateParamsNonStreaming`), replies with their response models (`ChatCompletion`,
`Message`). The scripted model server checks every request evalward sends and every reply it
renders itself, so neither evalward nor the fake can drift from the real APIs unnoticed.

Two things TypeAdapter does not do by itself, done here: items of `Iterable[...]` fields are
validated lazily (as they are iterated), so the result is walked to the end; and keys a
TypedDict does not declare are dropped silently, so the validated result must equal the input
(nothing dropped, nothing coerced).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError


@cache
def _openai_request() -> TypeAdapter[Any]:
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    return TypeAdapter(CompletionCreateParamsNonStreaming)


@cache
def _anthropic_request() -> TypeAdapter[Any]:
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    return TypeAdapter(MessageCreateParamsNonStreaming)


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
    return _problem(_openai_request(), body)


SAMPLING_VERSION_END = "2026-10-21"


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
    return _problem(_anthropic_request(), body)


def openai_reply_problem(body: Any) -> str | None:
    from openai.types.chat import ChatCompletion

    try:
        ChatCompletion.model_validate(body)
    except ValidationError as exc:
        return str(exc)
    return None


def anthropic_reply_problem(body: Any) -> str | None:
    from anthropic.types import Message

    try:
        Message.model_validate(body)
    except ValidationError as exc:
        return str(exc)
    return None
