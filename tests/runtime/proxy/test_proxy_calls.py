"""One model call through the proxy (`runtime.proxy_calls.Answerer`), served on loopback by a
plain aiohttp server whose one route hands each request to the answerer: a mock script's
reply whole and streamed, a model list costing nothing, and the calls refused before any
model sees them (no key for the provider, a budget spent, a model with no price against a
dollar limit), each kept in the run's trace with why."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from evalward.http.client import HttpClient
from evalward.providers.base import RunLabels
from evalward.providers.config import provider_config
from evalward.providers.registry import Providers, build_providers
from evalward.rundata.spending import Allowance
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.proxy.call_record import Call
from evalward.runtime.proxy.grants import Grant
from evalward.runtime.proxy.proxy_calls import Answerer
from evalward.runtime.proxy.wire.routes import WireRoute, route_of
from evalward.security import Redactor
from fakes.http import quiet_listener

pytestmark = pytest.mark.integration

SCRIPT = """\
replies:
  - match: { contains: "where is my order" }
    always: { content: "It ships today." }
"""
ASKED = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "where is my order"}]}
Asking = Callable[[HttpClient, str], Awaitable[Any]]


def mocked(tmp_path: Path) -> Providers:
    script = tmp_path / "mock.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    return build_providers({}, mock_script=str(script))


def served(answerer: Answerer, trace: Trace, asking: Asking) -> Any:
    """What `asking` got from a loopback server whose every request `answerer` answers."""
    grant = Grant("key", RunLabels(agent="bot", fixture="fx"), trace, {})

    async def handle(request: web.Request) -> web.StreamResponse:
        route = route_of(request.method, request.path_qs, request.headers)
        assert isinstance(route, WireRoute)
        call = Call(grant, route.api, f"{request.method} {request.path}", time.time())
        if route.kind is None:
            return await answerer.models(call, route, request.headers)
        return await answerer.answer(call, route, await request.json(), request)

    async def go() -> Any:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.SockSite(runner, quiet_listener())
        await site.start()
        port = runner.addresses[0][1]
        client = HttpClient(timeout_seconds=30)
        try:
            return await asking(client, f"http://127.0.0.1:{port}/v1")
        finally:
            await client.aclose()
            await runner.cleanup()
            await answerer.providers.aclose()

    return asyncio.run(go())


async def chat(client: HttpClient, base: str, body: dict[str, Any] = ASKED) -> tuple[int, Any]:
    reply = await client.post_json(f"{base}/chat/completions", body, {})
    return reply.status, json.loads(reply.body)


def test_a_mocked_call_is_answered_in_the_agents_api_and_recorded(tmp_path: Path) -> None:
    trace = Trace()
    status, body = served(Answerer(mocked(tmp_path), None, Redactor([])), trace, chat)

    assert status == 200
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["content"] == "It ships today."
    (call,) = trace.proxy_calls
    assert (call.model, call.status, call.streamed, call.cached) == (
        "openai/gpt-4.1-mini",
        200,
        False,
        False,
    )
    assert trace.model_calls == 1


def test_a_mocked_stream_is_the_reply_as_events(tmp_path: Path) -> None:
    async def stream(client: HttpClient, base: str) -> bytes:
        async with client.stream_json(
            f"{base}/chat/completions", {**ASKED, "stream": True}, {}
        ) as up:
            return b"".join([chunk async for chunk in up.chunks()])

    trace = Trace()
    raw = served(Answerer(mocked(tmp_path), None, Redactor([])), trace, stream)

    datas = [line[6:] for line in raw.decode().splitlines() if line.startswith("data: ")]
    assert datas[-1] == "[DONE]"
    said = "".join(
        c["delta"].get("content") or "" for d in datas[:-1] for c in json.loads(d)["choices"]
    )
    assert said == "It ships today."
    (call,) = trace.proxy_calls
    assert call.streamed and call.first_byte_ms is not None


def test_a_model_list_under_a_mock_names_priced_models_and_costs_nothing(tmp_path: Path) -> None:
    async def models(client: HttpClient, base: str) -> tuple[int, Any]:
        reply = await client.get(f"{base}/models")
        return reply.status, json.loads(reply.body)

    providers = mocked(tmp_path)
    trace = Trace()
    status, body = served(Answerer(providers, None, Redactor([])), trace, models)

    assert status == 200
    assert "gpt-4.1-mini" in {entry["id"] for entry in body["data"]}
    (call,) = trace.proxy_calls
    assert call.usage is not None and call.usage.cost_usd == 0.0


def test_a_call_to_a_provider_without_its_key_is_refused_naming_the_variable() -> None:
    trace = Trace()
    status, body = served(Answerer(build_providers({}), None, Redactor([])), trace, chat)

    assert status == 401
    assert "OPENAI_API_KEY" in json.dumps(body)
    (call,) = trace.proxy_calls
    assert call.status == 401 and "OPENAI_API_KEY" in (call.error or "")
    assert trace.model_calls == 0  # refused before any model saw it


def test_a_spent_budget_refuses_each_call_and_says_so_once_in_the_steps(tmp_path: Path) -> None:
    async def twice(client: HttpClient, base: str) -> list[tuple[int, Any]]:
        return [await chat(client, base), await chat(client, base)]

    trace = Trace()
    allowance = Allowance(max_calls=0)
    replies = served(Answerer(mocked(tmp_path), allowance, Redactor([])), trace, twice)

    assert [status for status, _ in replies] == [429, 429]
    assert all("evalward refused this call" in (c.error or "") for c in trace.proxy_calls)
    errors = [s for s in trace.steps if s.type is StepType.error]
    assert len(errors) == 1 and "a model call was refused" in errors[0].content


def test_the_providers_ceiling_counts_each_call_once_and_refuses_the_first_past_it(
    tmp_path: Path,
) -> None:
    """Attribution's hard cap, as a program's calls meet it through the proxy: a mocked call
    is counted where the proxy lets it through, not again where the mock answers it, and the
    first call past the ceiling is refused before any model sees it."""

    async def thrice(client: HttpClient, base: str) -> list[tuple[int, Any]]:
        return [await chat(client, base) for _ in range(3)]

    providers = mocked(tmp_path)
    trace = Trace()
    with providers.ceiling.held_to(2) as ceiling:
        replies = served(Answerer(providers, None, Redactor([])), trace, thrice)

    assert [status for status, _ in replies] == [200, 200, 429]
    assert (ceiling.admitted, ceiling.refused) == (2, 1)
    assert providers.spent.calls == 2
    said = trace.proxy_calls[2].error or ""
    assert said.startswith("evalward refused this call: attribution's budget is spent"), said
    assert said.count("evalward refused") == 1, said


def test_a_model_without_a_price_is_refused_under_a_dollar_limit() -> None:
    providers = build_providers({"OPENAI_API_KEY": "sk-" + "k" * 30})
    trace = Trace()

    async def unpriced(client: HttpClient, base: str) -> tuple[int, Any]:
        return await chat(client, base, {**ASKED, "model": "no-such-model-anywhere"})

    status, body = served(
        Answerer(providers, Allowance(max_cost_usd=1.0), Redactor([])), trace, unpriced
    )

    assert status == 429
    assert "has no price" in json.dumps(body)
    assert "no-such-model-anywhere" in (trace.proxy_calls[0].error or "")


def test_a_provider_out_of_reach_is_the_proxys_upstream_error_for_calls_and_model_lists() -> None:
    key = "sk-" + "k" * 30
    providers = build_providers(
        {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": key},
        config=provider_config({"providers": {"openai": {"retry": {"attempts": 1}}}}),
    )

    async def both(client: HttpClient, base: str) -> list[tuple[int, Any]]:
        listed = await client.get(f"{base}/models")
        return [await chat(client, base), (listed.status, json.loads(listed.body))]

    trace = Trace()
    replies = served(Answerer(providers, None, Redactor([key])), trace, both)

    assert [status for status, _ in replies] == [502, 502]
    assert all("evalward could not reach openai: " in json.dumps(body) for _, body in replies)
    assert [c.status for c in trace.proxy_calls] == [502, 502]
    assert all(c.error and key not in c.error for c in trace.proxy_calls)
