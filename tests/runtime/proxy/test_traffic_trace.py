"""Agents with no adapter, on the official SDKs, through the model proxy: every API and
stream shape they send is served, and their trace comes from their traffic — the tool calls
the model asked for, the results the agent sent back, the last answer — merged with the
events an agent does print, never counted twice."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from evalward.providers.base import RunLabels
from evalward.providers.registry import Providers, build_providers
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.models import FixtureInput
from evalward.rundata.trace import Trace
from evalward.runtime.agents.resolved_agent import ResolvedAgent
from evalward.runtime.agents.runner import AgentRunner, FixtureRun
from evalward.runtime.proxy.model_proxy import ModelProxy
from evalward.runtime.tools.tools import FixtureTools
from fakes.http import quiet_listener

pytestmark = pytest.mark.integration

AGENTS = Path(__file__).resolve().parents[2] / "agents"
QUESTION = "Where is my order 12345?"
ANSWER = "Your order 12345 has shipped."
SCRIPT = f"""\
replies:
  - match: {{ fixture: fx }}
    turns:
      - toolCalls: [{{ name: lookup_order, arguments: {{ order_id: "12345" }} }}]
      - content: {ANSWER}
"""
APIS = {
    "chat": "POST /v1/chat/completions",
    "responses": "POST /v1/responses",
    "messages": "POST /v1/messages",
}


def mock_providers(tmp_path: Path) -> Providers:
    (tmp_path / "mock.yaml").write_text(SCRIPT)
    return build_providers({}, mock_script=str(tmp_path / "mock.yaml"), cache_root=tmp_path)


def run_agent(tmp_path: Path, command: dict[str, Any], env: dict[str, str] | None = None) -> Trace:
    """One fixture run of a `runtime.command` agent, its calls answered by the mock script;
    `env` is evalward's environment (what the agent's `env:` list may take from)."""
    spec = AgentSpec.model_validate({"runtime": {"command": command}})
    agent = ResolvedAgent("plain", spec, "", tmp_path)
    providers = mock_providers(tmp_path)
    run = FixtureRun(
        labels=RunLabels(agent="plain", fixture="fx", eval="ev"),
        fixture_input=FixtureInput(type="prompt", payload={"prompt": QUESTION}),
        tools=FixtureTools(),
        timeout_seconds=60,
    )

    async def go() -> Trace:
        proxy = ModelProxy(providers)
        runner = AgentRunner(
            agent, providers, {"PATH": "/usr/bin:/bin", **(env or {})}, kill_grace=0.2, proxy=proxy
        )
        try:
            return await runner.run(run)
        finally:
            await runner.aclose()
            await proxy.aclose()

    return asyncio.run(go())


def run_plain_agent(tmp_path: Path, *flags: str) -> Trace:
    """The plain agent, with the question in its argv."""
    shutil.copy(AGENTS / "plain_agent.py", tmp_path / "agent.py")
    return run_agent(tmp_path, {"run": [sys.executable, "agent.py", "{input}", *flags]})


def shape(trace: Trace) -> list[tuple[str, str | None, str | None]]:
    return [(s.type.value, s.tool, s.via) for s in trace.steps]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", list(APIS))
def test_a_plain_sdk_agent_is_traced_from_its_traffic(
    tmp_path: Path, api: str, stream: bool
) -> None:
    flags = ["--api", api, *(["--stream"] if stream else [])]
    trace = run_plain_agent(tmp_path, *flags)
    assert trace.error is None, (trace.steps, trace.stderr)
    assert shape(trace) == [
        ("input", None, None),
        ("tool_call", "lookup_order", "proxy"),
        ("tool_result", "lookup_order", "proxy"),
        ("final", None, "proxy"),
    ]
    call, result, final = trace.steps[1:]
    assert call.arguments == {"order_id": "12345"}
    assert result.call_id == call.call_id and '"status": "shipped"' in (result.output or "")
    assert final.content == ANSWER
    assert [(c.endpoint, c.status, c.streamed) for c in trace.proxy_calls] == [
        (APIS[api], 200, stream),
        (APIS[api], 200, stream),
    ]
    assert trace.model_calls == 2
    assert all(c.usage is not None and c.usage.input_tokens > 0 for c in trace.proxy_calls)
    if stream:
        assert all(c.first_byte_ms is not None for c in trace.proxy_calls)


def test_a_frameworks_log_on_stdout_breaks_nothing_and_is_not_the_answer(tmp_path: Path) -> None:
    trace = run_plain_agent(tmp_path, "--api", "responses", "--chatty")
    assert trace.error is None, trace.steps
    assert trace.final_output == ANSWER  # the model's answer, found word for word in stdout


def test_printed_events_and_the_traffic_are_one_trace(tmp_path: Path) -> None:
    trace = run_plain_agent(tmp_path, "--api", "chat", "--events")
    assert trace.error is None, trace.steps
    calls = trace.tool_calls()
    assert len(calls) == 1  # printed by the agent and seen by the proxy: one step
    assert calls[0].arguments == {"order_id": "12345"}


def test_an_agent_whose_stdout_is_its_own_words_keeps_them_as_its_answer(tmp_path: Path) -> None:
    (tmp_path / "say.py").write_text(
        "import sys\nprint('Answer to', repr(sys.stdin.read().strip()))\n"
    )
    trace = run_agent(tmp_path, {"run": [sys.executable, "say.py"], "stdin": "text"})
    assert trace.error is None
    assert trace.final_output == f"Answer to {QUESTION!r}"
    assert trace.proxy_calls == []


def test_embeddings_and_model_lists_are_served_and_the_embedding_call_is_metered(
    tmp_path: Path,
) -> None:
    trace = run_plain_agent(tmp_path, "--api", "chat", "--embed")
    assert trace.error is None, (trace.steps, trace.stderr)
    assert "embedded into 1536 numbers" in trace.stderr
    assert [c.endpoint for c in trace.proxy_calls] == [
        "POST /v1/embeddings",
        "POST /v1/chat/completions",
        "POST /v1/chat/completions",
    ]
    assert trace.proxy_calls[0].usage is not None and trace.proxy_calls[0].usage.input_tokens > 0


@pytest.mark.parametrize("export", ["protobuf", "json"])
def test_exported_spans_are_read_into_the_trace(tmp_path: Path, export: str) -> None:
    shutil.copy(AGENTS / "otel_agent.py", tmp_path / "agent.py")
    flags = ["--json"] if export == "json" else []
    trace = run_agent(tmp_path, {"run": [sys.executable, "agent.py", "{input}", *flags]})
    assert trace.error is None, (trace.steps, trace.stderr)
    assert shape(trace) == [
        ("input", None, None),
        ("tool_call", "lookup_order", "otel"),
        ("tool_result", "lookup_order", "otel"),
        ("final", None, None),  # settled once the spans are in
    ]
    assert trace.steps[1].arguments == {"order_id": "12345"}
    assert trace.steps[2].output == '{"status": "shipped"}'


def test_a_tool_call_seen_by_the_proxy_and_in_a_span_is_one_step(tmp_path: Path) -> None:
    shutil.copy(AGENTS / "otel_agent.py", tmp_path / "agent.py")
    trace = run_agent(tmp_path, {"run": [sys.executable, "agent.py", "{input}", "--model"]})
    assert trace.error is None, (trace.steps, trace.stderr)
    calls = trace.tool_calls()
    assert [(c.tool, c.via) for c in calls] == [("lookup_order", "proxy")]
    results = [s for s in trace.steps if s.type.value == "tool_result"]
    assert [(r.tool, r.via) for r in results] == [("lookup_order", "otel")]


class ConnectRecorder:
    """An HTTP(S) proxy that records where clients try to go and lets nobody through."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []
        # off the ports evalward's servers are given, whose readiness probes it would record
        self._server = quiet_listener()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(5)
                with contextlib.suppress(OSError):
                    self.seen.append(connection.recv(4096).split(b"\r\n")[0])
                    connection.sendall(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")

    def close(self) -> None:
        """Wake the accept and wait for the thread before closing: a listening socket closed
        under it frees its descriptor for the next socket this process opens (a later test's
        model server), whose clients the thread would then answer with its 403."""
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=30)
        self._server.close()


