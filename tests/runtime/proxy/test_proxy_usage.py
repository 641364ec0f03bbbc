"""A call whose usage never arrives is never charged as nothing: a stream the provider breaks
off, in every API, and a whole reply that carries no usage are counted from what they carried,
priced, and spent against `max-cost-usd`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalward.errors import HttpFailure
from evalward.http.client import HttpClient
from evalward.rundata.spending import Allowance
from evalward.runtime.proxy.model_proxy import Grant
from fakes.model_server import ScriptedModelServer, shaped, text
from runtime.proxy.test_proxy_streams import providers_for, through_proxy

pytestmark = pytest.mark.integration

WORDS = 400
REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": (
        "/v1/chat/completions",
        {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "write at length"}]},
    ),
    "responses": ("/v1/responses", {"model": "gpt-4.1-mini", "input": "write at length"}),
    "messages": (
        "/v1/messages",
        {
            "model": "claude-haiku-4-5",
            "max_tokens": 4000,
            "messages": [{"role": "user", "content": "write at length"}],
        },
    ),
}


async def ask(grant: Grant, api: str, *, stream: bool) -> tuple[int, bytes]:
    """One request of `api`, read to its end or to where it breaks off."""
    path, body = REQUESTS[api]
    headers = {"authorization": f"Bearer {grant.key}"}
    if api == "messages":
        headers = {"x-api-key": grant.key, "anthropic-version": "2023-06-01"}
    url = grant.env["ANTHROPIC_BASE_URL"] + path
    client = HttpClient(timeout_seconds=60)
    try:
        if not stream:
            reply = await client.post_json(url, body, headers)
            return reply.status, reply.body
        received = b""
        async with client.stream_json(url, {**body, "stream": True}, headers) as up:
            try:
                async for chunk in up.chunks():
                    received += chunk
            except HttpFailure:
                pass
            return up.status, received
    finally:
        await client.aclose()


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_a_stream_that_ends_in_an_error_before_its_usage_is_charged_as_what_it_carried(
    model: ScriptedModelServer, tmp_path: Path, api: str
) -> None:
    failure = "overloaded_error" if api == "messages" else "server_error"
    reply = text("word " * WORDS, pieces=WORDS, stream_error=failure, break_after=WORDS)
    model.script("at length", reply)
    allowance = Allowance(max_cost_usd=0.0001)

    async def agent(grant: Grant) -> tuple[int, int]:
        first, _ = await ask(grant, api, stream=True)
        second, _ = await ask(grant, api, stream=True)
        return first, second

    statuses, trace = through_proxy(providers_for(model, tmp_path), agent, allowance)
    first, second = trace.proxy_calls
    assert first.error is not None and "charged as the" in first.error
    assert first.usage is not None and first.usage.input_tokens > 0
    # some 390 deltas of "word " had arrived (the rest of the events open the stream)
    assert first.usage.output_tokens >= WORDS - 20
    assert first.usage.cost_usd is not None and first.usage.cost_usd > 0.0001
    assert allowance.cost_usd == pytest.approx(first.usage.cost_usd)
    assert statuses == (200, 429)  # the budget it spent is spent
    assert second.status == 429 and "cost budget is spent" in (second.error or "")


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_a_stream_cut_off_before_its_usage_is_never_free(
    model: ScriptedModelServer, tmp_path: Path, api: str
) -> None:
    model.script("at length", text("word " * WORDS, pieces=WORDS, cut=True, break_after=WORDS))

    async def agent(grant: Grant) -> int:
        status, _ = await ask(grant, api, stream=True)
        return status

    _, trace = through_proxy(providers_for(model, tmp_path), agent, Allowance())
    (call,) = trace.proxy_calls
    assert call.error is not None and "broke off" in call.error
    assert call.usage is not None and call.usage.input_tokens > 0  # however much arrived
    assert call.usage.cost_usd is not None and call.usage.cost_usd > 0


def test_a_whole_reply_without_usage_is_charged_as_its_text(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    words = "word " * WORDS
    reply = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4.1-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": words},
                "finish_reason": "stop",
            }
        ],
    }
    model.script("at length", shaped(reply))
    model.check_contract = False  # a reply with no usage is what is under test

    async def agent(grant: Grant) -> int:
        status, _ = await ask(grant, "chat", stream=False)
        return status

    status, trace = through_proxy(providers_for(model, tmp_path), agent, Allowance())
    assert status == 200
    (call,) = trace.proxy_calls
    assert call.usage is not None
    assert call.usage.output_tokens == len(words) // 4
    assert call.usage.input_tokens > 0
    assert call.usage.cost_usd is not None and call.usage.cost_usd > 0


def test_an_unknown_cost_spends_what_is_left_of_max_cost_usd() -> None:
    allowance = Allowance(max_cost_usd=0.5)
    allowance.spend(0.1)
    assert allowance.admit("run") is None
    allowance.spend(None)  # a cost that cannot be known is not a free one
    assert allowance.cost_usd == 0.5
    refusal = allowance.admit("run")
    assert refusal is not None and "cost budget is spent" in refusal
    unlimited = Allowance()
    unlimited.spend(None)
    assert unlimited.admit("run") is None
