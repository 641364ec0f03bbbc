"""Every variable an SDK reads to find its model server points at evalward's model proxy, and
a call that goes past it is stopped and named: `evalward run` on a real repository, the
agents real programs (plain HTTP, the real `openai` Azure client, Node.js's fetch), the
provider a real server."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import ScriptedModelServer, text
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

AGENTS = Path(__file__).resolve().parents[2] / "agents"
OPENAI_KEY = "sk-real-openai-key-0123456789"
ANTHROPIC_KEY = "sk-ant-real-anthropic-key-0123456789"

SERVED = ("OPENAI_API_BASE", "LITELLM_PROXY_API_BASE", "ANTHROPIC_API_BASE")
REFUSED_BY_NAME = ("AZURE_OPENAI_ENDPOINT", "OLLAMA_HOST")
NODE_OLLAMA = (
    "fetch('http://127.0.0.1:11434/api/chat', {method: 'POST', body: '{}'})"
    ".then(() => console.log('answered'), (e) => { console.error(e.cause ?? e); process.exit(1); })"
)


def slug(name: str) -> str:
    return name.lower().replace("_", "-")


def suite(node: str) -> str:
    fixtures = [*SERVED, *REFUSED_BY_NAME, "past"]
    docs = [
        f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: finder }}
spec:
  runtime: {{ command: {{ run: [{sys.executable}, agent.py, "{{input}}"], stdin: none }} }}
---
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: node-finder }}
spec:
  runtime: {{ command: {{ run: [{node}, -e, {json.dumps(NODE_OLLAMA)}], stdin: none }} }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: finder-eval }}
spec: {{ targetAgent: finder, fixtures: [{", ".join(map(slug, fixtures))}] }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: node-eval }}
spec: {{ targetAgent: node-finder, fixtures: [node-ollama] }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: node-ollama }}
spec:
  targetAgent: node-finder
  input: {{ type: prompt, payload: {{ prompt: hi }} }}
  assertions: [{{ type: contains, value: answered }}]
"""
    ]
    for name in fixtures:
        docs.append(f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {slug(name)} }}
spec:
  targetAgent: finder
  input: {{ type: prompt, payload: {{ prompt: "{name}: where is order 12345?" }} }}
  assertions: [{{ type: contains, value: shipped }}]
""")
    return "---\n".join(docs)


@pytest.fixture
def results(tmp_path: Path, model: ScriptedModelServer) -> dict[str, dict[str, Any]]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    for name in (*SERVED, "past"):
        model.script(f"{name}:", text(f"{name}: order 12345 has shipped"))
    repo = GitRepo(tmp_path / "repo")
    repo.commit(
        "agents",
        {"evals.yaml": suite(node), "agent.py": (AGENTS / "endpoints_agent.py").read_text()},
    )
    done = evalward(
        "run",
        ".",
        "--json",
        "--no-history",
        cwd=repo.path,
        OPENAI_BASE_URL=model.base_url,
        OPENAI_API_KEY=OPENAI_KEY,
        ANTHROPIC_BASE_URL=model.anthropic_url,
        ANTHROPIC_API_KEY=ANTHROPIC_KEY,
    )
    document = json.loads(done.stdout)
    return {f["fixture"]: f for f in document["fixtures"]}


def test_every_variable_an_sdk_reads_reaches_the_proxy(
    results: dict[str, dict[str, Any]], model: ScriptedModelServer
) -> None:
    for name in SERVED:
        fixture = results[slug(name)]
        assert fixture["status"] == "pass", (name, fixture.get("message"))
        assert [c["status"] for c in fixture["trace"]["proxy_calls"]] == [200]
    # Azure's deployment route and Ollama's own API reach the proxy with the run's key (in
    # Azure's `api-key` header, Ollama's bearer token) and are refused there by name
    for name, endpoint in (
        ("AZURE_OPENAI_ENDPOINT", "POST /openai/deployments/gpt-4.1-mini/chat/completions"),
        ("OLLAMA_HOST", "POST /api/chat"),
    ):
        fixture = results[slug(name)]
        assert fixture["status"] == "error", name
        (call,) = fixture["trace"]["proxy_calls"]
        assert (call["endpoint"], call["status"]) == (endpoint, 404), call
        assert "evalward's model proxy serves" in call["error"]
    # the provider only ever saw evalward's key
    assert {c.headers.get("authorization") or c.headers.get("x-api-key") for c in model.calls} == {
        f"Bearer {OPENAI_KEY}",
        ANTHROPIC_KEY,
    }


def test_a_call_past_the_proxy_is_stopped_and_names_the_host_and_the_variable(
    results: dict[str, dict[str, Any]], model: ScriptedModelServer
) -> None:
    past = results["past"]
    assert past["status"] == "error"
    assert past["trace"]["proxy_calls"] == []
    message = past["message"]
    assert "the agent called api.openai.com (OpenAI) past evalward's model proxy" in message
    assert "OPENAI_BASE_URL or OPENAI_API_BASE" in message
    assert "the call came from openai" in message
    assert "Connection error" not in message
    assert not any("past:" in json.dumps(c.body) for c in model.calls)
    # a Node.js agent is not stopped, but its failure is named from its stderr
    node = results["node-ollama"]
    assert node["status"] == "error"
    assert (
        "the agent called 127.0.0.1:11434 (Ollama) past evalward's model proxy" in (node["message"])
    )
    assert "OLLAMA_HOST or OLLAMA_API_BASE" in node["message"]
