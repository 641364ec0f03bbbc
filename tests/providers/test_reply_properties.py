"""Property-based: any JSON a server answers with HTTP 200 becomes a ChatResponse or a
ProviderError, never anything else (a crash here used to end the whole run with exit 4)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalward.errors import ProviderError
from evalward.providers import anthropic, openai
from evalward.providers.base import ChatResponse

pytestmark = pytest.mark.hostile

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
"""Arbitrary JSON values, as `json.loads` would give them."""

OPENAI_REPLY: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "hi",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"a": 1}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 2},
}
ANTHROPIC_REPLY: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [
        {"type": "text", "text": "hi"},
        {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 1, "output_tokens": 2},
}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


def _replace(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    document = copy.deepcopy(document)
    target = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return document


def near_misses(template: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A valid reply with one field (at any depth) replaced by arbitrary JSON: these reach
    the deep checks that arbitrary JSON alone rarely gets to."""
    paths = _paths(template)
    return st.builds(_replace, st.just(template), st.sampled_from(paths), JSON)


def _check(parse: Any, data: Any) -> None:
    data = json.loads(json.dumps(data))  # exactly what a server could send
    try:
        response = parse(data, "asked-model")
    except ProviderError as exc:
        assert "malformed reply" in str(exc), exc
        return
    assert isinstance(response, ChatResponse)
    assert isinstance(response.content, str) and isinstance(response.stop_reason, str)
    assert isinstance(response.model, str) and response.model
    assert response.usage.input_tokens >= 0 and response.usage.output_tokens >= 0
    for call in response.tool_calls:
        assert isinstance(call.id, str) and call.id
        assert isinstance(call.name, str) and call.name
        assert isinstance(call.arguments, dict)
    json.dumps([response.content, [c.arguments for c in response.tool_calls]])


PROPERTY = settings(max_examples=300, deadline=None)


@PROPERTY
@given(JSON | near_misses(OPENAI_REPLY))
def test_any_openai_reply_is_a_response_or_a_provider_error(data: Any) -> None:
    _check(openai.parse_response, data)


@PROPERTY
@given(JSON | near_misses(ANTHROPIC_REPLY))
def test_any_anthropic_reply_is_a_response_or_a_provider_error(data: Any) -> None:
    _check(anthropic.parse_response, data)


def test_the_templates_themselves_parse() -> None:
    """The near misses start from replies that parse: each property test explores from a
    reply both parsers accept."""
    assert openai.parse_response(OPENAI_REPLY, "m").tool_calls[0].arguments == {"a": 1}
    assert anthropic.parse_response(ANTHROPIC_REPLY, "m").tool_calls[0].arguments == {"a": 1}
