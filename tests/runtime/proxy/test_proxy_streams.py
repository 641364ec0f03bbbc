"""Streams through the model proxy to a real upstream (the scripted model server, held to the
SDKs' types): every API streams to the official SDK as the provider sends it, event by event,
and is metered, cached, replayed and recorded; a stream that breaks off says so."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from evalward.http.client import HttpClient
from evalward.providers.base import RunLabels
from evalward.providers.config import provider_config
from evalward.providers.registry import Providers, build_providers
from evalward.rundata.spending import Allowance
from evalward.rundata.trace import Trace
from evalward.runtime.proxy.model_proxy import Grant, ModelProxy
from fakes.model_server import Reply, ScriptedModelServer, error, text, tool_call
from support.sdk_clients import close_kept, kept

pytestmark = pytest.mark.integration

OPENAI_KEY = "sk-real-openai-0123456789"
ANTHROPIC_KEY = "sk-ant-real-0123456789"
GEMINI_KEY = "gemini-real-0123456789"
ORDER = {"order_id": "12345"}
TOOL = {"name": "lookup_order", "parameters": {"type": "object"}}
RESPONSES_TOOL = {"type": "function", "strict": False, **TOOL}


def providers_for(model: ScriptedModelServer, tmp_path: Path, cache: str = "off") -> Providers:
    env = {
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": OPENAI_KEY,
        "ANTHROPIC_BASE_URL": model.anthropic_url,
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "GEMINI_API_KEY": GEMINI_KEY,
    }
    retry = {"retry": {"attempts": 2, "baseDelaySeconds": 0}}
    gemini = {"api": "gemini", "baseUrl": model.server.url, "apiKeyEnv": "GEMINI_API_KEY"}
    settings = provider_config(
        {
            "providers": {"openai": retry, "anthropic": retry, "gemini": gemini | retry},
            "cache": {"mode": cache},
        }
    )
    return build_providers(env, config=settings, cache_root=tmp_path)


def through_proxy(
    providers: Providers,
    body: Callable[[Grant], Awaitable[Any]],
    allowance: Allowance | None = None,
) -> tuple[Any, Trace]:
    """Run `body` with a live key of a started proxy; its result and the run's trace."""
    trace = Trace()

    async def go() -> Any:
        proxy = ModelProxy(providers, allowance, [OPENAI_KEY, ANTHROPIC_KEY])
        await proxy.ensure_started()
        try:
            with proxy.granted(RunLabels(agent="a", fixture="fx"), trace, observe=True) as grant:
                return await body(grant)
        finally:
            await close_kept()
            await proxy.aclose()
            await providers.aclose()

    return asyncio.run(go()), trace


def gpt(grant: Grant) -> openai.AsyncOpenAI:
    """An OpenAI client of the run's key, closed as `through_proxy` ends."""
    return kept(
        openai.AsyncOpenAI(base_url=grant.env["OPENAI_BASE_URL"], api_key=grant.key, max_retries=0)
    )


def claude(grant: Grant) -> anthropic.AsyncAnthropic:
    """An Anthropic client of the run's key, closed as `through_proxy` ends."""
    return kept(
        anthropic.AsyncAnthropic(
            base_url=grant.env["ANTHROPIC_BASE_URL"], api_key=grant.key, max_retries=0
        )
    )


async def chat_stream(grant: Grant, **extra: Any) -> tuple[str, list[Any]]:
    stream = await gpt(grant).chat.completions.create(
        model="gpt-4.1-mini",
        messages=[{"role": "user", "content": "order 12345"}],
        tools=[{"type": "function", "function": TOOL}],
        stream=True,
        **extra,
    )
    chunks = [chunk async for chunk in stream]
    text_out = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text_out, chunks


