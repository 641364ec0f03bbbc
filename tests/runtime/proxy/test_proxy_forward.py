"""One metered forward (`runtime.proxy_forward`): a call an agent makes through the model proxy
is looked up in the response cache, sent to the provider (the scripted model server on
loopback), metered against the run's budget, stored, and delivered whole or as the stream the
agent asked for; a provider's refusal is passed on, except a rejected key, which is evalward's
to fix and never quotes the key."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from evalward.http.client import HttpClient
from evalward.providers.base import RunLabels
from evalward.providers.config import provider_config
from evalward.providers.registry import Providers, build_providers
from evalward.rundata.spending import Allowance
from evalward.rundata.trace import Trace
from evalward.runtime.proxy.model_proxy import Grant, ModelProxy
from evalward.text import jsontext
from fakes.model_server import ScriptedModelServer, error, shaped, text

pytestmark = pytest.mark.integration

OPENAI_KEY = "sk-forward-test-0123456789abcdef"
QUESTION = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "forward me"}]}
Reply = tuple[int, dict[str, str], bytes]


def providers_for(model: ScriptedModelServer, tmp_path: Path, cache: str) -> Providers:
    env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": OPENAI_KEY}
    settings = provider_config(
        {
            "providers": {"openai": {"retry": {"attempts": 1}}},
            "cache": {"mode": cache, "dir": str(tmp_path / "cache")},
        }
    )
    return build_providers(env, config=settings, cache_root=tmp_path)


def through_proxy(
    providers: Providers,
    agent: Callable[[Grant, HttpClient], Awaitable[Any]],
    allowance: Allowance | None = None,
) -> tuple[Any, Trace]:
    """`agent` run with a live key of a started proxy and an HTTP client; what it returned
    and the run's trace."""
    trace = Trace()

    async def go() -> Any:
        proxy = ModelProxy(providers, allowance, [OPENAI_KEY])
        await proxy.ensure_started()
        client = HttpClient(timeout_seconds=60)
        try:
            with proxy.granted(RunLabels(agent="a", fixture="fx"), trace, observe=True) as grant:
                return await agent(grant, client)
        finally:
            await client.aclose()
            await proxy.aclose()
            await providers.aclose()

    return asyncio.run(go()), trace


async def ask(grant: Grant, client: HttpClient, *, stream: bool = False) -> Reply:
    """One Chat Completions call as an agent makes it: its status, headers and whole body."""
    url = grant.env["OPENAI_BASE_URL"] + "/chat/completions"
    headers = {"authorization": f"Bearer {grant.key}"}
    if not stream:
        reply = await client.post_json(url, QUESTION, headers)
        return reply.status, dict(reply.headers), reply.body
    async with client.stream_json(url, {**QUESTION, "stream": True}, headers) as up:
        body = b"".join([chunk async for chunk in up.chunks()])
        return up.status, dict(up.headers), body


