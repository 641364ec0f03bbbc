"""A simulated user's calls are metered against the job's budget as they are made, through
`evalward run`: its calls are estimated at their most, but what it reads grows with what the
agent says, so `max-cost-usd` and `max-model-calls` stop it mid-conversation like an agent's
own calls through the model proxy, and the run ends as an error that says so."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import ScriptedModelServer, text
from support.clirun import run_for_results
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

AGENTS = Path(__file__).resolve().parents[2] / "agents"
KEY = "sk-conversation-budget-key-0123456789"

RESOURCES = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: talker }}
spec:
{agent}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: talk-eval }}
spec:
  targetAgent: talker
  fixtures: [long-talk]
  simulatedUser: {{ model: openai/gpt-user }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: long-talk }}
spec:
  targetAgent: talker
  conversation:
    user:
      persona: Dana, who never gives up.
      goal: Get a refund.
    maxTurns: 4
  assertions: [{{ type: contains, value: refund }}]
"""

DECLARATIVE = "  models: [openai/gpt-agent]\n  system: You handle refunds.\n"

PRICES = """\
pricing:
  openai/gpt-agent: { input: 0.01, output: 0.01 }
  openai/gpt-user: { input: 1.0, output: 1.0 }
"""


def user_said(body: dict[str, Any]) -> bool:
    return body.get("model") == "gpt-user"


def run(repo: GitRepo, model: ScriptedModelServer, *budget: str) -> tuple[int, dict[str, Any], str]:
    env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": KEY}
    return run_for_results(repo.path, *budget, **env)


def test_max_cost_usd_stops_a_simulated_user_whose_conversation_outgrows_its_estimate(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit(
        "talker",
        {"agents.yaml": RESOURCES.format(agent=DECLARATIVE), "evalward.yaml": PRICES},
    )
    # The estimate reads a short conversation (well under a cent); the user's first call
    # reads 200,000 tokens of it ($0.20), more than the $0.05 the whole job may spend: no
    # call is sent after it, the agent's answer to it the first refused.
    model.script(
        user_said,
        text("I want a refund.", prompt_tokens=200_000),
        text("Still waiting for my refund."),
        text("Refund, please."),
        text("Refund!"),
    )
    model.script(lambda body: body.get("model") == "gpt-agent", text("Let me check."))

    code, results, said = run(repo, model, "--max-cost-usd", "0.05")

    assert code != 0, said
    (result,) = results["fixtures"]
    assert result["status"] == "error", said
    assert result["trace"]["end_reason"] == "error"
    assert result["provider_unavailable"] is False
    assert "a model call was refused: the job's cost budget is spent" in result["message"]
    assert "(max-cost-usd)" in result["message"]
    assert len([r for r in model.requests if user_said(r)]) == 1  # the second was never sent
    assert result["trace"]["user_calls"] == 1
    assert results["run"]["spent"]["calls_by_purpose"] == {"user": 1}

    # Without a budget the same conversation runs to its turn limit.
    model.requests.clear()
    code, results, said = run(repo, model)
    (result,) = results["fixtures"]
    assert result["trace"]["end_reason"] == "turn limit", said
    assert len([r for r in model.requests if user_said(r)]) == 4


def test_max_model_calls_stops_a_simulated_user_once_the_agents_calls_used_the_budget(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    agent = f"  runtime:\n    command: [{sys.executable}, agent/proxy_agent.py]\n"
    repo.commit(
        "talker",
        {
            "agents.yaml": RESOURCES.format(agent=agent),
            "agent/proxy_agent.py": (AGENTS / "proxy_agent.py").read_text(),
        },
    )
    # Each user turn makes the agent call its model once through the model proxy.
    model.script(user_said, *[text(f"calls 1: refund please ({n})") for n in range(4)])
    model.script(lambda body: body.get("model") == "gpt-4.1-mini", text("a refund"))

    # The plan estimates 4 calls: the simulated user's, one per turn it can reach (the
    # agent's own cannot be estimated). The agent's calls draw from the same 4, so the
    # user's third call finds the budget spent: user, agent, user, agent, refused.
    code, results, said = run(repo, model, "--max-model-calls", "4")

    assert code != 0, said
    (result,) = results["fixtures"]
    assert result["status"] == "error", said
    stopped = "the simulated user (openai/gpt-user) was stopped: the job's model-call budget"
    assert stopped in result["message"]
    assert "(max-model-calls)" in result["message"]
    assert len(model.requests) == 4
    assert result["trace"]["user_calls"] == 2
    assert [s["turn"] for s in result["trace"]["steps"] if s["type"] == "input"] == [1, 2]


def test_max_cost_usd_holds_a_simulated_users_call_at_its_worst_before_it_is_sent(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    """The user's first reply costs $0.003 (2,000 tokens read, 1,000 written) of a $0.005
    budget: counted only once its reply arrived, the second was sent all the same and the
    job spent $0.006. Held at its worst (what its request's bytes and 2,000 tokens more can
    make it read, and its 1,024 output tokens: about $0.004), it does not fit beside what
    was spent, and it is never sent."""
    repo.commit(
        "talker",
        {"agents.yaml": RESOURCES.format(agent=DECLARATIVE), "evalward.yaml": PRICES},
    )
    model.script(
        user_said,
        *[text("I want a refund.", prompt_tokens=2_000, completion_tokens=1_000)] * 4,
    )
    model.script(lambda body: body.get("model") == "gpt-agent", text("Let me check."))

    code, results, said = run(repo, model, "--max-cost-usd", "0.005")

    assert code != 0, said
    assert results["run"]["spent"]["cost_usd"] <= 0.005, results["run"]["spent"]
    (result,) = results["fixtures"]
    assert result["status"] == "error" and result["budget_refused"], said
    assert "the job's cost budget cannot hold this call" in result["message"]
    assert "(max-cost-usd)" in result["message"]
    assert len([r for r in model.requests if user_said(r)]) == 1