@pytest.mark.parametrize("stream", [False, True], ids=["run", "run_streamed"])
def test_an_openai_agents_sdk_agent_runs_as_documented_and_sends_no_trace_out(
    tmp_path: Path, stream: bool
) -> None:
    recorder = ConnectRecorder()
    outside = {"HTTPS_PROXY": recorder.url, "HTTP_PROXY": recorder.url}
    shutil.copy(AGENTS / "agents_sdk_agent.py", tmp_path / "agent.py")
    run = [sys.executable, "agent.py", "{input}", *(["--stream"] if stream else [])]
    try:
        trace = run_agent(tmp_path, {"run": run, "env": list(outside)}, outside)
        assert recorder.seen == []
        control = run_agent(
            tmp_path, {"run": [*run, "--export-traces"], "env": list(outside)}, outside
        )
    finally:
        recorder.close()
    assert trace.error is None, (trace.steps, trace.stderr)
    assert shape(trace) == [
        ("input", None, None),
        ("tool_call", "lookup_order", "proxy"),
        ("tool_result", "lookup_order", "proxy"),
        ("final", None, "proxy"),
    ]
    assert trace.final_output == ANSWER
    assert {c.endpoint for c in trace.proxy_calls} == {"POST /v1/responses"}
    assert all(c.streamed is stream for c in trace.proxy_calls)
    assert "trac" not in trace.stderr.lower()  # no export error logged
    # the same agent with the SDK's tracing forced back on reaches for api.openai.com: the
    # recorder would have seen the run above do so
    assert control.error is None
    assert any(b"api.openai.com" in line for line in recorder.seen), recorder.seen
