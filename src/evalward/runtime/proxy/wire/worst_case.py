"""The most a model call can use, read from its request before it is sent: what `max-cost-usd`
holds for the call while it is in flight (`Allowance.admit`), so that calls opened at once
cannot together spend past what is left.

Input is bounded by the request's size: every token a provider counts covers at least one
byte of the text it was sent, and the JSON around that text is longer than the few tokens
each message adds; beside it, each call is counted `CALL_TOKENS` for what a provider adds
itself (the system prompt that comes with tools; `spending.worst_usage`, the arithmetic
evalward's own calls are held by too), and each image `IMAGE_TOKENS`, whatever
its bytes (a small image costs more tokens than its bytes); an Anthropic request that marks
anything `cache_control` is counted twice, what writing all of it to a one-hour cache costs.
What a request names but does
not hold (an earlier response, a stored conversation or prompt, a file by id or address)
has no size here, nor has a PDF (read as the text and a picture of each page), so such a
call is refused while `max-cost-usd` is set (`unbounded`), as is one that asks OpenAI for a
service tier billed above the price table's prices (`dearer_tier`).
A Gemini request's inline data (images too: Google counts them by their tiles) and its files
by URI are refused as a PDF is (`wire.gemini`).
Output is the request's own limit (`max_tokens`, `max_completion_tokens`,
`max_output_tokens`, Gemini's `generationConfig.maxOutputTokens`), at most
`UNSTATED_OUTPUT_TOKENS`, the most any model evalward prices writes in one reply, which is
also what a call that states no limit is held for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evalward.providers.anthropic import CACHE_WRITE_1H_PRICE
from evalward.rundata import spending
from evalward.rundata.trace import Usage
from evalward.runtime.proxy.wire import gemini
from evalward.runtime.proxy.wire.base import Kind
from evalward.runtime.proxy.wire.walk import walk
from evalward.text.cuts import cap_chars

IMAGE_TOKENS = 6_000
"""The most one image is counted as by any priced model (OpenAI's largest, about 2,500 at
detail `high`; Anthropic's about 1,600), however few its bytes."""
OUTPUT_LIMITS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
IMAGE_PARTS = frozenset({"image_url", "input_image", "image"})
STORED = ("previous_response_id", "conversation", "prompt")
"""A Responses request's input kept by the provider: an earlier response's conversation, a
stored conversation, a stored prompt."""
STANDARD_TIERS = ("auto", "default", "flex")
"""OpenAI's service tiers billed at most at the price table's prices."""


def worst_usage(kind: Kind, body: Mapping[str, Any], size: int) -> Usage:
    """The most a request of `size` bytes, `body` as read, can use."""
    if kind is Kind.embeddings:
        return Usage(input_tokens=size)
    stated = [body.get(name) for name in OUTPUT_LIMITS]
    limits = [n for n in stated if isinstance(n, int) and not isinstance(n, bool) and n > 0]
    if kind in (Kind.gemini, Kind.gemini_stream):  # its limit is in its `generationConfig`
        stated_gemini = gemini.worst_output(body)
        limits = [] if stated_gemini is None else [stated_gemini]
    usage = spending.worst_usage(size + IMAGE_TOKENS * _images(body), max(limits, default=None))
    if kind is Kind.messages and _caches(body):  # each token may be written to a cache
        read = math.ceil(usage.input_tokens * CACHE_WRITE_1H_PRICE)
        return Usage(input_tokens=read, output_tokens=usage.output_tokens)
    return usage


def unbounded(kind: Kind, body: Mapping[str, Any]) -> str | None:
    """What of `body` the provider reads that its size does not bound (None: nothing)."""
    if kind is Kind.responses:
        named = next((name for name in STORED if body.get(name) is not None), None)
        if named is not None:
            return f"`{named}`, input the provider keeps"
    if kind in (Kind.gemini, Kind.gemini_stream):
        return gemini.unbounded_part(body)
    return _file_part(body)


def dearer_tier(kind: Kind, body: Mapping[str, Any]) -> str | None:
    """The `service_tier` an OpenAI request asks for that is billed above the price table's
    prices (`priority`, `scale`: up to twice them); None for the standard ones and a cheaper
    one (`flex`, counted at the table's prices)."""
    tier = body.get("service_tier")
    if kind not in (Kind.chat, Kind.responses) or tier is None or tier in STANDARD_TIERS:
        return None
    return cap_chars(str(tier), 40)


def _caches(body: Mapping[str, Any]) -> bool:
    """Whether `body` marks anything `cache_control`: Anthropic bills what it writes to its
    prompt cache at up to twice the input price (`providers.anthropic.cache_tokens`)."""
    return any(isinstance(value, dict) and "cache_control" in value for _, value in walk(body))


def _images(body: Mapping[str, Any]) -> int:
    """The image parts in `body`."""
    return sum(isinstance(v, dict) and v.get("type") in IMAGE_PARTS for _, v in walk(body))


def _file_part(body: Mapping[str, Any]) -> str | None:
    """A file or document part other than plain text: a PDF is read as the text and a
    picture of each page, however few its bytes, and one named by id or address has none."""
    for _, value in walk(body):
        if not isinstance(value, dict):
            continue
        kind = value.get("type")
        source = value.get("source")
        text = isinstance(source, dict) and source.get("type") in ("text", "content")
        if kind in ("file", "input_file") or (kind == "document" and not text):
            return f"a `{kind}` part, which the provider reads page by page"
    return None
