"""What a migrated suite sends and spends, through `evalward run` on a real repository against
a recording server on loopback: tools written in Anthropic's shape and a tool choice reach the
model in its API's shape, content parts as written, an Azure provider's dated apiVersion its
per-deployment URL with the key in `api-key`; a `similar` assertion's embeddings are metered,
counted in the estimate and answered from the response cache on the next run."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fakes.http import LoopbackServer, Request, Response
from fakes.reply_table import embeddings
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: desk }
spec:
  models: [MODEL]
  tools:
    - name: lookup_port
      description: Where a port is.
      input_schema: { type: object, properties: { port: { type: string } } }
      mock: { output: Nassau is in the Bahamas. }
  toolChoice: { type: tool, name: lookup_port }
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: desk-eval }
spec:
  targetAgent: desk
  fixtures: [port]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: port }
spec:
  targetAgent: desk
  input:
    type: messages
    messages:
      - role: system
        content:
          - { type: text, text: You are a harbour master., cache_control: { type: ephemeral } }
      - role: user
        content: Where is Nassau?
  assertions:
    - { type: toolCalled, tool: lookup_port }
    - { type: similar, value: Nassau is in the Bahamas, threshold: 0.5, model: MODEL_EMBEDDING }
"""


CACHED = "cache: { mode: read-write }\n"
API_PATHS = ("/chat/completions", "/embeddings", "/messages")


