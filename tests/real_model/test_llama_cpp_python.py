"""evalward against a real OpenAI-compatible server: llama-cpp-python serving SmolLM2-135M on
the CPU, reached through a recording relay on loopback.

What is asserted is the protocol, never what a 135M model says: the tool call is parsed, its
result goes back in a request the server accepts, the judge's verdict is parsed or the run is
an `error` that keeps the judge's reply; every request evalward sent satisfies the OpenAI SDK's
request types, and every reply the server sent satisfies its response model.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from fakes.http import LoopbackServer, Request, Response, quiet_port
from fakes.wire_contract import openai_request_problem
from support.clirun import REPO_ROOT, evalward
from support.gitrepo import GitRepo

SERVER_SCRIPT = REPO_ROOT / "scripts" / "real-model" / "serve_smollm2.py"
START_TIMEOUT_SECONDS = 180.0


@dataclass
class Exchange:
    request: dict[str, Any]
    status: int
    reply: Any


class Relay:
    """Forwards every request to the real server and keeps both sides of the exchange."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.exchanges: list[Exchange] = []
        self.server = LoopbackServer(self._forward)

    @property
    def base_url(self) -> str:
        return f"{self.server.url}/v1"

    def _forward(self, request: Request) -> Response:
        forwarded = urllib.request.Request(
            self.upstream + request.path,
            data=request.body,
            method=request.method,
            headers={"content-type": "application/json"},
        )
        try:
            with urllib.request.urlopen(forwarded, timeout=300) as answer:
                status, raw = answer.status, answer.read()
        except urllib.error.HTTPError as refused:
            status, raw = refused.code, refused.read()
        try:
            reply = json.loads(raw)
        except ValueError:
            reply = raw.decode("utf-8", "replace")
        self.exchanges.append(Exchange(request.json(), status, reply))
        return Response(status, raw=raw)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    python = os.environ["EVALWARD_REAL_MODEL_PYTHON"]
    port = quiet_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [python, str(SERVER_SCRIPT), str(port)], stdout=sink, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            assert process.poll() is None, f"the server died:\n{log.read_text()[-3000:]}"
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=5) as ready:
                    if ready.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"no server after {START_TIMEOUT_SECONDS} s"
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


SUITE = {
    "agents.yaml": """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: support-bot }
spec:
  models: [openai/smollm2]
  system: >-
    You are a support agent. To answer questions about an order, call
    functions.lookup_order with the order id.
  temperature: 0
  maxTokens: 64
  maxTurns: 3
  tools:
    - name: lookup_order
      description: Look up an order by its id.
      parameters:
        type: object
        properties: { order_id: { type: string } }
        required: [order_id]
      mock: { output: { status: shipped, eta: "2026-11-25" } }
---
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: greeter }
spec:
  models: [openai/smollm2]
  system: You greet customers in one short sentence.
  temperature: 0
  maxTokens: 32
""",
    "evals.yaml": """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: support-eval }
spec:
  targetAgent: support-bot
  fixtureSelector: { matchLabels: { agent: support-bot } }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: order-status, labels: { agent: support-bot } }
spec:
  targetAgent: support-bot
  input: { type: prompt, payload: { prompt: "Where is my order 12345?" } }
  assertions:
    - { type: toolCalled, tool: lookup_order }
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: greeter-eval }
spec:
  targetAgent: greeter
  fixtureSelector: { matchLabels: { agent: greeter } }
  judge: { model: openai/smollm2 }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: hello, labels: { agent: greeter } }
spec:
  targetAgent: greeter
  input: { type: prompt, payload: { prompt: "Hello!" } }
  assertions:
    - { type: judge, rubric: "The reply greets the customer politely." }
""",
}


def test_a_suite_with_a_tool_loop_and_a_judge_against_llama_cpp_python(
    server: str, tmp_path: Path
) -> None:
    relay = Relay(server)
    repo = GitRepo(tmp_path / "repo")
    repo.commit("suite", SUITE)
    out = tmp_path / "out"
    try:
        done = evalward(
            "run", str(repo.path), "--no-cache", "--no-history", "--parallel", "1",
            "--output-dir", str(out), cwd=repo.path, OPENAI_BASE_URL=relay.base_url,
        )  # fmt: skip
    finally:
        relay.server.close()
    print(done.stdout[-3000:], done.stderr[-2000:], sep="\n")

    # a verdict either way: not a configuration error, an outage or a crash
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    runs = {f["fixture"]: f for f in results["fixtures"]}

    # every request evalward sent is one the OpenAI SDK's types accept, every one was
    # answered 200, and every reply is one the SDK's response model accepts
    assert relay.exchanges
    for exchange in relay.exchanges:
        assert openai_request_problem(exchange.request) is None, exchange.request
        assert exchange.status == 200, exchange.reply
        ChatCompletion.model_validate(exchange.reply)
    print(f"protocol: {len(relay.exchanges)} requests valid, all answered 200 and parsed")

    # the tool call was parsed into the trace, its result went back, the server accepted it
    order = runs["order-status"]
    steps = order["trace"]["steps"]
    call = next(s for s in steps if s["type"] == "tool_call")
    assert call["tool"] == "lookup_order" and isinstance(call["arguments"], dict)
    result = steps[steps.index(call) + 1]
    assert (result["type"], result["call_id"]) == ("tool_result", call["call_id"])
    agent_requests = [e for e in relay.exchanges if e.request.get("tools")]
    assert all(e.request["tool_choice"] == "auto" for e in agent_requests)
    first_reply = agent_requests[0].reply["choices"][0]["message"]
    assert first_reply["tool_calls"][0]["id"] == call["call_id"]
    follow_up = agent_requests[1].request["messages"]
    assistant = next(m for m in follow_up if m["role"] == "assistant")
    assert assistant["content"] == "" and assistant["tool_calls"][0]["id"] == call["call_id"]
    sent_back = next(m for m in follow_up if m["role"] == "tool")
    assert sent_back["tool_call_id"] == call["call_id"]
    assert json.loads(sent_back["content"]) == {"status": "shipped", "eta": "2026-11-25"}
    assert order["usage"]["input_tokens"] > 0 and order["usage"]["output_tokens"] > 0
    print(
        f"protocol: tool call {call['tool']}({json.dumps(call['arguments'])}) parsed, "
        f"its result sent back and accepted ({len(agent_requests)} agent requests); "
        f"order-status: {order['status']}"
    )

    # the judge was asked with max_tokens and no tools; its verdict parsed, or `error`
    # keeping what it said
    judge_requests = [e for e in relay.exchanges if "Grade the run" in json.dumps(e.request)]
    assert judge_requests
    assert all(e.request["max_tokens"] == 2048 and "tools" not in e.request for e in judge_requests)
    judged = next(a for a in runs["hello"]["assertions"] if a["type"] == "judge")
    if judged["status"] == "error":
        assert "no valid verdict" in judged["message"] and judged["judge_reply"]
        assert runs["hello"]["status"] == "error"
        shown = f"error, reply kept ({len(judged['judge_reply'])} chars)"
    else:
        assert judged["status"] in ("pass", "fail") and judged["judge"] is not None
        assert 0 <= judged["judge"]["score"] <= 1
        shown = f"verdict parsed, score {judged['judge']['score']}"
    print(f"protocol: judge asked {len(judge_requests)} time(s) with max_tokens 2048: {shown}")
