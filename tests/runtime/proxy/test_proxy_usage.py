"""A call whose usage never arrives is never charged as nothing: a stream the provider breaks
off, in every API, and a whole reply that carries no usage are counted from what they carried,
priced, and spent against `max-cost-usd`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from evalward.errors import HttpFailure
from evalward.http.client import HttpClient
from evalward.rundata.spending import Allowance
from evalward.runtime.proxy.model_proxy import Grant
from fakes.model_server import ScriptedModelServer, error, shaped, text
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
    """The call held its worst case while in flight; the stream settles it at what it
    carried, and that is what the budget has spent."""
    failure = "overloaded_error" if api == "messages" else "server_error"
    reply = text("word " * WORDS, pieces=WORDS, stream_error=failure, break_after=WORDS)
    model.script("at length", reply)
    allowance = Allowance(max_cost_usd=1.0)

    async def agent(grant: Grant) -> int:
        status, _ = await ask(grant, api, stream=True)
        return status

    status, trace = through_proxy(providers_for(model, tmp_path), agent, allowance)
    (first,) = trace.proxy_calls
    assert status == 200
    assert first.error is not None and "charged as the" in first.error
    assert first.usage is not None and first.usage.input_tokens > 0
    # some 390 deltas of "word " had arrived (the rest of the events open the stream)
    assert first.usage.output_tokens >= WORDS - 20
    assert first.usage.cost_usd is not None and first.usage.cost_usd > 0.0001
    assert allowance.cost_usd == pytest.approx(first.usage.cost_usd)
    assert allowance.held_usd == 0.0


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
    assert asyncio.run(allowance.admit("run")) is None
    allowance.spend(None)  # a cost that cannot be known is not a free one
    assert allowance.cost_usd == 0.5
    refusal = asyncio.run(allowance.admit("run"))
    assert refusal is not None and "cost budget is spent" in refusal
    unlimited = Allowance()
    unlimited.spend(None)
    assert asyncio.run(unlimited.admit("run")) is None


def test_a_refused_or_cut_call_through_the_proxy_settles_what_it_held(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    """A call the provider refuses (HTTP 400) gives its hold back; a call still waiting for
    its whole reply when the run ends is cut, and what it may have cost, unknown, is spent at
    its most: a call sent is never free."""
    model.script("write at length", error(400))
    model.script("wait", text("late", delay=600))  # answered only as the server closes
    allowance = Allowance(max_cost_usd=1.0)

    async def agent(grant: Grant) -> tuple[int, float, float, int]:
        refused, _ = await ask(grant, "chat", stream=False)
        after_refusal = allowance.cost_usd + allowance.held_usd
        body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "wait"}]}
        client = HttpClient(timeout_seconds=600)
        url = grant.env["OPENAI_BASE_URL"] + "/chat/completions"
        waiting = asyncio.create_task(
            client.post_json(url, body, {"authorization": f"Bearer {grant.key}"})
        )
        while len(model.calls) < 2:
            await asyncio.sleep(0.01)
        held = allowance.held_usd
        await grant.end_calls(within=0)
        cut = await waiting
        await client.aclose()
        return refused, after_refusal, held, cut.status

    (refused, after_refusal, held, cut), trace = through_proxy(
        providers_for(model, tmp_path), agent, allowance
    )
    assert (refused, after_refusal) == (400, 0.0)
    assert held > 0.2  # its input, and the 128,000 output tokens it names no limit for
    assert cut == 502
    assert (allowance.cost_usd, allowance.held_usd) == (pytest.approx(held), 0.0)
    assert "the run ended before this call was answered" in (trace.proxy_calls[-1].error or "")
