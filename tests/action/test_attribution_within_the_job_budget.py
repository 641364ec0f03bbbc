"""`max-cost-usd` is what the job may spend, attribution's variants included: their calls are
the job's, held to what the gate's own left, and once the job has spent it no variant starts.
The decision is the gate's either way, and the comment says where attribution stopped."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import gate_pull_request
from support.clerk import AGENT, BASE_PROMPT, HEAD_PROMPT, SUITE
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.e2e

CALL_USD = 10_000 * 0.4 / 1e6 + 5 * 1.6 / 1e6
"""What one of the clerk's calls costs at gpt-4.1-mini's price, by the usage the model server
reports: $0.004."""
PAD = "Be thorough. " * 600
"""About 8 KB more of prompt on both sides: a call's request is held at its bytes as tokens,
about what the model server says it read."""
BUDGET = 0.03
"""The gate's own six calls ($0.024) fit; attribution's, at four times as many, would not."""


def test_attributions_variants_spend_within_the_jobs_max_cost_usd(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The clerk's prompt change of three hunks, NEVER REFUND the one that breaks its refunds;
    attribution may make four times the gate's calls. With `max-cost-usd` at $0.03 the gate
    spends $0.024 and blocks. Its variants ran on with no dollar limit: the job spent $0.048,
    past the budget the input says the job's calls are held to."""

    def refuses(body: dict[str, Any]) -> bool:
        return "NEVER REFUND" in json.dumps(body)

    model.script(refuses, text("hello", prompt_tokens=10_000))
    model.script(lambda body: True, text("approved, hello", prompt_tokens=10_000))
    base = repo.commit(
        "the clerk",
        {
            "agents/clerk.yaml": AGENT.format(model="openai/gpt-4.1-mini") + "  maxTokens: 20\n",
            "prompts/clerk.md": BASE_PROMPT + PAD,
            "evals/suite.yaml": SUITE,
            ".gitignore": ".evalward/\n",
            "evalward.yaml": "attribution: { budget: 4 }\n",
        },
    )
    repo.branch("feature")
    head = repo.commit("a stricter clerk", {"prompts/clerk.md": HEAD_PROMPT + PAD})

    env = provider_env(model)
    run = gate_pull_request(repo, github, base, head, env, {"max-cost-usd": str(BUDGET)})

    assert (run.returncode, run.outputs["result"]) == (1, "fail"), run.stdout + run.stderr
    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    gate, variants = document["run"]["spent"], document["run"]["attribution_spent"]
    assert gate["cost_usd"] == pytest.approx(6 * CALL_USD)
    assert gate["cost_usd"] + variants["cost_usd"] <= BUDGET
    assert len(model.requests) == gate["model_calls"] + variants["model_calls"]
    (regression,) = document["attribution"]["regressions"]
    assert regression["result"] == "not attributable"
    assert "attribution stopped at the job's max-cost-usd" in regression["reason"]
    assert "(max-cost-usd raises it)" in regression["reason"]
    assert "attribution stopped at the job's max-cost-usd" in github.comments_on(7)[0]["body"]
