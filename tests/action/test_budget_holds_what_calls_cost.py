"""`max-cost-usd` counts what the job's model calls will cost: a system prompt an Agent reads
from a `systemFile` is estimated as long as the file is in the commit of the run's side."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import gate_pull_request
from support.answered import FIXTURE, helper_eval
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

ONE_AT_A_TIME = helper_eval("execution: { repsPerFixture: 1, parallel: 1 }")
"""One run at a time: each call is sent after the last one's reply was counted."""

PROMPT_AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: helper }
spec:
  models: [openai/gpt-4.1-mini]
  systemFile: prompt.md
"""


def results(repo: GitRepo) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((repo.path / ".evalward/out/results.json").read_text())
    return document


LONG_PROMPT = "You are a helper ({version}). Answer in one sentence.\n" + "Be thorough. " * 3_330
"""A system prompt of 40 KB: 10,000 tokens a call, at four characters a token."""
LONG_CALL_USD = (10_000 * 0.4 + 5 * 1.6) / 1e6
"""What a call sending it costs, as the model server reports it read: $0.004."""


def test_the_budget_counts_the_base_agents_system_file_from_the_base_commit(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The base's agent reads a 40 KB `systemFile`, and the pull request rewrites it: each
    run is estimated with the base's file as its commit holds it, so a budget of three calls
    keeps one fixture's two runs and leaves the other's out (the gate is incomplete), and
    the job spends within it. Counted as the few tokens of an inline prompt, all four runs
    fitted and the job spent a third past the budget."""
    base = repo.commit(
        "suite",
        {
            "agent.yaml": PROMPT_AGENT,
            "prompt.md": LONG_PROMPT.format(version="v1"),
            "eval.yaml": ONE_AT_A_TIME,
            "fixtures.yaml": "---\n".join(FIXTURE.format(name=name) for name in ("f0", "f1")),
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("change")
    head = repo.commit("a new prompt", {"prompt.md": LONG_PROMPT.format(version="v2")})
    model.default = text("the answer", prompt_tokens=10_000)
    budget = 3 * LONG_CALL_USD

    run = gate_pull_request(
        repo, github, base, head, env, {"max-cost-usd": f"{budget:.6f}", "cache": "off"}
    )

    document = results(repo)
    assert {f["fixture"] for f in document["fixtures"]} == {"f0"}
    assert {r["fixture"] for r in document["skippedRuns"]} == {"f1"}
    assert document["run"]["spent"]["cost_usd"] <= budget
    assert len(model.requests) == 2
    assert (run.returncode, run.outputs["result"]) == (1, "incomplete")
