"""Bring-your-own agents call their models through evalward's model proxy: `evalward run` and
the action on real repositories, the agent a real program using plain HTTP, the provider a
real server.

The agent never holds the provider key (not even when its allow-list names the key, or a
copy of it); the provider sees the real key; each call lands in its run's trace."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import pull_request_event, run_action
from support.byoagent import agent_python, one_agent_suite, pr_tuning
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

AGENTS = Path(__file__).resolve().parents[2] / "agents"
OPENAI_KEY = "sk-real-openai-key-0123456789"
ANTHROPIC_KEY = "sk-ant-real-anthropic-key-0123456789"

SHOP = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: shopper }}
spec:
  runtime:
    command:
      run: [{python}, agent/proxy_agent.py]
      env: [OPENAI_API_KEY, ANTHROPIC_API_KEY, MY_KEY_COPY]
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: shop-server }}
spec:
  runtime:
    http:
      start: [{python}, agent/proxy_agent.py, --serve, "{{port}}"]
      ready: http://127.0.0.1:{{port}}/ready
      url: http://127.0.0.1:{{port}}/run
      readyTimeoutSeconds: 20
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: shopper-eval }}
spec:
  targetAgent: shopper
  fixtures: [ask-openai, ask-anthropic]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: shop-server-eval }}
spec:
  targetAgent: shop-server
  fixtures: [ask-server]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: ask-openai }}
spec:
  targetAgent: shopper
  input: {{ type: prompt, payload: {{ prompt: "openai: where is order 12345?" }} }}
  assertions:
    - {{ type: toolCalled, tool: lookup }}
    - {{ type: contains, value: shipped }}
    - {{ type: cost, maxTokens: 100 }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: ask-anthropic }}
spec:
  targetAgent: shopper
  input: {{ type: prompt, payload: {{ prompt: "anthropic: where is order 12345?" }} }}
  assertions:
    - {{ type: toolCalled, tool: lookup }}
    - {{ type: contains, value: shipped }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: ask-server }}
spec:
  targetAgent: shop-server
  input: {{ type: prompt, payload: {{ prompt: "openai: where is order 12345, server?" }} }}
  assertions:
    - {{ type: toolCalled, tool: lookup }}
    - {{ type: contains, value: shipped }}
"""


def shop_repo(repo: GitRepo) -> None:
    repo.commit(
        "a shop agent",
        {
            "agents.yaml": SHOP.format(python=sys.executable),
            "agent/proxy_agent.py": (AGENTS / "proxy_agent.py").read_text(),
        },
    )


def provider_env(model: ScriptedModelServer) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": OPENAI_KEY,
        "ANTHROPIC_BASE_URL": model.anthropic_url,
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "MY_KEY_COPY": f"Bearer {OPENAI_KEY}",
    }


def run_json(repo: GitRepo, *args: str, **env: str) -> dict[str, Any]:
    done = evalward("run", ".", "--json", "--no-history", *args, cwd=repo.path, **env)
    assert done.returncode == 0, done.stdout + done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def by_fixture(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["fixture"]: f for f in document["fixtures"]}