def lower(headers: dict[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def test_a_repeated_call_is_answered_from_the_cache_and_charged_once(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("forward me", text("forwarded", prompt_tokens=1000, completion_tokens=500))
    allowance = Allowance()

    async def agent(grant: Grant, client: HttpClient) -> list[Reply]:
        return [await ask(grant, client), await ask(grant, client)]

    replies, trace = through_proxy(providers_for(model, tmp_path, "read-write"), agent, allowance)
    (first, second) = replies
    assert first[0] == second[0] == 200
    assert jsontext.loads(first[2]) == jsontext.loads(second[2])
    assert len(model.requests_mentioning("forward me")) == 1  # the second never left
    sent, replayed = trace.proxy_calls
    assert (sent.cached, replayed.cached) == (False, True)
    assert sent.usage is not None and sent.usage.cost_usd
    assert replayed.usage is not None and replayed.usage.cost_usd == sent.usage.cost_usd  # priced
    assert allowance.cost_usd == pytest.approx(sent.usage.cost_usd)  # counted once


def said(stream: bytes) -> str:
    """The text a Chat Completions stream adds up to."""
    events = [line[6:] for line in stream.decode().splitlines() if line.startswith("data: {")]
    choices = [jsontext.loads(event)["choices"] for event in events]
    return "".join(c[0]["delta"].get("content") or "" for c in choices if c)


def test_a_cached_stream_is_replayed_as_the_stream_the_agent_asked_for(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("forward me", text("streamed back to you"))

    async def agent(grant: Grant, client: HttpClient) -> list[Reply]:
        return [await ask(grant, client, stream=True), await ask(grant, client, stream=True)]

    (sent, replayed), trace = through_proxy(providers_for(model, tmp_path, "read-write"), agent)
    assert len(model.requests_mentioning("forward me")) == 1  # the second never left
    assert said(sent[2]) == said(replayed[2]) == "streamed back to you"
    assert replayed[0] == 200
    assert lower(replayed[1])["content-type"].startswith("text/event-stream")
    assert replayed[2].rstrip().endswith(b"data: [DONE]")
    assert [(c.streamed, c.cached) for c in trace.proxy_calls] == [(True, False), (True, True)]
    assert trace.proxy_calls[1].first_byte_ms is not None


def test_a_rejected_key_is_evalward_s_to_fix_and_never_quoted(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    refusal = f'{{"error": {{"message": "Incorrect API key provided: {OPENAI_KEY}"}}}}'
    model.script("forward me", error(401, raw=refusal.encode()))

    async def agent(grant: Grant, client: HttpClient) -> Reply:
        return await ask(grant, client)

    (status, _, body), trace = through_proxy(providers_for(model, tmp_path, "off"), agent)
    assert status == 401
    assert b"rejected evalward's key" in body and OPENAI_KEY.encode() not in body
    (call,) = trace.proxy_calls
    assert call.status == 401 and call.error is not None
    assert "needs fixing, not the agent's" in call.error and OPENAI_KEY not in call.error


def test_a_provider_s_refusal_is_passed_on_uncharged_and_never_cached(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    refusal = b'{"error": {"message": "context too long", "type": "invalid_request_error"}}'
    model.script_sequence(
        "forward me",
        error(400, raw=refusal, headers={"content-type": "application/json"}),
        text("answered the second time"),
    )
    allowance = Allowance()

    async def agent(grant: Grant, client: HttpClient) -> list[Reply]:
        return [await ask(grant, client), await ask(grant, client)]

    (refused, answered), trace = through_proxy(
        providers_for(model, tmp_path, "read-write"), agent, allowance
    )
    assert refused[0] == 400
    assert jsontext.loads(refused[2])["error"]["message"] == "context too long"
    assert lower(refused[1])["x-should-retry"] == "false"  # the SDK is not to retry it
    first, second = trace.proxy_calls
    assert first.error is not None and first.error.startswith("HTTP 400: ")
    assert first.usage is None or not first.usage.cost_usd
    # the refusal was not stored: the same call again went to the provider
    assert answered[0] == 200 and not second.cached
    assert len(model.requests_mentioning("forward me")) == 2
    assert second.usage is not None and allowance.cost_usd == pytest.approx(second.usage.cost_usd)


def test_a_success_that_is_not_a_json_object_is_a_bad_gateway(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.check_contract = False  # the reply is meant to break the API's contract
    model.script("forward me", shaped(["not", "an", "object"]))

    async def agent(grant: Grant, client: HttpClient) -> Reply:
        return await ask(grant, client)

    (status, _, body), trace = through_proxy(providers_for(model, tmp_path, "off"), agent)
    assert status == 502
    assert b"not a JSON object" in body
    (call,) = trace.proxy_calls
    assert call.status == 502 and "not a JSON object" in (call.error or "")


def test_a_stream_is_passed_on_event_by_event_and_metered_by_its_last_event(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    """A streamed call goes upstream as a stream, reaches the agent as its events, is metered
    by the usage that comes last (asked for by the proxy)."""
    model.script("forward me", text("one two three", pieces=3, completion_tokens=7))
    allowance = Allowance()

    async def agent(grant: Grant, client: HttpClient) -> Reply:
        return await ask(grant, client, stream=True)

    (status, _, body), trace = through_proxy(
        providers_for(model, tmp_path, "read-write"), agent, allowance
    )
    assert status == 200 and said(body) == "one two three"
    (upstream,) = model.requests_mentioning("forward me")
    assert upstream["stream"] is True and upstream["stream_options"] == {"include_usage": True}
    (call,) = trace.proxy_calls
    assert call.streamed and not call.cached and call.error is None
    assert call.usage is not None and call.usage.output_tokens == 7
    assert call.usage.cost_usd and allowance.cost_usd == pytest.approx(call.usage.cost_usd)
    assert call.first_byte_ms is not None
