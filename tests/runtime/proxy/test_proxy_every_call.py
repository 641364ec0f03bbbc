"""Every request the model proxy sends upstream is a call, through the action's entry point
with the agent as the unprivileged user: model lists and embeddings are counted against
`max-model-calls`, recorded in the run's trace with their status and refused once the budget
is spent, and a model id that tries to leave its path segment never leaves at all."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from runtime.proxy.test_model_proxy_cli import OPENAI_KEY
from support.actionrun import pull_request_event, run_action
from support.byoagent import agent_python, one_agent_suite, pr_tuning
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.e2e

AGENTS = Path(__file__).resolve().parents[2] / "agents"
LISTS = 40

LISTER = one_agent_suite(
    "lister",
    "many-lists",
    command="[{python}, agent/proxy_agent.py]",
    prompt=f"lists {LISTS}: which models are there?",
    assertion='{ type: contains, value: "200" }',
)
HASTY = one_agent_suite(
    "hasty",
    "cheap",
    command="{ run: [{python}, agent/hasty.py], timeoutSeconds: 5 }",
    prompt="write at length",
    assertion="{ type: cost, maxUsd: 0.000001 }",
)


def test_model_lists_and_embeddings_are_calls_counted_against_max_model_calls(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    agent = (AGENTS / "proxy_agent.py").read_text()
    python, isolation = agent_python()
    files = {"agents.yaml": LISTER.replace("{python}", python), "agent/proxy_agent.py": agent}
    base, head = pr_tuning(repo, github, 8, files, "agent/proxy_agent.py")

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 8, base, head),
        env=provider_env(model, OPENAI_KEY),
        inputs={"max-model-calls": "5", "cache": "off", "agent-isolation": isolation},
    )

    assert run.returncode == 1, run.stdout + run.stderr
    assert model.targets == ["GET /v1/models"] * 5, run.stdout + run.stderr
    fixtures = run.results()["fixtures"]
    assert len(fixtures) == 2  # the head's run and the base's, sharing the budget
    calls = [c for f in fixtures for c in f["trace"]["proxy_calls"]]
    assert len(calls) == 2 * (LISTS + 2)  # every request, in its run's trace
    statuses = [c["status"] for c in calls]
    assert statuses.count(200) == 5
    assert statuses.count(429) == 2 * (LISTS + 1) - 5  # the lists and embeddings past it
    assert statuses.count(400) == 2  # the escaping id, refused before anything left
    embeddings = [c for c in calls if c["endpoint"] == "POST /v1/embeddings"]
    assert [c["status"] for c in embeddings] == [429, 429]
    for fixture in fixtures:
        assert fixture["status"] == "error"
        assert "the job's model-call budget is spent: 5 calls" in fixture["message"]
    assert OPENAI_KEY not in run.stdout + run.stderr


FIRST_DELTA_AGENT = """\
import json, os, sys, urllib.request

sys.stdin.readline()
body = {"model": "gpt-4.1-mini", "stream": True,
        "messages": [{"role": "user", "content": "write at length"}]}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps(body).encode(),
    headers={"authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
             "content-type": "application/json"},
)
with urllib.request.urlopen(request, timeout=60) as reply:
    for line in reply:
        if b'"content":"word' in line:  # the first delta: enough to answer
            break
print(json.dumps({"type": "final", "content": "done"}), flush=True)
os._exit(0)
"""


def test_a_stream_the_agent_leaves_after_its_first_delta_is_charged_when_the_run_cuts_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The provider goes on sending after the agent has gone; the run ends before the
    stream, whose usage would come last, so the call is charged as what it carried."""
    python, isolation = agent_python()
    files = {"agents.yaml": HASTY.replace("{python}", python), "agent/hasty.py": FIRST_DELTA_AGENT}
    base, head = pr_tuning(repo, github, 8, files, "agent/hasty.py")
    hold = threading.Event()  # the long completion never finishes within the run
    model.script("at length", text("word " * 1000, pieces=1000, hold=hold, hold_after=600))

    try:
        run = run_action(
            repo.path,
            github,
            pull_request_event(github.repository, 8, base, head),
            env=provider_env(model, OPENAI_KEY),
            inputs={"cache": "off", "agent-isolation": isolation},
        )
    finally:
        hold.set()

    fixtures = run.results()["fixtures"]
    assert len(fixtures) == 2, run.stdout + run.stderr
    for fixture in fixtures:
        (call,) = fixture["trace"]["proxy_calls"]
        # whichever the proxy saw first, the agent hanging up or the run ending, the stream
        # was cut before its usage arrived
        assert call["streamed"] and (
            "the run ended before the stream did" in call["error"]
            or "the agent closed the connection before the stream ended" in call["error"]
        )
        usage = call["usage"]
        assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
        assert usage["cost_usd"] > 0.000001
        assert f"charged as the {usage['output_tokens']} output tokens" in call["error"]
        (cost,) = fixture["assertions"]
        assert cost["status"] == "fail" and cost["message"].startswith("cost $")