def test_a_byo_agent_passes_its_eval_through_the_proxy_and_never_sees_the_key(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    shop_repo(repo)
    model.script("where is order", tool_call("lookup", {"id": "12345"}), text("12345 shipped."))

    out = repo.path.parent / "out"
    fixtures = by_fixture(run_json(repo, "--output-dir", str(out), **provider_env(model)))

    assert {name: f["status"] for name, f in fixtures.items()} == {
        "ask-openai": "pass",
        "ask-anthropic": "pass",
        "ask-server": "pass",
    }
    # The provider saw the real keys, on the API each call spoke.
    paths = sorted({call.path for call in model.calls})
    assert paths == ["/v1/chat/completions", "/v1/messages"]
    for call in model.calls:
        if call.path == "/v1/messages":
            assert call.headers["x-api-key"] == ANTHROPIC_KEY
        else:
            assert call.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    # The agent saw the proxy's key and URLs: not the key, not its copy under another name.
    for fixture in ("ask-openai", "ask-anthropic", "ask-server"):
        seen = (repo.path / f"env-{fixture}.json").read_text()
        assert OPENAI_KEY not in seen and ANTHROPIC_KEY not in seen
        env = json.loads(seen)
        assert "MY_KEY_COPY" not in env
        assert env["OPENAI_API_KEY"].startswith("evalward-proxy-")
        assert env["ANTHROPIC_API_KEY"] == env["OPENAI_API_KEY"]
        assert env["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
        assert env["OPENAI_BASE_URL"].endswith("/v1")
        assert env["ANTHROPIC_BASE_URL"] + "/v1" == env["OPENAI_BASE_URL"]
    # Each fixture run had its own key.
    keys = {
        json.loads((repo.path / f"env-{f}.json").read_text())["OPENAI_API_KEY"] for f in fixtures
    }
    assert len(keys) == 3
    # Every call is in its own run's trace, with tokens and cost.
    openai_calls = fixtures["ask-openai"]["trace"]["proxy_calls"]
    assert [(c["api"], c["model"], c["status"]) for c in openai_calls] == [
        ("openai", "openai/gpt-4.1-mini", 200)
    ] * 2
    assert openai_calls[0]["usage"]["input_tokens"] == 10
    assert openai_calls[0]["usage"]["output_tokens"] == 5
    assert openai_calls[0]["usage"]["cost_usd"] == (10 * 0.4 + 5 * 1.6) / 1e6
    assert openai_calls[0]["after_step"] == 1  # after the input step
    assert fixtures["ask-openai"]["trace"]["model_calls"] == 2
    assert fixtures["ask-openai"]["usage"]["input_tokens"] == 20
    assert fixtures["ask-openai"]["usage"]["output_tokens"] == 10
    anthropic_calls = fixtures["ask-anthropic"]["trace"]["proxy_calls"]
    assert [c["model"] for c in anthropic_calls] == ["anthropic/claude-haiku-4-5"] * 2
    assert fixtures["ask-anthropic"]["usage"]["cost_usd"] == 2 * (10 * 1.0 + 5 * 5.0) / 1e6
    # The http agent used the key of the run evalward posted, so its calls are in that trace.
    assert len(fixtures["ask-server"]["trace"]["proxy_calls"]) == 2
    # The report shows them, and no file evalward wrote holds a key.
    report = (out / "report.html").read_text()
    assert report.count('"pc":[') == 3  # each run's proxied calls, drawn by the page's script
    assert (
        '{"model":"anthropic/claude-haiku-4-5","ep":"POST /v1/messages","stream":false,'
        '"st":200,"after":1,"u":[10,5,'
    ) in report
    for written in out.iterdir():
        assert OPENAI_KEY not in written.read_text()


@pytest.mark.usefixtures("head_strays_read")
def test_a_rerun_on_an_unchanged_head_calls_no_model(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    shop_repo(repo)
    model.script("where is order", tool_call("lookup", {"id": "12345"}), text("12345 shipped."))
    first = by_fixture(run_json(repo, **provider_env(model)))
    assert not any(f["cached"] for f in first.values())
    calls = len(model.calls)

    second = by_fixture(run_json(repo, **provider_env(model)))

    assert all(f["cached"] for f in second.values())
    assert len(model.calls) == calls


def test_a_mock_script_serves_byo_agents_with_no_key_and_no_network(repo: GitRepo) -> None:
    shop_repo(repo)
    repo.write(
        {
            "mock.yaml": """\
replies:
  - match: { agent: shopper }
    turns:
      - toolCalls: [{ name: lookup, arguments: { id: "12345" } }]
      - content: "Mock says 12345 shipped."
  - match: { agent: shop-server }
    turns:
      - toolCalls: [{ name: lookup, arguments: { id: "12345" } }]
      - content: "Mock server says 12345 shipped."
"""
        }
    )

    fixtures = by_fixture(run_json(repo, "--mock-script", "mock.yaml", "--no-cache"))

    assert {f["status"] for f in fixtures.values()} == {"pass"}
    assert fixtures["ask-anthropic"]["output"] == "Mock says 12345 shipped."
    assert fixtures["ask-server"]["output"] == "Mock server says 12345 shipped."
    calls = fixtures["ask-anthropic"]["trace"]["proxy_calls"]
    assert [c["model"] for c in calls] == ["anthropic/claude-haiku-4-5"] * 2
    assert all(c["usage"]["input_tokens"] > 0 for c in calls)


BUSY = one_agent_suite(
    "busy",
    "three-calls",
    command="[{python}, agent/proxy_agent.py]",
    prompt="calls 3: hello",
    assertion='{ type: contains, value: "200" }',
)


def test_the_action_refuses_byo_calls_past_max_model_calls_and_the_gate_fails(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    agent = (AGENTS / "proxy_agent.py").read_text()
    # In the action the agent runs as another user, who needs a Python it may execute.
    python, isolation = agent_python()
    files = {"agents.yaml": BUSY.replace("{python}", python), "agent/proxy_agent.py": agent}
    base, head = pr_tuning(repo, github, 7, files, "agent/proxy_agent.py")
    model.script("hello", text("hi"))

    # Both sides run, 3 calls each; the plan estimates no call for a BYO agent, so the
    # budget's 2 calls are all theirs and neither side can finish.
    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env={"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": OPENAI_KEY},
        inputs={"max-model-calls": "2", "cache": "off", "agent-isolation": isolation},
    )

    assert run.returncode == 1, run.stderr
    assert len(model.calls) == 2, run.stdout + run.stderr
    fixtures = run.results()["fixtures"]
    assert len(fixtures) == 2
    for fixture in fixtures:
        assert fixture["status"] == "error"
        assert (
            "a model call was refused: the job's model-call budget is spent: 2 calls"
            in (fixture["message"])
        )
    statuses = [c["status"] for f in fixtures for c in f["trace"]["proxy_calls"]]
    assert statuses.count(200) == 2
    assert set(statuses) == {200, 429}  # every refused call is in its run's trace
    assert OPENAI_KEY not in run.stdout + run.stderr
    assert "budget is spent" in github.comments_on(7)[0]["body"]


FRUGAL = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: frugal }}
spec:
  runtime:
    command: [{python}, agent/proxy_agent.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: frugal-eval }}
spec:
  targetAgent: frugal
  fixtures: [cheap]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: cheap }}
spec:
  targetAgent: frugal
  input: {{ type: prompt, payload: {{ prompt: "calls 2: understate your usage" }} }}
  assertions:
    - {{ type: cost, maxTokens: 20 }}
"""


def test_an_agent_cannot_understate_the_tokens_it_spent_through_the_proxy(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit(
        "an agent that claims 1 token",
        {
            "agents.yaml": FRUGAL.format(python=sys.executable),
            "agent/proxy_agent.py": (AGENTS / "proxy_agent.py").read_text(),
        },
    )
    model.script("understate", text("ok"))

    done = evalward("run", ".", "--json", "--no-history", cwd=repo.path, **provider_env(model))

    assert done.returncode == 1, done.stdout + done.stderr
    (fixture,) = json.loads(done.stdout)["fixtures"]
    assert fixture["status"] == "fail"
    assert fixture["assertions"][0]["message"] == "30 tokens > 20"
    assert fixture["usage"]["reported"] is False
    final = fixture["trace"]["steps"][-1]
    assert final["usage"] == {**final["usage"], "input_tokens": 1, "reported": True}
