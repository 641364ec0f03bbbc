"""A bring-your-own agent on Google's `google-genai` SDK, installed from PyPI into its own
environment and gated by the action as GitHub runs it: its Gemini calls (one whole, one
streamed) reach the provider evalward.yaml declares `api: gemini` only through the model
proxy, with evalward's key; the trace shows the function the model called, the tokens and
cost of `usageMetadata`, and `max-cost-usd` refuses a call it cannot hold."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.agentenv import needs_root, open_pr, run_gate, workspace

__all__ = ["workspace"]  # a fixture

pytestmark = [pytest.mark.e2e, pytest.mark.registries, needs_root]

REAL_KEY = "real-gemini-key-0123456789"
QUESTION = "Where is my order 12345?"
ANSWER = "Your order 12345 has shipped."
AGENT = '''\
"""Acme's support agent on google-genai, as its documentation writes one: the client finds
its key and server in the environment."""

import os
import sys

from google import genai
from google.genai import types

if any("real-gemini-key" in value for value in os.environ.values()):
    sys.exit("the agent was given a real key")

LOOKUP = types.FunctionDeclaration(
    name="lookup_order",
    description="Look an order up.",
    parameters_json_schema={
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
    },
)
config = types.GenerateContentConfig(
    system_instruction="You are Acme's support agent. Look an order up before you answer.",
    tools=[types.Tool(function_declarations=[LOOKUP])],
    max_output_tokens=1000,
)
client = genai.Client()
contents = [types.Content(role="user", parts=[types.Part(text=sys.argv[1])])]
first = client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
for call in first.function_calls or []:
    found = {"order_id": call.args["order_id"], "status": "shipped"}
    contents.append(first.candidates[0].content)
    contents.append(
        types.Content(
            role="user", parts=[types.Part.from_function_response(name=call.name, response=found)]
        )
    )
stream = client.models.generate_content_stream(
    model="gemini-2.5-flash", contents=contents, config=config
)
print("".join(chunk.text or "" for chunk in stream))
'''
SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: support }}
spec:
  runtime:
    command: {{ run: [python, agent.py, "{{input}}"] }}
  environment: {{ python: requirements.txt }}
  watch: [agent.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: support-eval }}
spec:
  targetAgent: support
  fixtureSelector: {{ matchLabels: {{ agent: support }} }}
  execution: {{ timeoutSeconds: 120, reps: {{ min: 1, max: 1 }} }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: where-is-my-order, labels: {{ agent: support }} }}
spec:
  targetAgent: support
  input: {{ type: prompt, payload: {{ prompt: "{QUESTION}" }} }}
  assertions:
    - {{ type: toolCalled, tool: lookup_order }}
    - {{ type: contains, value: shipped }}
"""
PRICE_IN, PRICE_OUT = 0.3, 2.5


def repository(model: ScriptedModelServer) -> dict[str, str]:
    config = (
        "providers:\n"
        f"  gemini: {{ api: gemini, baseUrl: {model.server.url}, apiKeyEnv: GEMINI_API_KEY }}\n"
        "pricing:\n"
        f"  gemini/gemini-2.5-flash: {{ input: {PRICE_IN}, output: {PRICE_OUT} }}\n"
    )
    return {
        "agent.py": AGENT,
        "requirements.txt": "google-genai==3.6.1\n",
        "evals.yaml": SUITE,
        "evalward.yaml": config,
    }


def gate(
    workspace: Path, github: FakeGitHub, model: ScriptedModelServer, inputs: dict[str, str]
) -> dict[str, Any]:
    """The head's run of the fixture, from the gate of a pull request that changes the agent."""
    files = repository(model)
    changed = files["agent.py"].replace("before you answer", "first, always, before you answer")
    event = open_pr(workspace, github, files, {"agent.py": changed}, suite={})
    run = gate_run = run_gate(workspace, github, event, inputs, GEMINI_API_KEY=REAL_KEY)
    assert "Traceback" not in gate_run.stderr, gate_run.stderr
    heads = [f for f in run.results()["fixtures"] if f["side"] == "head"]
    shutil.rmtree(workspace / ".evalward", ignore_errors=True)
    assert heads, run.stdout + run.stderr
    return heads[0]


def test_a_google_genai_agent_calls_gemini_through_the_proxy(
    workspace: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    model.script(
        QUESTION,
        tool_call("lookup_order", {"order_id": "12345"}, prompt_tokens=100, thoughts_tokens=30),
        text(ANSWER, prompt_tokens=150, completion_tokens=10, cached_tokens=40),
    )

    result = gate(workspace, github, model, {"cache": "off"})

    assert result["status"] == "pass", result
    trace = result["trace"]
    steps = [(s["type"], s.get("tool"), s.get("via")) for s in trace["steps"]]
    assert steps == [
        ("input", None, None),
        ("tool_call", "lookup_order", "proxy"),
        ("tool_result", "lookup_order", "proxy"),
        ("final", None, "proxy"),
    ]
    call, answered = trace["steps"][1:3]
    assert call["arguments"] == {"order_id": "12345"}
    assert answered["call_id"] == call["call_id"] and "shipped" in answered["output"]
    assert trace["offered_tools"] == ["lookup_order"]
    calls = trace["proxy_calls"]
    assert [(c["endpoint"], c["status"], c["streamed"]) for c in calls] == [
        ("POST /v1/models/gemini-2.5-flash:generateContent", 200, False),
        ("POST /v1/models/gemini-2.5-flash:streamGenerateContent", 200, True),
    ]
    # input: promptTokenCount (which holds the cached tokens); output: the answer and thoughts
    tokens = [(c["usage"]["input_tokens"], c["usage"]["output_tokens"]) for c in calls]
    assert tokens == [(100, 5 + 30), (150, 10)]
    costs = [c["usage"]["cost_usd"] for c in calls]
    assert costs == [pytest.approx((i * PRICE_IN + o * PRICE_OUT) / 1e6) for i, o in tokens]
    # the provider got evalward's key, as Gemini takes it, and a body without the model
    assert {c.headers.get("x-goog-api-key") for c in model.calls} == {REAL_KEY}
    assert all("model" not in c.body for c in model.calls)
    assert model.contract_violations == []


def test_max_cost_usd_refuses_a_gemini_call_it_cannot_hold(
    workspace: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """`maxOutputTokens` 1,000 at $2.50 a million, and the request's bytes: more than the
    $0.0001 the job may spend, so the call is refused before it leaves."""
    model.script(QUESTION, text(ANSWER))

    result = gate(workspace, github, model, {"cache": "off", "max-cost-usd": "0.0001"})

    assert result["status"] != "pass"
    trace = result["trace"]
    assert [c["status"] for c in trace["proxy_calls"]] == [429]
    refused = [s["content"] for s in trace["steps"] if s["type"] == "error"]
    assert any("max-cost-usd" in said for said in refused), trace["steps"]
    assert model.calls == []
