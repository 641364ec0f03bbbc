"""The model proxy with real agents (subprocesses, the official SDKs), a real provider (the
scripted model server) and real HTTP between them: keys, routes, streaming, the budget, the
response cache, upstream failures and what lands in the trace."""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from evalward.http.client import HttpClient
from evalward.providers.base import RunLabels
from evalward.providers.config import provider_config
from evalward.providers.registry import Providers, build_providers
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.models import FixtureInput
from evalward.rundata.spending import Allowance, Budget, Estimate
from evalward.rundata.trace import ModelCall, StepType, Trace, Usage
from evalward.runtime.agents.resolved_agent import ResolvedAgent
from evalward.runtime.agents.runner import AgentRunner, FixtureRun
from evalward.runtime.proxy.model_proxy import ModelProxy, agent_environment, provider_key_names
from evalward.runtime.tools.tools import FixtureTools
from fakes.model_server import ScriptedModelServer, error, text, tool_call
from support.sdk_clients import close_kept, kept

pytestmark = pytest.mark.integration

AGENTS = Path(__file__).resolve().parents[2] / "agents"
OPENAI_KEY = "sk-real-openai-0123456789"
ANTHROPIC_KEY = "sk-ant-real-0123456789"


def providers_for(model: ScriptedModelServer, tmp_path: Path, **config: Any) -> Providers:
    env = {
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": OPENAI_KEY,
        "ANTHROPIC_BASE_URL": model.anthropic_url,
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
    }
    retry = {"retry": {"attempts": 2, "baseDelaySeconds": 0}}
    settings = provider_config({"providers": {"openai": retry, "anthropic": retry}, **config})
    return build_providers(env, config=settings, cache_root=tmp_path)


