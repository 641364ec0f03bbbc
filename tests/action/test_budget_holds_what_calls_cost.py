"""`max-cost-usd` holds what the job's model calls actually cost, not only what the plan's
estimate said they would: a head run of a fixture the base gates with is estimated with the
base's agent, so a pull request whose agent sends a prompt of 400 KB makes calls the budget
counted at a fraction of their price. Once what the job spent reaches the budget no call is
sent, and the run is an error naming the limit; an agent whose calls cost what its estimate
said runs as before."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import gate_pull_request
from support.answered import BOUNDED_AGENT, FIXTURE, commit_suite, helper_eval, scripted
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

FIXTURES = ["f0", "f1", "f2", "f3"]
ONE_AT_A_TIME = helper_eval("execution: { repsPerFixture: 1, parallel: 1 }")
"""One run at a time: each call is sent after the last one's reply was counted."""

PROMPT = "You are a helper (v2). Answer in one sentence.\n" + "Be thorough. " * 33_000
"""The pull request's system prompt: about 400 KB, 100,000 tokens a call."""
PROMPT_AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: helper }
spec:
  models: [openai/gpt-4.1-mini]
  systemFile: prompt.md
  maxTokens: 100
"""
CALL_USD = 100_000 * 0.4 / 1e6 + 5 * 1.6 / 1e6
"""What one call of the pull request's agent costs at gpt-4.1-mini's price, by the usage the
model server reports: $0.04."""
BUDGET = "0.01"
"""Four times what the plan's eight runs are estimated at; a quarter of one head call."""


def results(repo: GitRepo) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((repo.path / ".evalward/out/results.json").read_text())
    return document


def costly(body: dict[str, Any]) -> bool:
    return "(v2)" in json.dumps(body)


def test_a_head_agent_whose_counted_calls_cost_past_the_budget_is_stopped_once_spent(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Each head run makes the one call the base's agent is estimated at, but the model says
    it read 100,000 tokens: sent, the first cost four times the budget. Each is held at its
    worst (the prompt's 400 KB as 400,000 tokens) before it is sent, which the budget cannot
    hold: none is sent, and each run is an error the budget refused."""
    base = commit_suite(repo, ONE_AT_A_TIME, FIXTURES, BOUNDED_AGENT)
    repo.branch("change")
    head = repo.commit("a long prompt", {"agent.yaml": PROMPT_AGENT, "prompt.md": PROMPT})
    scripted(model, "v1", {name: [True] for name in FIXTURES})
    model.script(costly, text("the answer", prompt_tokens=100_000))

    run = gate_pull_request(repo, github, base, head, env, {"max-cost-usd": BUDGET, "cache": "off"})

    document = results(repo)
    assert sum(map(costly, model.requests)) == 0
    assert document["run"]["spent"]["cost_usd"] <= float(BUDGET)
    heads = [f for f in document["fixtures"] if f["side"] == "head"]
    assert [f["status"] for f in heads] == ["error"] * 4
    for refused in heads:
        assert refused["budget_refused"], refused
        assert "a model call was refused: the job's cost budget cannot hold" in refused["message"]
        assert "(max-cost-usd)" in refused["message"]
    assert (run.returncode, run.outputs["result"]) == (1, "fail")


def test_a_round_of_adaptive_reps_is_run_only_where_what_was_spent_leaves_room_for_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The head's one run fails and asks for more reps. Its call fits the $0.20 budget at
    its worst (its 400 KB as 400,000 tokens, $0.16), but the model says it read 500,000,
    more than that bound: what was spent reaches the budget, so the round is left out rather
    than run into refusals: the gate is incomplete, saying so, never green."""
    adaptive = helper_eval("execution: { reps: { min: 1, max: 8 }, parallel: 1 }")
    base = commit_suite(repo, adaptive, ["f0"], BOUNDED_AGENT)
    repo.branch("change")
    head = repo.commit("a long prompt", {"agent.yaml": PROMPT_AGENT, "prompt.md": PROMPT})
    scripted(model, "v1", {"f0": [True] * 8})
    model.script(costly, text("no idea", prompt_tokens=500_000))

    run = gate_pull_request(repo, github, base, head, env, {"max-cost-usd": "0.2", "cache": "off"})

    document = results(repo)
    assert sum(map(costly, model.requests)) == 1
    assert "adaptive reps stopped early" in document["reason"] + " ".join(document["notes"])
    assert "max-cost-usd" in " ".join(document["notes"])
    assert (run.returncode, run.outputs["result"]) == (1, "incomplete")


def test_an_agent_whose_calls_cost_what_was_estimated_passes_under_the_budget(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The pull request's agent sends a prompt of about the base's size, and the model says
    so: the job spends less than the budget, and nothing is refused."""
    base = commit_suite(repo, ONE_AT_A_TIME, FIXTURES, BOUNDED_AGENT)
    repo.branch("change")
    head = repo.commit("a new prompt", {"agent.yaml": BOUNDED_AGENT.format(version="v2")})
    for version in ("v1", "v2"):
        scripted(model, version, {name: [True] for name in FIXTURES})

    run = gate_pull_request(repo, github, base, head, env, {"max-cost-usd": BUDGET, "cache": "off"})

    document = results(repo)
    assert [f["status"] for f in document["fixtures"]] == ["pass"] * 8
    assert document["run"]["spent"]["cost_usd"] < float(BUDGET)
    assert (run.returncode, run.outputs["result"]) == (0, "pass")


LONG_PROMPT = "You are a helper ({version}). Answer in one sentence.\n" + "Be thorough. " * 3_330
"""A system prompt of 40 KB: 10,000 tokens a call, at four characters a token."""
LONG_CALL_USD = (10_000 * 0.4 + 5 * 1.6) / 1e6
"""What a call sending it costs, as the model server reports it read: $0.004."""


def test_the_budget_counts_the_base_agents_system_file_from_the_base_commit(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The base's agent reads a 40 KB `systemFile`, and the pull request rewrites it: each
    run is estimated with the base's file as its commit holds it, so a budget of three calls
    keeps one fixture's two runs and leaves the other's out, and
    the job spends within it. Counted as the few tokens of an inline prompt, all four runs
    fitted and the job spent a third past the budget. The runs kept are each held at their
    worst (the file's 40 KB as 40,000 tokens, $0.017), which the budget cannot hold: their
    calls are refused, never sent."""
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
    assert all(f["budget_refused"] for f in document["fixtures"]), document["fixtures"]
    assert len(model.requests) == 0
    assert (run.returncode, run.outputs["result"]) == (1, "fail")
