"""The openai and anthropic providers against the scripted model server on loopback."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any

import pytest

from evalward.errors import ProviderError, ProviderUnavailable
from evalward.providers.base import ChatMessage, ChatRequest, ToolCall, ToolSpec
from evalward.providers.config import provider_config
from evalward.providers.registry import Providers, build_providers
from fakes.model_server import Reply, ScriptedModelServer, error, text, tool_call

pytestmark = pytest.mark.integration

SECRET = "sk-test-very-secret-key"
FAST_RETRY = {"attempts": 3, "baseDelaySeconds": 0.001, "maxDelaySeconds": 0.01}


def providers_for(model: ScriptedModelServer, **settings: Any) -> Providers:
    config = provider_config(
        {
            "providers": {
                "openai": {"retry": FAST_RETRY, **settings},
                "anthropic": {"retry": FAST_RETRY, **settings},
            }
        }
    )
    env = {
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": SECRET,
        "ANTHROPIC_BASE_URL": model.anthropic_url,
        "ANTHROPIC_API_KEY": SECRET,
    }
    return build_providers(env, config=config)


def ask(providers: Providers, model_id: str, request: ChatRequest) -> Any:
    provider, model = providers.resolve(model_id)

    async def go() -> Any:
        try:
            return await provider.complete(
                ChatRequest(
                    model=model,
                    messages=request.messages,
                    tools=request.tools,
                    max_tokens=request.max_tokens,
                )
            )
        finally:
            await providers.aclose()

    return asyncio.run(go())


HELLO = ChatRequest(
    model="",
    messages=(
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", content="Where is order 12345?"),
    ),
    tools=(
        ToolSpec(
            "lookup_order",
            "Look up an order.",
            {"type": "object", "properties": {"order_id": {"type": "string"}}},
        ),
    ),
)


@pytest.mark.parametrize("model_id", ["openai/gpt-4.1-mini", "anthropic/claude-haiku-4-5"])
def test_tool_calls_usage_and_cost_in_both_wire_formats(
    model: ScriptedModelServer, model_id: str
) -> None:
    model.script("order 12345", tool_call("lookup_order", {"order_id": "12345"}))
    response = ask(providers_for(model), model_id, HELLO)
    assert response.tool_calls == (
        ToolCall(response.tool_calls[0].id, "lookup_order", {"order_id": "12345"}),
    )
    assert response.usage.input_tokens == 10
    assert response.usage.output_tokens == 5
    assert response.usage.cost_usd is not None and response.usage.cost_usd > 0
    assert response.stop_reason in ("tool_calls", "tool_use")


def test_anthropic_request_shape_and_headers(model: ScriptedModelServer) -> None:
    model.script("order 12345", text("It shipped."))
    response = ask(providers_for(model), "anthropic/claude-haiku-4-5", HELLO)
    assert response.content == "It shipped."
    assert response.stop_reason == "end_turn"
    (call,) = model.calls
    assert call.path == "/v1/messages"
    assert call.headers["x-api-key"] == SECRET
    assert call.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in call.headers
    assert call.body["system"] == "Be brief."
    assert call.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Where is order 12345?"}]}
    ]
    assert call.body["tools"][0]["input_schema"]["properties"] == {"order_id": {"type": "string"}}
    assert call.body["max_tokens"] > 0


def test_anthropic_tool_results_ride_in_one_user_turn(model: ScriptedModelServer) -> None:
    model.script("order 12345", text("Both shipped."))
    request = ChatRequest(
        model="",
        messages=(
            ChatMessage(role="user", content="Where are order 12345 and 67890?"),
            ChatMessage(
                role="assistant",
                tool_calls=(
                    ToolCall("toolu_a", "lookup_order", {"order_id": "12345"}),
                    ToolCall("toolu_b", "lookup_order", {"order_id": "67890"}),
                ),
            ),
            ChatMessage(role="tool", content="shipped", tool_call_id="toolu_a"),
            ChatMessage(role="tool", content="shipped too", tool_call_id="toolu_b"),
        ),
    )
    ask(providers_for(model), "anthropic/claude-haiku-4-5", request)
    messages = model.calls[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["type"] for b in messages[1]["content"]] == ["tool_use", "tool_use"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "shipped"},
        {"type": "tool_result", "tool_use_id": "toolu_b", "content": "shipped too"},
    ]


@pytest.mark.parametrize("model_id", ["openai/gpt-test", "anthropic/claude-test"])
def test_retries_429_with_retry_after_then_500_then_malformed_json(
    model: ScriptedModelServer, model_id: str
) -> None:
    model.script_sequence(
        "order 12345",
        error(429, headers={"retry-after": "0"}),
        error(500),
        Reply(raw=b"{not json"),
        text("Finally."),
    )
    response = ask(providers_for(model, retry={**FAST_RETRY, "attempts": 4}), model_id, HELLO)
    assert response.content == "Finally."
    assert len(model.calls) == 4


def test_gives_up_after_its_attempts_without_leaking_the_key(model: ScriptedModelServer) -> None:
    model.script_sequence("order 12345", error(503))
    with pytest.raises(ProviderError) as caught:
        ask(providers_for(model), "openai/gpt-test", HELLO)
    assert "HTTP 503 after 3 attempts" in str(caught.value)
    assert SECRET not in str(caught.value)
    assert len(model.calls) == 3


def test_client_errors_are_not_retried(model: ScriptedModelServer) -> None:
    model.script_sequence("order 12345", error(401))
    with pytest.raises(ProviderError, match=r"rejected the API key .*Check OPENAI_API_KEY"):
        ask(providers_for(model), "openai/gpt-test", HELLO)
    assert len(model.calls) == 1


def test_a_slow_reply_hits_the_per_call_timeout(model: ScriptedModelServer) -> None:
    model.script_sequence("order 12345", text("too late", delay=1.0))
    slow = providers_for(model, timeoutSeconds=0.1, retry={**FAST_RETRY, "attempts": 2})
    with pytest.raises(ProviderError, match="timed out after 2 attempts"):
        ask(slow, "anthropic/claude-test", HELLO)


def test_unknown_models_report_tokens_without_a_cost(model: ScriptedModelServer) -> None:
    model.script("order 12345", text("ok", prompt_tokens=100, completion_tokens=7))
    response = ask(providers_for(model), "openai/my-finetune", HELLO)
    assert (response.usage.input_tokens, response.usage.output_tokens) == (100, 7)
    assert response.usage.cost_usd is None


def test_price_table_is_overridable(model: ScriptedModelServer) -> None:
    model.script("order 12345", text("ok", prompt_tokens=1_000_000, completion_tokens=0))
    config = provider_config({"pricing": {"openai/my-finetune": {"input": 2.5, "output": 1}}})
    providers = build_providers({"OPENAI_BASE_URL": model.base_url}, config=config)
    response = ask(providers, "openai/my-finetune", HELLO)
    assert response.usage.cost_usd == pytest.approx(2.5)


def test_provider_concurrency_limit_holds(model: ScriptedModelServer) -> None:
    model.script("order 12345", text("ok"))
    providers = providers_for(model, maxConcurrency=2)
    provider, _ = providers.resolve("openai/gpt-test")
    in_flight = 0
    peak = 0
    lock = threading.Lock()
    original = model.server.handler

    def counting(request: Any) -> Any:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        try:
            threading.Event().wait(0.05)  # hold the request so overlapping ones would show
            return original(request)
        finally:
            with lock:
                in_flight -= 1

    model.server.handler = counting

    async def go() -> None:
        try:
            await asyncio.gather(
                *(
                    provider.complete(ChatRequest(model="gpt-test", messages=HELLO.messages))
                    for _ in range(6)
                )
            )
        finally:
            await providers.aclose()

    asyncio.run(go())
    assert len(model.calls) == 6
    assert peak <= 2


@pytest.mark.parametrize(
    "body, said",
    [
        (b'{"error": {"message": "model overloaded", "type": "server_error"}}', "model overloaded"),
        (
            b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
            "Overloaded",
        ),
        (
            b'{"error": "llama runner process has terminated"}',
            "llama runner process has terminated",
        ),
        (b'{"object": "error", "message": "vLLM engine dead", "code": 500}', "vLLM engine dead"),
        (b'{"detail": [{"loc": ["body"], "msg": "bad"}]}', '[{"loc": ["body"], "msg": "bad"}]'),
        (b"<html><body>502 Bad Gateway</body></html>", "<html><body>502 Bad Gateway</body></html>"),
    ],
    ids=["openai", "anthropic", "ollama", "vllm", "fastapi detail", "a proxy's html"],
)
def test_after_its_retries_the_servers_own_message_is_shown(
    model: ScriptedModelServer, body: bytes, said: str
) -> None:
    model.script_sequence("order 12345", Reply(status=502, raw=body))
    with pytest.raises(ProviderUnavailable) as caught:
        ask(providers_for(model), "openai/gpt-test", HELLO)
    assert str(caught.value).endswith(f"; the server said: {said}")
    assert "HTTP 502 after 3 attempts" in str(caught.value)


def test_the_servers_message_is_capped_and_never_carries_the_key(
    model: ScriptedModelServer,
) -> None:
    echo = json.dumps({"error": {"message": f"bad key {SECRET} " + "x" * 1000}}).encode()
    model.script_sequence("order 12345", Reply(status=500, raw=echo))
    with pytest.raises(ProviderUnavailable) as caught:
        ask(providers_for(model), "anthropic/claude-test", HELLO)
    said = str(caught.value).split("the server said: ", 1)[1]
    assert SECRET not in str(caught.value) and said.startswith("bad key *** xxx")
    assert len(said) == 300


def test_a_refusal_is_a_provider_error_but_no_outage(model: ScriptedModelServer) -> None:
    model.script_sequence("order 12345", Reply(status=400, raw=b'{"error": "bad tool"}'))
    with pytest.raises(ProviderError) as caught:
        ask(providers_for(model), "openai/gpt-test", HELLO)
    assert not isinstance(caught.value, ProviderUnavailable)
    assert str(caught.value).endswith(": bad tool")


def test_connection_refused_is_an_outage() -> None:
    with socket.socket() as held:  # bound, never listened on: refused, and no one else's
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        config = provider_config({"providers": {"openai": {"retry": FAST_RETRY}}})
        url = f"http://127.0.0.1:{port}/v1"
        providers = build_providers({"OPENAI_BASE_URL": url}, config=config)
        with pytest.raises(ProviderUnavailable, match=r"no complete reply .* after 3 attempts"):
            ask(providers, "openai/gpt-test", HELLO)


def test_where_replies_come_from_names_the_endpoint_and_its_settings() -> None:
    config = provider_config({"providers": {"anthropic": {"anthropicVersion": "2026-10-21"}}})
    one = build_providers({"OPENAI_BASE_URL": "http://a:1/v1"}, config=config)
    other = build_providers({"OPENAI_BASE_URL": "http://b:2/v1/"}, config=config)
    assert one.identity_of(["openai/m"]) == "openai http://a:1/v1"
    assert other.identity_of(["openai/m"]) == "openai http://b:2/v1"
    assert one.identity_of(["anthropic/c", "openai/m"]) == (
        "anthropic https://api.anthropic.com anthropic-version=2026-10-21\nopenai http://a:1/v1"
    )
    # the key is no part of it
    keyed = build_providers({"OPENAI_BASE_URL": "http://a:1/v1", "OPENAI_API_KEY": "sk-x"})
    assert keyed.identity_of(["openai/m"]) == one.identity_of(["openai/m"])


def test_the_response_cache_is_keyed_by_the_endpoint(
    model: ScriptedModelServer, tmp_path: Any
) -> None:
    model.script("order 12345", text("from A"))
    cache = {"mode": "read-write", "dir": str(tmp_path)}
    first = build_providers(
        {"OPENAI_BASE_URL": model.base_url}, config=provider_config({"cache": cache})
    )
    assert ask(first, "openai/gpt-test", HELLO).content == "from A"
    again = build_providers(
        {"OPENAI_BASE_URL": model.base_url}, config=provider_config({"cache": cache})
    )
    assert ask(again, "openai/gpt-test", HELLO).cached is True
    with socket.socket() as held:  # bound, never listened on: refused, and no one else's
        held.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{held.getsockname()[1]}/v1"
        elsewhere = build_providers(
            {"OPENAI_BASE_URL": dead},
            config=provider_config(
                {"cache": cache, "providers": {"openai": {"retry": FAST_RETRY}}}
            ),
        )
        with pytest.raises(ProviderUnavailable):
            ask(elsewhere, "openai/gpt-test", HELLO)
