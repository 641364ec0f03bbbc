"""What Anthropic's prompt cache costs is counted (`providers/anthropic.py`, `cache_tokens`):
its `input_tokens` leaves out the tokens it wrote to and read from the cache, though it bills
them, so evalward's own calls and those its model proxy passes on count them as the input
tokens they are priced at."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.providers.anthropic import cache_tokens, parse_response
from evalward.providers.reply_fields import LenientReader, WireReader
from evalward.runtime.proxy.wire.base import Kind
from evalward.runtime.proxy.wire.messages import Messages
from evalward.runtime.proxy.wire.worst_case import worst_usage

pytestmark = pytest.mark.unit


def reply(usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "usage": usage,
    }


def test_a_cache_write_counts_as_the_input_it_is_priced_at_and_a_read_as_a_tenth() -> None:
    usage = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 1_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 600, "ephemeral_1h_input_tokens": 400},
        "cache_read_input_tokens": 2_000,
        "output_tokens": 5,
    }
    priced = 600 * 1.25 + 400 * 2 + 2_000 / 10
    assert cache_tokens(usage, WireReader("anthropic")) == priced
    assert parse_response(reply(usage), "claude-x").usage.input_tokens == 10 + priced
    assert Messages.usage(reply(usage)).input_tokens == 10 + priced
    assert Messages.usage(reply(usage)).output_tokens == 5
    bare = {"input_tokens": 10, "cache_creation_input_tokens": 1_000, "output_tokens": 5}
    assert Messages.usage(reply(bare)).input_tokens == 10 + 1_250  # a five-minute cache
    odd = {"input_tokens": 10, "cache_creation_input_tokens": "many"}
    assert cache_tokens(odd, LenientReader("anthropic")) == 0  # passed on, never refused


def test_a_request_that_marks_a_cache_holds_twice_its_input() -> None:
    """Writing all of it to a one-hour cache costs twice the input price."""
    system = [{"type": "text", "text": "x" * 1000}]
    plain = {"model": "m", "max_tokens": 5, "system": system, "messages": []}
    marked = plain | {"system": [system[0] | {"cache_control": {"type": "ephemeral"}}]}
    size = 2_000
    assert worst_usage(Kind.messages, marked, size).input_tokens == 2 * (
        worst_usage(Kind.messages, plain, size).input_tokens
    )
