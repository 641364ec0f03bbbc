"""Agents as teams write them — no adapter, the question in argv, the answer on stdout — gated
through the paths users take: `evalward run` with the official SDKs against a real model
server, and the action, where the agent runs sandboxed as the agent user."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, error, text, tool_call
from support.actionrun import pull_request_event, run_action
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

AGENTS = Path(__file__).resolve().parents[2] / "agents"
OPENAI_KEY = "sk-real-openai-key-0123456789"
SYSTEM_PYTHON = "/usr/bin/python3"

SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: support }}
spec:
  runtime:
    command: {{ run: [{python}, agent/agent.py, "{{input}}"{flags}] }}
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: support-eval }}
spec:
  targetAgent: support
  fixtures: [where-is-my-order]
  scoring: {{ passThreshold: 1.0 }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: where-is-my-order }}
spec:
  targetAgent: support
  input: {{ type: prompt, payload: {{ prompt: "Where is my order 12345?" }} }}
  assertions:
    - {{ type: toolCalled, tool: lookup_order }}
    - {{ type: toolSequence, tools: [lookup_order] }}
    - {{ type: contains, value: shipped }}
"""
MOCK = """\
replies:
  - match: { agent: support }
    turns:
      - toolCalls: [{ name: lookup_order, arguments: { order_id: "12345" } }]
      - content: Your order 12345 has shipped.
"""


def suite(repo: GitRepo, agent: str, python: str, *flags: str) -> str:
    extra = "".join(f", {flag}" for flag in flags)
    return repo.commit(
        "a support agent",
        {
            "agents.yaml": SUITE.format(python=json.dumps(python), flags=extra),
            "agent/agent.py": (AGENTS / agent).read_text(),
            "mock.yaml": MOCK,
        },
    )


def run_cli(repo: GitRepo, out: Path, model: ScriptedModelServer) -> tuple[int, dict[str, Any]]:
    done = evalward(
        "run",
        ".",
        "--json",
        "--no-history",
        "--output-dir",
        str(out),
        cwd=repo.path,
        OPENAI_BASE_URL=model.base_url,
        OPENAI_API_KEY=OPENAI_KEY,
    )
    return done.returncode, json.loads(done.stdout)


def test_a_plain_sdk_agent_passes_its_eval_scored_from_its_traffic(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo, "plain_agent.py", sys.executable, "--chatty")
    model.script(
        "order 12345",
        tool_call("lookup_order", {"order_id": "12345"}),
        text("Your order 12345 has shipped."),
    )

    code, document = run_cli(repo, tmp_path / "out", model)

    assert code == 0, document
    (fixture,) = document["fixtures"]
    assert fixture["status"] == "pass", fixture
    assert {a["type"]: a["status"] for a in fixture["assertions"]} == {
        "toolCalled": "pass",
        "toolSequence": "pass",
        "contains": "pass",
    }
    steps = fixture["trace"]["steps"]
    assert [(s["type"], s.get("via")) for s in steps] == [
        ("input", None),
        ("tool_call", "proxy"),
        ("tool_result", "proxy"),
        ("final", "proxy"),
    ]
    report = (tmp_path / "out" / "report.html").read_text()
    assert '"via":"proxy"' in report  # the timeline marks steps the proxy saw


def test_a_model_call_that_fails_is_the_reason_the_comment_gives(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    suite(repo, "plain_agent.py", sys.executable)
    (repo.path / "evalward.yaml").write_text("providers:\n  openai:\n    retry: { attempts: 1 }\n")
    repo.commit("no retries", {})
    model.script("order 12345", error(500))

    code, document = run_cli(repo, tmp_path / "out", model)

    assert code != 0
    (fixture,) = document["fixtures"]
    assert fixture["status"] == "error"
    message = fixture["message"]
    assert "the agent exited with code 1" in message
    assert "a model call failed: POST /v1/chat/completions (HTTP 500)" in message, message
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert "a model call failed: POST /v1/chat/completions (HTTP 500)" in comment


@pytest.mark.skipif(
    not os.access(SYSTEM_PYTHON, os.X_OK), reason=f"no {SYSTEM_PYTHON} for the agent user to run"
)
def test_in_the_action_a_sandboxed_agent_streams_and_writes_events_on_its_own_pipe(
    repo: GitRepo, github: FakeGitHub
) -> None:
    base = suite(repo, "stdlib_responses_agent.py", SYSTEM_PYTHON)
    repo.branch("feature")
    head = repo.commit(
        "tuned",
        {"agent/agent.py": (AGENTS / "stdlib_responses_agent.py").read_text() + "\n# tuned\n"},
    )
    github.add_pull(FakePull(number=3, head_sha=head, base_sha=base))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 3, base, head),
        inputs={"mock-script": "mock.yaml", "cache": "off"},
    )

    assert run.returncode == 0, run.stdout + run.stderr
    fixtures = run.results()["fixtures"]
    assert {(f["side"], f["status"]) for f in fixtures} == {("base", "pass"), ("head", "pass")}
    for fixture in fixtures:
        trace = fixture["trace"]
        assert [(s["type"], s.get("via")) for s in trace["steps"]] == [
            ("input", None),
            ("tool_call", "proxy"),
            ("tool_result", "proxy"),
            ("final", "proxy"),
            ("assistant", None),  # its own event, from $EVALWARD_EVENTS as the agent user
        ]
        assert all(
            c["streamed"] and c["endpoint"] == "POST /v1/responses" for c in trace["proxy_calls"]
        )
