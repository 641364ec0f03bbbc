"""Hostile agents and failing upstreams against the model proxy: no secret of evalward's
reaches the agent, and every call is metered and recorded."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Any

import anthropic
import pytest

from evalward.http.client import HttpClient
from evalward.providers.base import RunLabels
from evalward.providers.config import provider_config
from evalward.providers.registry import build_providers
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.models import FixtureInput
from evalward.rundata.spending import PROXY_CALLS_PER_RUN, Allowance
from evalward.rundata.trace import ModelCall, Trace
from evalward.runtime.agents.kinds.http import HttpKind
from evalward.runtime.agents.resolved_agent import ResolvedAgent
from evalward.runtime.agents.runner import AgentRunner, FixtureRun
from evalward.runtime.proxy.model_proxy import Grant, ModelProxy
from evalward.runtime.tools.tools import FixtureTools
from fakes.model_server import ScriptedModelServer, text
from runtime.proxy.test_proxy_streams import (
    ANTHROPIC_KEY,
    OPENAI_KEY,
    claude,
    providers_for,
    through_proxy,
)
from support.suite import provider_env

pytestmark = pytest.mark.integration


def test_a_gateway_password_in_the_base_url_reaches_neither_the_agent_nor_the_trace(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("order 12345", text("Shipped.", cut=True))  # no reply at all
    url = model.anthropic_url.replace("http://", "http://gateway:hunter2-gateway-pass@")
    retry = {"retry": {"attempts": 1, "baseDelaySeconds": 0}}
    providers = build_providers(
        {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": ANTHROPIC_KEY},
        config=provider_config({"providers": {"anthropic": retry}}),
        cache_root=tmp_path,
    )

    async def agent(grant: Grant) -> str:
        try:
            await claude(grant).messages.create(
                model="claude-haiku-4-5",
                max_tokens=64,
                messages=[{"role": "user", "content": "order 12345"}],
            )
        except anthropic.APIError as exc:
            return str(exc)
        return "no error"

    said, trace = through_proxy(providers, agent)
    (upstream,) = model.calls  # the gateway was reached, with its credentials
    assert upstream.headers["authorization"].startswith("Basic ")
    assert "no complete reply" in said and "127.0.0.1" in said  # the message still says where
    (call,) = trace.proxy_calls
    assert call.error is not None and "127.0.0.1" in call.error
    for shown in (said, call.error):
        assert "hunter2-gateway-pass" not in shown and "gateway:" not in shown


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_an_agent_that_hangs_up_once_it_has_the_text_still_pays_for_the_whole_stream(
    model: ScriptedModelServer, tmp_path: Path, api: str
) -> None:
    # the usage comes last (`response.completed`, the usage chunk): an agent that closes the
    # connection as soon as it has the text must not leave the call unmetered
    hold = threading.Event()
    deltas = 3
    held_after = 7 if api == "responses" else 1 + deltas + 1  # right after the last delta
    model.script(
        "order 12345",
        text(
            "Your order 12345 has shipped.",
            pieces=deltas,
            hold=hold,
            hold_after=held_after,
            event_delay=0.05,
        ),
    )
    path = "/responses" if api == "responses" else "/chat/completions"
    body: dict[str, Any] = {"model": "gpt-4.1-mini", "stream": True}
    if api == "responses":
        body["input"] = "order 12345"
    else:
        body["messages"] = [{"role": "user", "content": "order 12345"}]

    async def hang_up_early(grant: Grant) -> bytes:
        client = HttpClient(timeout_seconds=30)
        auth = {"authorization": f"Bearer {grant.key}"}
        received = b""
        try:
            async with client.stream_json(grant.env["OPENAI_BASE_URL"] + path, body, auth) as up:
                async for chunk in up.chunks():
                    received += chunk
                    if b"shipped." in received:  # the last delta
                        break
        finally:
            await client.aclose()  # the connection is gone, mid-stream
        hold.set()
        return received

    allowance = Allowance(max_cost_usd=1.0)
    received, trace = through_proxy(providers_for(model, tmp_path), hang_up_early, allowance)
    assert b"shipped" in received and b"usage" not in received.replace(b'"usage":null', b"")
    (call,) = trace.proxy_calls
    assert call.error == "the agent closed the connection before the stream ended"
    assert call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens) == (10, 5)
    assert allowance.cost_usd == pytest.approx((10 * 0.4 + 5 * 1.6) / 1e6)


STALLING_AGENT = """\
import openai
stream = openai.OpenAI(max_retries=0).chat.completions.create(
    model="gpt-4.1-mini", messages=[{"role": "user", "content": "order 12345"}], stream=True
)
for chunk in stream:
    print(chunk.choices[0].delta.content or "", end="", flush=True)
