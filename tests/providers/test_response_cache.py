"""The response cache (`providers/response_cache.py`): a rerun of an unchanged call is served
its kept reply, each rep its own; the cache mode says what is read and written; a forwarded
call's entry is its side's alone; and a kept entry that is not one reads as a miss."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from evalward.providers.base import ChatMessage, ChatRequest, ChatResponse, RunLabels, ToolCall
from evalward.providers.response_cache import ResponseCache
from evalward.rundata.cache_mode import CacheMode
from evalward.rundata.trace import Usage

pytestmark = pytest.mark.unit

REPLY = ChatResponse(
    content="Refunded.",
    tool_calls=(ToolCall(id="c1", name="refund", arguments={"id": 7}),),
    usage=Usage(input_tokens=12, output_tokens=3, cost_usd=0.001),
    stop_reason="stop",
    model="gpt-4.1-mini",
)


def _request(rep: int = 0, content: str = "Refund order 7", side: str = "head") -> ChatRequest:
    return ChatRequest(
        model="openai/gpt-4.1-mini",
        messages=(ChatMessage(role="user", content=content),),
        labels=RunLabels(agent="bot", fixture="refund", rep=rep, side=side),
    )


def test_a_kept_reply_comes_back_whole_and_marked_cached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path, CacheMode.read_write)
    key = cache.key("openai", _request())
    assert cache.get(key) is None
    cache.put(key, REPLY)
    kept = cache.get(key)
    assert kept == dataclasses.replace(REPLY, cached=True)
    assert not list(tmp_path.rglob(".tmp-*"))  # written whole, then moved in place


def test_each_rep_and_each_request_has_its_own_entry(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path, CacheMode.read_write)
    first = cache.key("openai", _request(rep=0))
    assert cache.key("openai", _request(rep=1)) != first
    assert cache.key("openai", _request(content="Refund order 8")) != first
    assert cache.key("anthropic", _request()) != first
    # who asks is not what is asked: the same request on the other side is the same call
    assert cache.key("openai", _request(side="base")) == first


@pytest.mark.parametrize(
    ("mode", "reads", "writes"),
    [
        (CacheMode.read_write, True, True),
        (CacheMode.read_only, True, False),
        (CacheMode.refresh, False, True),
        (CacheMode.off, False, False),
    ],
)
def test_the_mode_says_what_is_read_and_written(
    tmp_path: Path, mode: CacheMode, reads: bool, writes: bool
) -> None:
    seeded = ResponseCache(tmp_path, CacheMode.read_write)
    key = seeded.key("openai", _request())
    seeded.put(key, REPLY)
    cache = ResponseCache(tmp_path, mode)
    assert (cache.get(key) is not None) is reads
    fresh = cache.key("openai", _request(rep=5))
    cache.put(fresh, REPLY)
    assert (seeded.get(fresh) is not None) is writes


def test_a_forwarded_call_is_kept_for_its_own_side_only(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path, CacheMode.read_write)
    body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]}
    head = cache.raw_key("openai", "chat/completions", body, 0, "head")
    cache.put_raw(head, {"id": "r1", "choices": []})
    assert cache.get_raw(head) == {"id": "r1", "choices": []}
    assert cache.get_raw(cache.raw_key("openai", "chat/completions", body, 0, "base")) is None
    streamed = {**body, "stream": True}
    assert cache.raw_key("openai", "chat/completions", streamed, 0, "head") != head
    assert cache.raw_key("openai", "responses", body, 0, "head") != head
    assert cache.get(head) is None  # a forwarded entry is not one of evalward's own replies


@pytest.mark.parametrize("written", ["not json", "[]", '{"content": "x"}', '{"forwarded": "text"}'])
def test_an_entry_that_is_not_one_is_a_miss(tmp_path: Path, written: str) -> None:
    cache = ResponseCache(tmp_path, CacheMode.read_only)
    key = cache.key("openai", _request())
    path = tmp_path / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_text(written, encoding="utf-8")
    assert cache.get(key) is None
    assert cache.get_raw(key) is None
