"""What a test scripts the fake model server to answer: replies, and the rules that pick them.

A rule matches a request body; its replies are used in turn order (how many assistant turns
the conversation already holds), or, for a `sequence` rule, in the order requests arrive. One
`Reply` serves every wire format: the renderers (`fakes.wire_render`) turn it into a Chat
Completions, Responses or Messages reply, streamed when the request asks for a stream.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    """Bytes sent as the body, as is (with `headers` to set their content-type)."""
    delay: float = 0.0
    """Seconds before the reply (a stream's first byte) is sent."""
    cut: bool = False
    """Reset the connection in the middle of the body, or of a stream (see `break_after`)."""
    prompt_tokens: int = 10
    completion_tokens: int = 5
    thoughts_tokens: int = 0
    """Gemini's `thoughtsTokenCount` (billed as output, beside `candidatesTokenCount`)."""
    cached_tokens: int = 0
    """Gemini's `cachedContentTokenCount` (part of `promptTokenCount`)."""
    finish_reason: str | None = None
    """Overrides the stop reason (`length`, `max_tokens`: a reply cut at its token limit)."""
    body: Any = None
    """A whole JSON body sent as is with status 200, for odd or malformed shapes."""
    event_delay: float = 0.0
    """Streams: seconds to wait before each event."""
    pieces: int = 3
    """Streams: how many deltas the text, and each tool call's arguments, are split into."""
    break_after: int | None = None
    """Streams: how many events go out before a `cut` or a `stream_error` (default: half)."""
    stream_error: str | None = None
    """Streams: end with the API's error event of this type (`overloaded_error`,
    `server_error`) after `break_after` events, on a stream that has begun with HTTP 200."""
    hold: threading.Event | None = None
    hold_after: int = 1
    """Streams: after `hold_after` events, wait until `hold` is set before sending the rest."""


def text(content: str, **kwargs: Any) -> Reply:
    return Reply(content=content, **kwargs)


def tool_call(name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> Reply:
    return Reply(tool_calls=[(name, arguments or {})], **kwargs)


def error(status: int, **kwargs: Any) -> Reply:
    return Reply(status=status, **kwargs)


def shaped(body: Any, **kwargs: Any) -> Reply:
    """HTTP 200 with exactly this JSON body, even to a request that asked for a stream (as
    servers that ignore `stream` answer)."""
    return Reply(body=body, **kwargs)


Matcher = Callable[[dict[str, Any]], bool]


@dataclass
class Rule:
    matcher: Matcher
    replies: list[Reply]
    sequence: bool = False
    served: int = 0


def mentions(needle: str) -> Matcher:
    """Match requests whose conversation contains `needle` anywhere: Chat Completions
    `messages`, Anthropic `system` and `messages`, Responses `instructions` and `input`
    (and embeddings' `input`), Gemini's `systemInstruction` and `contents`."""
    keys = ("system", "messages", "instructions", "input", "systemInstruction", "contents")
    return lambda body: (
        needle in json.dumps([body.get(key, "") for key in keys], ensure_ascii=False)
    )


ASSISTANT_ITEMS = {"function_call", "reasoning"}


def responses_turns(items: Any) -> int:
    """Assistant turns in a Responses `input`: each run of assistant output items (messages
    with role `assistant`, `function_call`, `reasoning`) is one turn, as one assistant message
    with several tool calls is one turn in Chat Completions. A string `input` is turn 0."""
    if not isinstance(items, list):
        return 0
    turns, inside = 0, False
    for item in items:
        ours = isinstance(item, dict) and (
            item.get("type") in ASSISTANT_ITEMS or item.get("role") == "assistant"
        )
        turns += ours and not inside
        inside = ours
    return turns


def input_items(value: Any) -> list[Any]:
    """A Responses `input` as a list of items (a string is one user message)."""
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return value if isinstance(value, list) else []


def chat_turns(body: dict[str, Any]) -> int:
    """Assistant messages already in a Chat Completions or Messages conversation (the
    `model` turns of a Gemini one's `contents`)."""
    messages = body.get("messages", body.get("contents"))
    if not isinstance(messages, list):
        return 0
    said = ("assistant", "model")
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") in said)
