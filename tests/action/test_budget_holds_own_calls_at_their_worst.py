"""`max-cost-usd` holds the calls evalward makes itself at their worst, as it holds a call
through the model proxy: a declarative agent's and a simulated user's call is let through only
where what is left of the budget, less what the calls in flight hold, holds its cost at its
most (its request's bytes as input tokens, 2,000 more, and its output limit written whole).
Counted only once its reply arrived, a call was sent whenever the job had not yet spent the
budget, however little was left, and the job spent past it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import gate_pull_request
from support.answered import AGENT, commit_suite, helper_eval, scripted
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

ONE_AT_A_TIME = helper_eval("execution: { repsPerFixture: 1, parallel: 1 }")
"""One run at a time: each call is sent after the last one's reply was counted."""
LONG_ANSWERS = AGENT + "  maxTokens: 15000\n"
"""The helper allowed answers of 15,000 tokens: $0.024 written at gpt-4.1-mini's price, and
about $0.025 at its worst with what it reads."""
WRITTEN_USD = 15_000 * 1.6 / 1e6
BUDGET = 0.04
"""One call at its worst, not two; the head's two calls cost $0.048."""


def results(repo: GitRepo) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((repo.path / ".evalward/out/results.json").read_text())
    return document


def long_answer(body: dict[str, Any]) -> bool:
    return "(v2)" in json.dumps(body)


def test_a_declarative_agents_call_the_budget_left_cannot_hold_at_its_worst_is_not_sent(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Each head run makes the one call it is estimated at, and the model writes the 15,000
    tokens its agent allows. The first leaves $0.016 of the $0.04 budget: counted only once
    its reply arrived, the second was sent all the same, the job spent $0.048 and the gate
    passed (exit 0). Held at its worst ($0.025) it does not fit, it is never sent, and the
    run is an error the budget refused."""
    base = commit_suite(repo, ONE_AT_A_TIME, ["f0", "f1"], LONG_ANSWERS)
    repo.branch("change")
    head = repo.commit("a new prompt", {"agent.yaml": LONG_ANSWERS.format(version="v2")})
    scripted(model, "v1", {"f0": [True], "f1": [True]})
    model.script(long_answer, text("the answer", prompt_tokens=100, completion_tokens=15_000))

    run = gate_pull_request(
        repo, github, base, head, env, {"max-cost-usd": str(BUDGET), "cache": "off"}
    )

    document = results(repo)
    assert document["run"]["spent"]["cost_usd"] <= BUDGET, document["run"]["spent"]
    assert sum(map(long_answer, model.requests)) == 1
    heads = {f["fixture"]: f for f in document["fixtures"] if f["side"] == "head"}
    assert heads["f0"]["status"] == "pass", heads["f0"]
    refused = heads["f1"]
    assert refused["status"] == "error" and refused["budget_refused"], refused
    assert "a model call was refused: the job's cost budget cannot hold" in refused["message"]
    assert "maxTokens" in refused["message"] and "(max-cost-usd)" in refused["message"]
    assert (run.returncode, run.outputs["result"]) == (1, "fail")
