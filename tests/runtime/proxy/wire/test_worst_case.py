"""What a call can use at most, read from its request: its size bounds the input, its output
limit (or the most any priced model writes) the output; what its size cannot bound is named."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalward.rundata.spending import CALL_TOKENS, UNSTATED_OUTPUT_TOKENS
from evalward.runtime.proxy.wire.base import Kind
from evalward.runtime.proxy.wire.worst_case import (
    IMAGE_TOKENS,
    dearer_tier,
    unbounded,
    worst_usage,
)

pytestmark = pytest.mark.unit


def sized(kind: Kind, body: dict[str, Any]) -> tuple[int, int]:
    usage = worst_usage(kind, body, len(json.dumps(body).encode()))
    return usage.input_tokens, usage.output_tokens


@pytest.mark.parametrize(
    ("kind", "limit"),
    [
        (Kind.chat, "max_tokens"),
        (Kind.chat, "max_completion_tokens"),
        (Kind.responses, "max_output_tokens"),
        (Kind.messages, "max_tokens"),
    ],
)
def test_a_calls_output_is_its_own_limit_and_at_most_what_any_model_writes(
    kind: Kind, limit: str
) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert sized(kind, body | {limit: 300})[1] == 300
    assert sized(kind, body | {limit: 10**12})[1] == UNSTATED_OUTPUT_TOKENS
    assert sized(kind, body)[1] == UNSTATED_OUTPUT_TOKENS
    assert sized(kind, body | {limit: "300"})[1] == UNSTATED_OUTPUT_TOKENS


def test_the_input_is_the_requests_bytes_beside_what_a_provider_adds_and_each_image() -> None:
    body = {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": "x" * 4000},
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}] * 3},
        ],
    }
    size = len(json.dumps(body).encode())
    assert sized(Kind.chat, body) == (size + CALL_TOKENS + 3 * IMAGE_TOKENS, 5)
    assert worst_usage(Kind.embeddings, {"model": "e", "input": "x"}, 40).output_tokens == 0


def test_what_a_request_names_but_does_not_hold_is_named() -> None:
    assert unbounded(Kind.responses, {"model": "m", "input": "hi"}) is None
    for stored in ("previous_response_id", "conversation", "prompt"):
        found = unbounded(Kind.responses, {"model": "m", stored: "resp_1"})
        assert found is not None and stored in found
    pdf = {"type": "input_file", "file_id": "file-1"}
    found = unbounded(Kind.responses, {"model": "m", "input": [{"content": [pdf]}]})
    assert found is not None and "input_file" in found
    text_document = {"type": "document", "source": {"type": "text", "data": "plain words"}}
    pdf_document = {"type": "document", "source": {"type": "url", "url": "https://x/a.pdf"}}
    for block, named in ((text_document, False), (pdf_document, True)):
        body = {"model": "m", "messages": [{"role": "user", "content": [block]}]}
        assert (unbounded(Kind.messages, body) is not None) is named


def test_a_service_tier_billed_above_the_price_table_is_named() -> None:
    body = {"model": "m", "messages": []}
    for tier in (None, "auto", "default", "flex"):
        assert dearer_tier(Kind.chat, body | {"service_tier": tier}) is None
    assert dearer_tier(Kind.responses, body | {"service_tier": "priority"}) == "priority"
    assert dearer_tier(Kind.chat, body | {"service_tier": "scale"}) == "scale"
    assert dearer_tier(Kind.messages, body | {"service_tier": "standard_only"}) is None