def test_a_chat_stream_arrives_as_streamed_and_is_metered_by_a_usage_chunk_the_agent_never_sees(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("order 12345", text("Your order 12345 has shipped.", pieces=4))
    (said, chunks), trace = through_proxy(providers_for(model, tmp_path), chat_stream)
    assert said == "Your order 12345 has shipped."
    assert all(c.usage is None for c in chunks)  # the agent did not ask for usage
    (upstream,) = model.calls
    assert upstream.body["stream"] is True
    assert upstream.body["stream_options"] == {"include_usage": True}  # the proxy asked
    assert upstream.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    (call,) = trace.proxy_calls
    assert (call.endpoint, call.status, call.streamed, call.error) == (
        "POST /v1/chat/completions",
        200,
        True,
        None,
    )
    assert call.usage is not None and (call.usage.input_tokens, call.usage.output_tokens) == (10, 5)
    assert call.usage.cost_usd == pytest.approx((10 * 0.4 + 5 * 1.6) / 1e6)
    assert call.first_byte_ms is not None and call.first_byte_ms <= call.duration_ms
    assert [s.type.value for s in trace.steps] == ["assistant"]


def test_the_first_event_reaches_the_agent_while_the_provider_holds_the_rest(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    hold = threading.Event()
    model.script("order 12345", text("Your order 12345 has shipped.", hold=hold, hold_after=2))

    async def first_then_rest(grant: Grant) -> tuple[bool, str]:
        client = HttpClient(timeout_seconds=30)
        body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "order 12345"}]}
        auth = {"authorization": f"Bearer {grant.key}"}
        try:
            async with client.stream_json(
                grant.env["OPENAI_BASE_URL"] + "/chat/completions", {**body, "stream": True}, auth
            ) as reply:
                chunks = reply.chunks()
                first = await chunks.__anext__()
                (upstream,) = model.calls
                held = upstream.stream is not None and not upstream.stream.finished.is_set()
                hold.set()
                rest = b"".join([chunk async for chunk in chunks])
                return held and b"chat.completion.chunk" in first, (first + rest).decode()
        finally:
            await client.aclose()

    (held, everything), trace = through_proxy(providers_for(model, tmp_path), first_then_rest)
    assert held  # the agent had its first event while the provider still held the rest
    assert everything.rstrip().endswith("data: [DONE]")
    assert trace.proxy_calls[0].error is None


@pytest.mark.parametrize("api", ["responses", "messages"])
def test_responses_and_messages_stream_to_their_sdks_with_tool_calls(
    model: ScriptedModelServer, tmp_path: Path, api: str
) -> None:
    model.script("order 12345", tool_call("lookup_order", ORDER), text("It has shipped."))

    async def agent(grant: Grant) -> list[str]:
        said = []
        if api == "responses":
            tools = [RESPONSES_TOOL]
            items: list[Any] = [{"role": "user", "content": "order 12345"}]
            for _ in range(2):
                async with gpt(grant).responses.stream(
                    model="gpt-4.1-mini", input=items, tools=tools
                ) as s:
                    reply = await s.get_final_response()
                calls = [i for i in reply.output if i.type == "function_call"]
                said.append(reply.output_text or calls[0].name)
                for call in calls:
                    items += [call.model_dump(exclude_none=True)]
                    items += [
                        {
                            "type": "function_call_output",
                            "call_id": call.call_id,
                            "output": "shipped",
                        }
                    ]
            return said
        tools_a = [{"name": "lookup_order", "input_schema": {"type": "object"}}]
        history: list[Any] = [{"role": "user", "content": "order 12345"}]
        for _ in range(2):
            async with claude(grant).messages.stream(
                model="claude-haiku-4-5", max_tokens=64, messages=history, tools=tools_a
            ) as s:
                message = await s.get_final_message()
            uses = [b for b in message.content if b.type == "tool_use"]
            said.append(uses[0].name if uses else message.content[0].text)  # type: ignore[union-attr]
            content = [block.model_dump(exclude_none=True) for block in message.content]
            history.append({"role": "assistant", "content": content})
            history.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": u.id, "content": "shipped"}
                        for u in uses
                    ],
                }
            )
        return said

    said, trace = through_proxy(providers_for(model, tmp_path), agent)
    assert said == ["lookup_order", "It has shipped."]
    endpoint = "POST /v1/responses" if api == "responses" else "POST /v1/messages"
    assert [(c.endpoint, c.streamed, c.status) for c in trace.proxy_calls] == [
        (endpoint, True, 200)
    ] * 2
    assert all(c.usage is not None and c.usage.output_tokens == 5 for c in trace.proxy_calls)
    assert [(s.type.value, s.tool) for s in trace.steps] == [
        ("tool_call", "lookup_order"),
        ("tool_result", "lookup_order"),
        ("assistant", None),
    ]
    assert trace.steps[0].arguments == ORDER


