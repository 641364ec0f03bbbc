"""What a call used when its reply never said: a stream cut before its usage arrived (the
run ended, the provider broke off), or a reply that carries no usage at all.

Such a call is never charged as zero. Its output is counted from the deltas the stream
carried (`DeltaTally`: the text, reasoning and tool-call arguments in each, at four
characters a token, and at least a token a delta), its input from the request's text; a
figure the reply did give (Anthropic's `message_start` gives the input) is kept. The
count is priced at the model's price like any other, so a `cost` assertion and
`max-cost-usd` see it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evalward.http.sse import Event
from evalward.rundata.trace import Usage
from evalward.runtime.proxy.wire.base import Turn, event_object
from evalward.runtime.proxy.wire.walk import walk

CHARS_PER_TOKEN = 4
"""The usual rule for English text and code; a request's JSON is counted by its text only."""
_DELTA_TEXT = frozenset(
    {"content", "text", "arguments", "partial_json", "thinking", "refusal", "reasoning"}
    | {"reasoning_content", "delta", "name"}
)
"""Where a delta carries what the model wrote (not its ids, roles and types)."""
_SKIPPED = frozenset({"data", "image_url", "file_data", "signature", "encrypted_content"})
"""Images, files and opaque blobs: their tokens are not their characters."""


class DeltaTally:
    """The deltas a stream carried, event by event, whatever API it speaks: a chat chunk's
    `choices[].delta`, a Responses `*.delta` event, an Anthropic `content_block_delta`, a
    Gemini chunk's `candidates[].content` (each chunk holds only what is new)."""

    def __init__(self) -> None:
        self.deltas = 0
        self.chars = 0

    def feed(self, event: Event) -> None:
        if (data := event_object(event)) is None:
            return
        found = [data.get("delta")]
        choices = data.get("choices")
        if isinstance(choices, list):
            found += [c.get("delta") for c in choices if isinstance(c, dict)]
        candidates = data.get("candidates")
        if isinstance(candidates, list):
            found += [c.get("content") for c in candidates if isinstance(c, dict)]
        chars = sum(_chars(delta, _DELTA_TEXT) for delta in found if delta is not None)
        if chars:
            self.deltas += 1
            self.chars += chars

    @property
    def tokens(self) -> int:
        return max(self.deltas, math.ceil(self.chars / CHARS_PER_TOKEN))


def request_tokens(body: Mapping[str, Any]) -> int:
    """The input tokens of a request, from its text (never zero: a request is read)."""
    return max(1, math.ceil(_chars(dict(body), None) / CHARS_PER_TOKEN))


def turn_tokens(turn: Turn) -> int:
    """The output tokens of a whole reply, from its text and tool calls."""
    chars = len(turn.text) + sum(len(c.name) + len(str(c.arguments)) for c in turn.calls)
    return math.ceil(chars / CHARS_PER_TOKEN)


def unreported(reported: Usage, body: Mapping[str, Any], output_tokens: int) -> Usage:
    """`reported` (what the reply said, maybe nothing) with the input counted from `body`
    where it is missing, and at least `output_tokens` of output."""
    return Usage(
        input_tokens=reported.input_tokens or request_tokens(body),
        output_tokens=max(reported.output_tokens, output_tokens),
    )


def _chars(value: object, keys: frozenset[str] | None) -> int:
    """The characters of the strings in `value`: every one, or with `keys` only those under
    one of them (or in a list, or `value` itself, a string)."""
    return sum(
        len(text)
        for key, text in walk(value, skip=_SKIPPED)
        if isinstance(text, str)
        and not text.startswith("data:")
        and (keys is None or key is None or key in keys)
    )
