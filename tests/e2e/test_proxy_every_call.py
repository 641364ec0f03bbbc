"""Every request the model proxy sends upstream is a call, through the action's entry point
with the agent as the unprivileged user: model lists and embeddings are counted against
`max-model-calls`, recorded in the run's trace with their status and refused once the budget
is spent, and a model id that tries to leave its path segment never leaves at all."""

from __future__ import annotations

import sys
from pathlib import Path

from actionrun import pull_request_event, run_action
from e2e.test_model_proxy_cli import OPENAI_KEY, SYSTEM_PYTHON, runnable_by_all
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from gitrepo import GitRepo

AGENTS = Path(__file__).resolve().parents[1] / "agents"
LISTS = 40

LISTER = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: lister }}
spec:
  runtime:
    command: [{python}, agent/proxy_agent.py]
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: lister-eval }}
spec:
  targetAgent: lister
  fixtures: [many-lists]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: many-lists }}
spec:
  targetAgent: lister
  input: {{ type: prompt, payload: {{ prompt: "lists {lists}: which models are there?" }} }}
  assertions:
    - {{ type: contains, value: "200" }}
"""


def test_model_lists_and_embeddings_are_calls_counted_against_max_model_calls(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    agent = (AGENTS / "proxy_agent.py").read_text()
    python, isolation = (
        (SYSTEM_PYTHON, "user") if runnable_by_all(SYSTEM_PYTHON) else (sys.executable, "off")
    )
    definitions = LISTER.format(python=python, lists=LISTS)
    base = repo.commit("lister", {"agents.yaml": definitions, "agent/proxy_agent.py": agent})
    repo.branch("feature")
    head = repo.commit("tuned", {"agent/proxy_agent.py": agent + "\n# tuned\n"})
    github.add_pull(FakePull(number=8, head_sha=head, base_sha=base))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 8, base, head),
        env={"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": OPENAI_KEY},
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