class Recorder:
    """A model server that calls `lookup_port` once, then answers; every request kept."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.server = LoopbackServer(self.handle)

    def handle(self, request: Request) -> Response:
        if request.method != "POST" or not request.path.endswith(API_PATHS):
            return Response(404, {"error": {"message": f"no route {request.path}"}})
        self.requests.append(request)
        body = request.json()
        if request.path.endswith("/embeddings"):
            return Response(200, embeddings(body))
        if request.path.endswith("/messages"):
            return Response(200, self._anthropic(body))
        called = any(m.get("role") == "tool" for m in body["messages"])
        message: dict[str, Any] = {"role": "assistant", "content": "Nassau is in the Bahamas."}
        if not called:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup_port", "arguments": '{"port": "Nassau"}'},
                    }
                ],
            }
        return Response(
            200,
            {
                "id": "c1",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
        )

    def _anthropic(self, body: dict[str, Any]) -> dict[str, Any]:
        called = any(
            isinstance(m["content"], list)
            and any(b.get("type") == "tool_result" for b in m["content"])
            for m in body["messages"]
        )
        content: list[dict[str, Any]] = [{"type": "text", "text": "Nassau is in the Bahamas."}]
        if not called:
            content = [
                {"type": "tool_use", "id": "t1", "name": "lookup_port", "input": {"port": "N"}}
            ]
        return {
            "id": "m1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }

    def chat(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.requests if not r.path.endswith("/embeddings")]


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    found = Recorder()
    yield found
    found.server.close()


def suite(model: str, embedding: str = "openai/text-embedding-3-small") -> str:
    return AGENT.replace("MODEL_EMBEDDING", embedding).replace("MODEL", model)


def test_tools_in_anthropic_s_shape_a_tool_choice_and_content_parts_reach_openai_as_written(
    repo: GitRepo, recorder: Recorder
) -> None:
    repo.commit("a migrated suite", {"evals.yaml": suite("openai/gpt-4.1-mini")})
    env = {"OPENAI_BASE_URL": recorder.server.url + "/v1", "OPENAI_API_KEY": "sk-test"}

    done = evalward("run", ".", "--json", "--no-cache", cwd=repo.path, **env)

    assert done.returncode == 0, done.stdout + done.stderr
    first, second = recorder.chat()
    assert first["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup_port",
                "description": "Where a port is.",
                "parameters": {"type": "object", "properties": {"port": {"type": "string"}}},
            },
        }
    ]
    # the forced choice holds for the first call; the next may answer
    assert first["tool_choice"] == {"type": "function", "function": {"name": "lookup_port"}}
    assert second["tool_choice"] == "auto"
    assert first["messages"][0] == {
        "role": "system",
        "content": [
            {
                "type": "text",
                "text": "You are a harbour master.",
                "cache_control": {"type": "ephemeral"},
            }
        ],
    }
    assert first["messages"][1] == {"role": "user", "content": "Where is Nassau?"}


def test_anthropic_gets_the_tool_choice_and_the_system_parts_in_its_own_shape(
    repo: GitRepo, recorder: Recorder
) -> None:
    repo.commit("a migrated suite", {"evals.yaml": suite("anthropic/claude-sonnet-4-5")})
    env = {
        "ANTHROPIC_BASE_URL": recorder.server.url,
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "OPENAI_BASE_URL": recorder.server.url + "/v1",
        "OPENAI_API_KEY": "sk-test",
    }

    done = evalward("run", ".", "--json", "--no-cache", cwd=repo.path, **env)

    assert done.returncode == 0, done.stdout + done.stderr
    first, second = recorder.chat()
    assert first["tools"][0]["input_schema"] == {
        "type": "object",
        "properties": {"port": {"type": "string"}},
    }
    assert first["tool_choice"] == {"type": "tool", "name": "lookup_port"}
    assert "tool_choice" not in second
    assert first["system"] == [
        {
            "type": "text",
            "text": "You are a harbour master.",
            "cache_control": {"type": "ephemeral"},
        }
    ]


def test_an_azure_provider_s_dated_api_version_calls_its_deployment(
    repo: GitRepo, recorder: Recorder
) -> None:
    config = (
        "providers:\n"
        f"  azure: {{ api: openai, baseUrl: '{recorder.server.url}/openai', "
        "apiKeyEnv: AZURE_API_KEY, apiVersion: 2024-10-21 }\n"
    )
    files = {
        "evals.yaml": suite("azure/pirate-deployment", "azure/embedder"),
        "evalward.yaml": config,
    }
    repo.commit("an Azure suite", files)

    done = evalward("run", ".", "--json", "--no-cache", cwd=repo.path, AZURE_API_KEY="az-key-1")

    assert done.returncode == 0, done.stdout + done.stderr
    targets = [r.target for r in recorder.requests]
    assert targets == [
        "/openai/deployments/pirate-deployment/chat/completions?api-version=2024-10-21",
        "/openai/deployments/pirate-deployment/chat/completions?api-version=2024-10-21",
        "/openai/deployments/embedder/embeddings?api-version=2024-10-21",
    ]
    assert all(r.headers.get("api-key") == "az-key-1" for r in recorder.requests)
    assert not any("authorization" in {k.lower() for k in r.headers} for r in recorder.requests)


def test_similar_s_embeddings_are_estimated_metered_and_cached(
    repo: GitRepo, recorder: Recorder
) -> None:
    files = {"evals.yaml": suite("openai/gpt-4.1-mini"), "evalward.yaml": CACHED}
    repo.commit("a migrated suite", files)
    env = {"OPENAI_BASE_URL": recorder.server.url + "/v1", "OPENAI_API_KEY": "sk-test"}

    first = evalward("run", ".", "--json", cwd=repo.path, **env)

    assert first.returncode == 0, first.stdout + first.stderr
    result = json.loads(first.stdout)
    (similar,) = [a for a in result["fixtures"][0]["assertions"] if a["type"] == "similar"]
    assert similar["status"] == "pass" and similar["score"] > 0.5
    embedded = [r.json() for r in recorder.requests if r.path.endswith("/embeddings")]
    answer, expected = "Nassau is in the Bahamas.", "Nassau is in the Bahamas"
    assert embedded == [{"model": "text-embedding-3-small", "input": [answer, expected]}]
    spending = result["spending"]
    assert spending["estimate"]["calls"] == 3  # two agent calls' estimate and the embeddings
    assert spending["actual"]["calls"] == 3  # two chat calls and one embeddings call, priced
    assert spending["actual"]["costUsd"] is not None

    recorder.requests.clear()
    again = evalward("run", ".", "--json", "--no-cache", cwd=repo.path, **env)  # runs it again

    assert again.returncode == 0, again.stdout + again.stderr
    assert recorder.requests == []  # the response cache answered the agent and the embeddings