@pytest.mark.parametrize("how", ["cut", "error event"])
def test_a_stream_that_breaks_off_is_an_error_the_agent_and_the_trace_both_see(
    model: ScriptedModelServer, tmp_path: Path, how: str
) -> None:
    broken = Reply(content="Your order 12345 has", pieces=6, break_after=3)
    if how == "cut":
        broken.cut = True
    else:
        broken.stream_error = "server_error"
    model.script("order 12345", broken)

    async def agent(grant: Grant) -> str:
        try:
            await chat_stream(grant)
        except openai.APIError as exc:
            return str(exc)
        return "no error"

    raised, trace = through_proxy(providers_for(model, tmp_path, cache="read-write"), agent)
    assert raised != "no error"
    (call,) = trace.proxy_calls
    assert call.error is not None
    if how == "cut":
        assert "the stream from openai broke off" in call.error
        assert "the stream from openai broke off" in raised
    assert trace.failed_proxy_calls == [call]  # so the run is never result-cached
    assert not list((tmp_path / ".evalward" / "cache").rglob("*.json"))  # nor the reply


def test_a_streamed_reply_is_cached_whole_and_replayed_as_a_stream(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("order 12345", text("Your order 12345 has shipped."))
    providers = providers_for(model, tmp_path, cache="read-write")
    (first, _), _ = through_proxy(providers, chat_stream)
    providers = providers_for(model, tmp_path, cache="read-write")
    (again, chunks), replayed = through_proxy(providers, chat_stream)
    assert first == again == "Your order 12345 has shipped."
    assert len(model.calls) == 1  # the second came from the cache
    (call,) = replayed.proxy_calls
    assert call.cached and call.streamed and call.first_byte_ms is not None
    assert len(chunks) >= 3  # a stream, not one JSON reply
    assert replayed.model_calls == 1 and replayed.cache_hits == 1


def test_a_stream_is_retried_until_it_begins_and_counted_against_the_budget(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script_sequence("order 12345", error(503), text("Your order 12345 has shipped."))
    allowance = Allowance(max_calls=1, max_cost_usd=1.0)
    (said, _), trace = through_proxy(providers_for(model, tmp_path), chat_stream, allowance)
    assert said == "Your order 12345 has shipped."
    assert len(model.calls) == 2  # the 503 was retried before any event reached the agent
    assert [(c.status, c.error) for c in trace.proxy_calls] == [(200, None)]
    assert allowance.calls == 1
    assert allowance.cost_usd == pytest.approx((10 * 0.4 + 5 * 1.6) / 1e6)


def test_embeddings_and_model_lists_go_upstream_with_the_real_key(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.models = ["gpt-4.1-mini", "text-embedding-3-small"]

    async def agent(grant: Grant) -> tuple[int, list[str], list[str]]:
        vectors = await gpt(grant).embeddings.create(
            model="text-embedding-3-small", input=["a", "b"]
        )
        listed = [m.id async for m in gpt(grant).models.list()]
        claude_models = [m.id async for m in claude(grant).models.list()]
        return len(vectors.data), listed, claude_models

    (count, listed, claude_models), trace = through_proxy(providers_for(model, tmp_path), agent)
    assert count == 2
    assert listed == ["gpt-4.1-mini", "text-embedding-3-small"]
    assert claude_models == ["gpt-4.1-mini", "text-embedding-3-small"]
    embed = next(c for c in model.calls if c.path == "/v1/embeddings")
    assert embed.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    models = [c for c in model.calls if c.path == "/v1/models"]
    assert models[1].headers["x-api-key"] == ANTHROPIC_KEY
    embedded, *lists = trace.proxy_calls  # a model list is a call too, and free
    assert embedded.endpoint == "POST /v1/embeddings" and embedded.usage is not None
    assert [(c.endpoint, c.status, c.model) for c in lists] == [
        ("GET /v1/models", 200, "openai/"),
        ("GET /v1/models", 200, "anthropic/"),
    ]
    assert all(c.usage is not None and c.usage.cost_usd == 0.0 for c in lists)
    assert trace.model_calls == 3