"""


def test_an_upstream_that_stalls_mid_stream_ends_with_the_run_and_the_call_is_in_its_trace(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    hold = threading.Event()  # the provider goes silent after two events, for good
    model.script("order 12345", text("Your order 12345 has shipped.", hold=hold, hold_after=2))
    (tmp_path / "agent.py").write_text(STALLING_AGENT)
    env = provider_env(model, OPENAI_KEY)
    patient = {"providers": {"openai": {"timeoutSeconds": 600}}}  # far beyond the run's
    providers = build_providers(env, config=provider_config(patient), cache_root=tmp_path)
    spec = AgentSpec.model_validate({"runtime": {"command": {"run": [sys.executable, "agent.py"]}}})
    run = FixtureRun(
        labels=RunLabels(agent="plain", fixture="fx", eval="ev"),
        fixture_input=FixtureInput(type="prompt", payload={"prompt": "order 12345"}),
        tools=FixtureTools(),
        # the stall never ends: the run's timeout is what the test waits for, and 5 s is
        # ample for the agent to start and make its call (under a second here, loaded or not)
        timeout_seconds=5,
    )

    async def go() -> tuple[Trace, list[ModelCall]]:
        proxy = ModelProxy(providers, Allowance(), [OPENAI_KEY])
        agent = ResolvedAgent("plain", spec, "", tmp_path)
        env = {"PATH": "/usr/bin:/bin"}
        runner = AgentRunner(agent, providers, env, kill_grace=0.2, proxy=proxy)
        try:
            trace = await runner.run(run)
            return trace, list(trace.proxy_calls)  # as the run ended
        finally:
            hold.set()  # so that a proxy still waiting on it can close
            await runner.aclose()
            await proxy.aclose()
            await providers.aclose()

    trace, calls = asyncio.run(go())
    assert trace.timed_out
    (call,) = calls  # recorded in the run's own trace, not after it
    assert call.streamed and call.error is not None
    assert "the run ended before the stream did" in call.error
    # its usage never came: it is charged as what it carried, never as nothing
    assert call.usage is not None and call.usage.input_tokens > 0 and call.usage.output_tokens > 0
    assert call.usage.cost_usd is not None and call.usage.cost_usd > 0
    assert f"charged as the {call.usage.output_tokens} output tokens it carried" in call.error


STALLING_SERVER = """\
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

import openai


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()

    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        stream = openai.OpenAI(max_retries=0).chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": "order 12345"}],
            stream=True,
        )
        for _ in stream:
            pass


HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def test_a_model_call_an_http_agent_leaves_in_flight_ends_when_its_server_stops(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    """An http agent's key outlives each run, so no run's end cuts its calls: stopping the
    server does, instead of the provider's timeout holding the end of the whole run."""
    hold = threading.Event()  # the provider goes silent after two events, for good
    model.script("order 12345", text("Your order 12345 has shipped.", hold=hold, hold_after=2))
    (tmp_path / "server.py").write_text(STALLING_SERVER)
    env = provider_env(model, OPENAI_KEY)
    patient = {"providers": {"openai": {"timeoutSeconds": 600}}}
    providers = build_providers(env, config=provider_config(patient), cache_root=tmp_path)
    http = {
        "start": [sys.executable, "server.py", "{port}"],
        "ready": "http://127.0.0.1:{port}/ready",
        "url": "http://127.0.0.1:{port}/run",
    }
    spec = AgentSpec.model_validate({"runtime": {"http": http}})
    run = FixtureRun(
        labels=RunLabels(agent="server", fixture="fx", eval="ev"),
        fixture_input=FixtureInput(type="prompt", payload={"prompt": "order 12345"}),
        tools=FixtureTools(),
        timeout_seconds=600,
    )

    async def go() -> tuple[int, int]:
        proxy = ModelProxy(providers, Allowance(), [OPENAI_KEY])
        agent = ResolvedAgent("server", spec, "", tmp_path)
        runner = AgentRunner(
            agent, providers, {"PATH": "/usr/bin:/bin"}, kill_grace=0.2, proxy=proxy
        )
        running = asyncio.create_task(runner.run(run))
        try:
            async with asyncio.timeout(300):  # only ends a hung test; it takes seconds
                while not model.requests_mentioning("order 12345"):  # the call reached upstream
                    await asyncio.sleep(0.05)
                assert isinstance(runner.kind, HttpKind) and runner.kind.server.grant is not None
                grant = runner.kind.server.grant
                while grant.calls_in_flight == 0:  # and the proxy is answering it
                    await asyncio.sleep(0.05)
            before = grant.calls_in_flight
            running.cancel()
            await runner.aclose()  # the server stops; the provider is still silent
            return before, grant.calls_in_flight
        finally:
            running.cancel()
            hold.set()
            await runner.aclose()
            await proxy.aclose()
            await providers.aclose()

    assert asyncio.run(go()) == (1, 0)


def test_model_lists_count_against_a_runs_share_of_calls_with_no_budget_at_all(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    async def agent(grant: Grant) -> list[int]:
        statuses = []
        client = HttpClient(timeout_seconds=30)
        try:
            for _ in range(PROXY_CALLS_PER_RUN + 5):
                auth = {"authorization": f"Bearer {grant.key}"}
                reply = await client.get(grant.env["OPENAI_BASE_URL"] + "/models", auth)
                statuses.append(reply.status)
        finally:
            await client.aclose()
        return statuses

    statuses, trace = through_proxy(providers_for(model, tmp_path), agent, Allowance())
    assert statuses == [200] * PROXY_CALLS_PER_RUN + [429] * 5
    assert len(model.targets) == PROXY_CALLS_PER_RUN
    assert [c.status for c in trace.proxy_calls] == statuses
    assert "this run's share of model calls is spent" in (trace.proxy_calls[-1].error or "")