def run_async(body: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    return asyncio.run(body())


async def proxied(providers: Providers, allowance: Allowance | None = None) -> ModelProxy:
    proxy = ModelProxy(providers, allowance, [OPENAI_KEY, ANTHROPIC_KEY])
    await proxy.ensure_started()
    return proxy


async def closed(proxy: ModelProxy) -> None:
    """The SDKs' clients closed (`kept`), the proxy stopped and its providers' connection
    pools closed (the run's end)."""
    await close_kept()
    await proxy.aclose()
    await proxy.providers.aclose()


def labels(fixture: str = "fx", rep: int = 0) -> RunLabels:
    return RunLabels(agent="byo", fixture=fixture, eval="ev", rep=rep)


def fixture_run(prompt: str, fixture: str = "fx") -> FixtureRun:
    return FixtureRun(
        labels=labels(fixture),
        fixture_input=FixtureInput(type="prompt", payload={"prompt": prompt}),
        tools=FixtureTools(),
        timeout_seconds=60,
    )


def command_agent(tmp_path: Path, script: str, proxy: ModelProxy, **spec: Any) -> AgentRunner:
    shutil.copy(AGENTS / script, tmp_path / script)
    agent_spec = AgentSpec.model_validate(
        {"runtime": {"command": {"run": [sys.executable, script]}}, **spec}
    )
    agent = ResolvedAgent("byo", agent_spec, "", tmp_path)
    env = {"PATH": "/usr/bin:/bin"}
    return AgentRunner(agent, proxy.providers, env, kill_grace=0.2, proxy=proxy)


async def run_agent(runner: AgentRunner, *runs: FixtureRun) -> list[Trace]:
    try:
        return list(await asyncio.gather(*(runner.run(r) for r in runs)))
    finally:
        await runner.aclose()


# --- agents written against the official SDKs -----------------------------------------------


def test_an_agent_using_the_official_sdks_unchanged_is_served_with_the_real_key_upstream(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("hello", text('{"greeting": "hi"}'))

    async def go() -> Trace:
        proxy = await proxied(providers_for(model, tmp_path))
        try:
            (trace,) = await run_agent(
                command_agent(tmp_path, "sdk_agent.py", proxy), fixture_run("hello")
            )
            return trace
        finally:
            await closed(proxy)

    trace = run_async(go)
    assert trace.error is None, trace.stderr
    assert trace.final_output == '{"greeting": "hi"} / {"greeting": "hi"}'
    assert [(c.api, c.model, c.status) for c in trace.proxy_calls] == [
        ("openai", "openai/gpt-4.1-mini", 200),
        ("anthropic", "anthropic/claude-haiku-4-5", 200),
    ]
    openai_call, anthropic_call = model.calls
    assert openai_call.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert anthropic_call.headers["x-api-key"] == ANTHROPIC_KEY
    # the request went upstream as the SDK wrote it: nothing the proxy does not model is lost
    assert openai_call.body["response_format"] == {"type": "json_object"}
    assert trace.usage == Usage(input_tokens=20, output_tokens=10, cost_usd=trace.usage.cost_usd)
    assert trace.usage.cost_usd == pytest.approx((10 * 0.4 + 5 * 1.6 + 10 * 1.0 + 5 * 5.0) / 1e6)


@pytest.fixture
def server(model: ScriptedModelServer, tmp_path: Path) -> Providers:
    model.script("hello", text("hi there"))
    return providers_for(model, tmp_path)


def test_wrong_missing_and_expired_keys_are_refused_in_each_providers_shape(
    server: Providers, model: ScriptedModelServer
) -> None:
    async def go() -> None:
        proxy = await proxied(server)
        trace = Trace()
        try:
            with proxy.granted(labels(), trace) as grant:
                good = kept(
                    openai.AsyncOpenAI(base_url=grant.env["OPENAI_BASE_URL"], api_key=grant.key)
                )
                reply = await good.chat.completions.create(
                    model="gpt-4.1-mini", messages=[{"role": "user", "content": "hello"}]
                )
                assert reply.choices[0].message.content == "hi there"
                wrong = kept(
                    openai.AsyncOpenAI(base_url=grant.env["OPENAI_BASE_URL"], api_key=OPENAI_KEY)
                )
                with pytest.raises(openai.AuthenticationError, match="does not accept this key"):
                    await wrong.chat.completions.create(
                        model="gpt-4.1-mini", messages=[{"role": "user", "content": "hello"}]
                    )
                claude = kept(
                    anthropic.AsyncAnthropic(
                        base_url=grant.env["ANTHROPIC_BASE_URL"], api_key="sk-ant-guess"
                    )
                )
                with pytest.raises(anthropic.AuthenticationError) as refused:
                    await claude.messages.create(
                        model="claude-haiku-4-5",
                        max_tokens=10,
                        messages=[{"role": "user", "content": "hello"}],
                    )
                body = refused.value.body
                assert isinstance(body, dict) and body["type"] == "error"
                assert body["error"]["type"] == "authentication_error"
                assert "does not accept this key" in body["error"]["message"]
                client = HttpClient(timeout_seconds=10)
                bare = await client.post_json(
                    grant.env["OPENAI_BASE_URL"] + "/chat/completions", {"model": "m"}
                )
                assert bare.status == 401
                assert bare.json()["error"]["code"] == "invalid_api_key"
                assert bare.headers["x-should-retry"] == "false"
            # the run is over: its key is dead
            expired = await client.post_json(
                grant.env["OPENAI_BASE_URL"] + "/chat/completions",
                {"model": "m", "messages": [{"role": "user", "content": "hello"}]},
                {"authorization": f"Bearer {grant.key}"},
            )
            assert expired.status == 401
            await client.aclose()
        finally:
            await closed(proxy)
        assert len(trace.proxy_calls) == 1  # only the call with the run's key

    run_async(go)
    assert len(model.calls) == 1


def test_unknown_routes_and_bad_bodies_are_refused_clearly_kept_in_the_trace_and_reach_no_provider(
    server: Providers, model: ScriptedModelServer
) -> None:
    trace = Trace()

    async def go() -> None:
        proxy = await proxied(server)
        try:
            with proxy.granted(labels(), trace) as grant:
                gpt = kept(
                    openai.AsyncOpenAI(
                        base_url=grant.env["OPENAI_BASE_URL"], api_key=grant.key, max_retries=0
                    )
                )
                with pytest.raises(openai.NotFoundError, match="serves POST /v1/chat/completions"):
                    await gpt.audio.speech.create(model="tts-1", voice="alloy", input="hi")
                with pytest.raises(openai.NotFoundError, match="POST /v1/responses"):
                    await gpt.completions.create(model="gpt-3.5-turbo-instruct", prompt="hi")
                claude = kept(
                    anthropic.AsyncAnthropic(
                        base_url=grant.env["ANTHROPIC_BASE_URL"], api_key=grant.key, max_retries=0
                    )
                )
                with pytest.raises(anthropic.NotFoundError) as missing:
                    await claude.messages.count_tokens(
                        model="claude-haiku-4-5", messages=[{"role": "user", "content": "hi"}]
                    )
                assert isinstance(missing.value.body, dict)
                assert missing.value.body["error"]["type"] == "not_found_error"
                client = HttpClient(timeout_seconds=10)
                auth = {"authorization": f"Bearer {grant.key}"}
                url = grant.env["OPENAI_BASE_URL"] + "/chat/completions"
                for body, problem in (
                    ({"messages": []}, "`model` (a string) is required"),
                    (["not", "an", "object"], "`model` (a string) is required"),
                ):
                    reply = await client.post_json(url, body, auth)
                    assert reply.status == 400
                    assert reply.json()["error"]["message"] == problem
                await client.aclose()
        finally:
            await closed(proxy)

    run_async(go)
    assert model.calls == []
    assert [(c.endpoint, c.status) for c in trace.proxy_calls] == [
        ("POST /v1/audio/speech", 404),
        ("POST /v1/completions", 404),
        ("POST /v1/messages/count_tokens", 404),
        ("POST /v1/chat/completions", 400),
        ("POST /v1/chat/completions", 400),
    ]
    assert all(c.error for c in trace.proxy_calls)
    assert trace.model_calls == 0  # none of them reached a model


# --- the budget ------------------------------------------------------------------------------


def test_calls_past_the_budget_are_refused_and_the_run_is_marked(
    server: Providers, model: ScriptedModelServer, tmp_path: Path
) -> None:
    allowance = Allowance(max_calls=2)

    async def go() -> list[Trace]:
        proxy = await proxied(server, allowance)
        try:
            runner = command_agent(tmp_path, "proxy_agent.py", proxy)
            return await run_agent(runner, fixture_run("calls 3: hello"))
        finally:
            await closed(proxy)

    (trace,) = run_async(go)
    statuses = trace.final_output.split(" | ")
    assert statuses[:2] == ["200", "200"]
    assert statuses[2].startswith("429 evalward refused this call: the job's model-call budget")
    assert len(model.calls) == 2
    # the refused call is in the trace too, with why it was refused
    assert [c.status for c in trace.proxy_calls] == [200, 200, 429]
    assert "model-call budget is spent" in (trace.proxy_calls[2].error or "")
    assert trace.model_calls == 2
    errors = [s for s in trace.steps if s.type is StepType.error]
    assert len(errors) == 1
    assert "max-model-calls" in errors[0].content
    assert trace.error is not None  # so the fixture is an error, and never result-cached


def test_each_run_has_its_share_of_calls_whatever_the_budget(
    server: Providers, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """No budget is set, yet one run's agent cannot spend the provider's limits the judge
    needs: past its share, its calls are refused, and another run still has all of its own."""
    allowance = Allowance(per_run=2)

    async def go() -> list[Trace]:
        proxy = await proxied(server, allowance)
        try:
            runner = command_agent(tmp_path, "proxy_agent.py", proxy)
            greedy = await run_agent(runner, fixture_run("calls 3: hello", "greedy"))
            other = await run_agent(runner, fixture_run("calls 2: hello", "other"))
            return [*greedy, *other]
        finally:
            await closed(proxy)

    greedy, other = run_async(go)
    statuses = greedy.final_output.split(" | ")
    assert statuses[:2] == ["200", "200"]
    assert statuses[2].startswith("429 evalward refused this call: this run's share of model")
    assert greedy.error is not None and "a fixture run may make 2 calls" in greedy.error
    assert other.final_output == "200 | 200" and other.error is None
    assert len(model.calls) == 4


def test_the_cost_allowance_refuses_a_call_it_cannot_hold_at_its_worst(
    server: Providers, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """A call is let through only while what is left holds its worst cost: one that names no
    output limit is held for the most a reply may write, more than the $0.10 left."""
    allowance = Allowance(max_cost_usd=0.1)

    async def go() -> list[Trace]:
        proxy = await proxied(server, allowance)
        try:
            runner = command_agent(tmp_path, "proxy_agent.py", proxy)
            return await run_agent(runner, fixture_run("calls 2: hello"))
        finally:
            await closed(proxy)

    (trace,) = run_async(go)
    first, second = trace.final_output.split(" | ")
    assert first.startswith("429 evalward refused this call: the job's cost budget cannot hold")
    assert "(max-cost-usd)" in first and second.startswith("429")
    assert model.calls == []
    assert (allowance.calls, allowance.cost_usd, allowance.held_usd) == (0, 0.0, 0.0)


def test_a_model_without_a_price_is_refused_while_dollars_are_counted(
    server: Providers, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """A call whose cost cannot be counted would slip past `max-cost-usd`: the pull request's
    agent could spend without limit on a model missing from the price table."""
    allowance = Allowance(max_cost_usd=5.0)

    async def go() -> list[Trace]:
        proxy = await proxied(server, allowance)
        try:
            runner = command_agent(tmp_path, "proxy_agent.py", proxy)
            return await run_agent(runner, fixture_run("calls 2 model=gpt-unpriced-pro: hi"))
        finally:
            await closed(proxy)

    (trace,) = run_async(go)
    statuses = trace.final_output.split(" | ")
    assert len(statuses) == 2 and all(s.startswith("429 evalward refused") for s in statuses)
    assert "openai/gpt-unpriced-pro has no price" in statuses[0]
    assert "pricing" in statuses[0]
    assert model.calls == [] and allowance.calls == 0
    assert trace.error is not None  # so the fixture is an error, and never result-cached
    # without a cost budget (calls only, or none) the same model is served
    calls_only = Allowance(max_calls=5)

    async def again() -> list[Trace]:
        proxy = await proxied(server, calls_only)
        try:
            runner = command_agent(tmp_path, "proxy_agent.py", proxy)
            return await run_agent(runner, fixture_run("calls 1 model=gpt-unpriced-pro: hi"))
        finally:
            await closed(proxy)

    (served,) = run_async(again)
    assert served.final_output == "200" and calls_only.calls == 1


def test_the_allowance_is_what_the_plans_estimate_leaves() -> None:
    assert Allowance.left_by(Budget(), None) is None
    left = Allowance.left_by(Budget(max_model_calls=10, max_cost_usd=1.0), Estimate(4, 0.25))
    assert left is not None and (left.max_calls, left.max_cost_usd) == (6, 0.75)
    spent = Allowance.left_by(Budget(max_model_calls=3), Estimate(5, None))
    assert spent is not None and spent.max_calls == 0 and asyncio.run(spent.admit()) is not None
    unpriced = Allowance.left_by(Budget(max_cost_usd=2.0), Estimate(1, None))
    assert unpriced is not None and unpriced.max_cost_usd == 2.0


# --- the response cache and upstream failures -------------------------------------------------


def test_a_repeated_call_is_served_from_the_response_cache_per_rep(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("hello", text("hi there"))
    providers = providers_for(model, tmp_path, cache={"mode": "read-write", "dir": "cache"})

    async def go() -> list[Trace]:
        proxy = await proxied(providers)
        try:
            runner = command_agent(tmp_path, "proxy_agent.py", proxy)
            first = await runner.run(fixture_run("calls 1: hello"))
            again = await runner.run(fixture_run("calls 1: hello"))
            other_rep = FixtureRun(
                labels=labels(rep=1),
                fixture_input=FixtureInput(type="prompt", payload={"prompt": "calls 1: hello"}),
                tools=FixtureTools(),
                timeout_seconds=60,
            )
            third = await runner.run(other_rep)
            await runner.aclose()
            return [first, again, third]
        finally:
            await closed(proxy)

    first, again, other_rep = run_async(go)
    assert [t.final_output for t in (first, again, other_rep)] == ["200"] * 3
    assert len(model.calls) == 2  # the second run's call was cached; rep 1 has its own entry
    (hit,) = again.proxy_calls
    assert hit.cached and again.cache_hits == 1
    assert hit.usage is not None and hit.usage.input_tokens == 10
    assert not other_rep.proxy_calls[0].cached


def test_a_head_run_s_call_is_never_the_base_s_reply_from_the_response_cache(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    """A pull request's program may send the very request the base's agent will send, at its
    rep, and keep the reply it likes (a stream it cuts is not stored): the base's call is
    answered upstream, not from what the head left in the cache; each side's own repeat is."""
    model.script("hello", text("hi there"))
    providers = providers_for(model, tmp_path, cache={"mode": "read-write", "dir": "cache"})

    def on(side: str) -> FixtureRun:
        return FixtureRun(
            labels=RunLabels(agent="byo", fixture="fx", eval="ev", rep=0, side=side),
            fixture_input=FixtureInput(type="prompt", payload={"prompt": "calls 1: hello"}),
            tools=FixtureTools(),
            timeout_seconds=60,
        )

    async def go() -> list[Trace]:
        proxy = await proxied(providers)
        try:
            runner = command_agent(tmp_path, "proxy_agent.py", proxy)
            traces = [await runner.run(on(side)) for side in ("head", "base", "base", "head")]
            await runner.aclose()
            return traces
        finally:
            await closed(proxy)

    head, base, base_again, head_again = run_async(go)
    assert len(model.calls) == 2
    assert [t.proxy_calls[0].cached for t in (head, base, base_again, head_again)] == [
        False,
        False,
        True,
        True,
    ]


def test_an_agent_server_s_own_calls_are_neither_kept_nor_answered_from_the_response_cache(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    """A call made with an http agent server's own key (as it starts, say) belongs to no run
    and so to neither side: the head's server could otherwise keep the reply it likes to a
    request the base's server sends as it starts. Each is asked of the model."""
    model.script("hello", text("hi there"))
    providers = providers_for(model, tmp_path, cache={"mode": "read-write", "dir": "cache"})

    async def go() -> None:
        proxy = await proxied(providers)
        try:
            for _ in ("head's server", "base's server"):
                grant = proxy.open_grant(RunLabels(agent="byo"), None)
                gpt = kept(
                    openai.AsyncOpenAI(
                        base_url=grant.env["OPENAI_BASE_URL"], api_key=grant.key, max_retries=0
                    )
                )
                await gpt.chat.completions.create(
                    model="gpt-4.1-mini", messages=[{"role": "user", "content": "hello"}]
                )
                proxy.revoke(grant)
        finally:
            await closed(proxy)

    run_async(go)
    assert len(model.calls) == 2
    assert not list((tmp_path / "cache").rglob("*.json"))


def test_upstream_failures_are_passed_on_without_the_key_and_recorded(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("overloaded", error(503))
    model.script("forbidden", error(401))
    providers = providers_for(model, tmp_path)

    async def go() -> Trace:
        proxy = await proxied(providers)
        trace = Trace()
        try:
            with proxy.granted(labels(), trace) as grant:
                gpt = kept(
                    openai.AsyncOpenAI(
                        base_url=grant.env["OPENAI_BASE_URL"], api_key=grant.key, max_retries=3
                    )
                )
                with pytest.raises(openai.InternalServerError, match="scripted error"):
                    await gpt.chat.completions.create(
                        model="gpt-4.1-mini", messages=[{"role": "user", "content": "overloaded"}]
                    )
                with pytest.raises(openai.AuthenticationError) as rejected:
                    await gpt.chat.completions.create(
                        model="gpt-4.1-mini", messages=[{"role": "user", "content": "forbidden"}]
                    )
                assert "rejected evalward's key" in str(rejected.value)
                assert OPENAI_KEY not in str(rejected.value.body)
        finally:
            await closed(proxy)
        return trace

    trace = run_async(go)
    # evalward retried the 503 (2 attempts) and said not to retry again: the SDK did not
    assert [c.body["messages"][0]["content"] for c in model.calls] == [
        "overloaded",
        "overloaded",
        "forbidden",
    ]
    assert [c.status for c in trace.proxy_calls] == [503, 401]
    assert all(c.error for c in trace.proxy_calls)
    assert trace.failed_proxy_calls == trace.proxy_calls


# --- keys in the environment, and who a call belongs to ---------------------------------------


def test_the_agent_environment_loses_every_provider_key_and_every_copy_of_one() -> None:
    env = {
        "PATH": "/bin",
        "OPENAI_API_KEY": OPENAI_KEY,
        "OLLAMA_KEY": "ollama-secret-value",
        "COPY": OPENAI_KEY,
        "HEADER": f"Bearer {OPENAI_KEY}",
        "SHORT": "x",
        "ANTHROPIC_API_KEY": "",
    }
    kept, keys = agent_environment(env, ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_KEY"])
    assert kept == {"PATH": "/bin", "SHORT": "x"}
    assert sorted(keys) == sorted([OPENAI_KEY, "ollama-secret-value"])
    configured = build_providers(
        {}, config=provider_config({"providers": {"openai": {"apiKeyEnv": "OLLAMA_KEY"}}})
    )
    assert provider_key_names(configured) == ["ANTHROPIC_API_KEY", "OLLAMA_KEY", "OPENAI_API_KEY"]


def test_an_http_server_key_is_metered_but_lands_in_no_trace(
    server: Providers, model: ScriptedModelServer
) -> None:
    allowance = Allowance(max_calls=5)

    async def go() -> None:
        proxy = await proxied(server, allowance)
        try:
            grant = proxy.open_grant(RunLabels(agent="byo"), None)
            gpt = kept(openai.AsyncOpenAI(base_url=grant.env["OPENAI_BASE_URL"], api_key=grant.key))
            reply = await gpt.chat.completions.create(
                model="gpt-4.1-mini", messages=[{"role": "user", "content": "hello"}]
            )
            assert reply.usage is not None and reply.usage.prompt_tokens == 10
            proxy.revoke(grant)
        finally:
            await closed(proxy)

    run_async(go)
    assert allowance.calls == 1


def test_a_declarative_agents_command_tool_calls_through_the_proxy_and_both_usages_count(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("Summarise the order", text("a summary"))
    model.script("where is my order", tool_call("summarise", {}), text("It shipped: a summary"))
    (tmp_path / "tool.py").write_text(
        "import json, os, urllib.request\n"
        "body = json.dumps({'model': 'gpt-4.1-mini', 'messages': "
        "[{'role': 'user', 'content': 'Summarise the order'}]}).encode()\n"
        "request = urllib.request.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions', "
        "data=body, headers={'authorization': 'Bearer ' + os.environ['OPENAI_API_KEY'], "
        "'content-type': 'application/json'})\n"
        "print(json.load(urllib.request.urlopen(request))['choices'][0]['message']['content'])\n"
    )
    spec = AgentSpec.model_validate(
        {
            "models": ["openai/gpt-4.1-mini"],
            "tools": [{"name": "summarise", "command": [sys.executable, "tool.py"]}],
        }
    )
    providers = providers_for(model, tmp_path)

    async def go() -> Trace:
        proxy = ModelProxy(providers, None, [OPENAI_KEY])
        agent = ResolvedAgent("byo", spec, "", tmp_path)
        runner = AgentRunner(agent, providers, {"PATH": "/usr/bin:/bin"}, proxy=proxy)
        try:
            (trace,) = await run_agent(runner, fixture_run("where is my order"))
            return trace
        finally:
            await closed(proxy)

    trace = run_async(go)
    assert trace.final_output == "It shipped: a summary"
    assert [s.output for s in trace.steps if s.type is StepType.tool_result] == ["a summary"]
    assert len(trace.proxy_calls) == 1
    assert trace.model_calls == 3  # two turns of evalward's loop, one call of the tool's
    assert trace.usage.input_tokens == 30
    tool_call_upstream = model.requests_mentioning("Summarise the order")
    assert len(tool_call_upstream) == 1


def test_an_agents_own_usage_is_not_added_to_what_the_proxy_measured() -> None:
    trace = Trace()
    trace.add(StepType.final, content="done", usage=Usage(input_tokens=1, reported=True))
    assert trace.usage.input_tokens == 1 and trace.usage.reported
    trace.proxy_calls.append(
        ModelCall(api="openai", model="openai/m", status=200, usage=Usage(input_tokens=500))
    )
    assert trace.usage.input_tokens == 500 and not trace.usage.reported


def test_a_provider_evalward_holds_no_key_for_is_refused_before_any_request() -> None:
    async def go() -> None:
        proxy = ModelProxy(build_providers({}))  # no key, the providers' real addresses
        await proxy.ensure_started()
        try:
            with proxy.granted(labels(), Trace()) as grant:
                claude = kept(
                    anthropic.AsyncAnthropic(
                        base_url=grant.env["ANTHROPIC_BASE_URL"], api_key=grant.key
                    )
                )
                with pytest.raises(anthropic.AuthenticationError, match="set ANTHROPIC_API_KEY"):
                    await claude.messages.create(
                        model="claude-haiku-4-5",
                        max_tokens=10,
                        messages=[{"role": "user", "content": "hello"}],
                    )
        finally:
            await closed(proxy)

    run_async(go)
