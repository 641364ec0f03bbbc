"""An agent whose definition moves is unchanged only while it reads the same files: a
`systemFile` written the old way (relative to the file that names it) means another file
once the definition is in another folder, so a pull request that only moves the definition
next to a worse prompt changes the agent, and its Evals run and gate."""

from __future__ import annotations

import pytest

from action.test_gate_evasion import assert_fails_below_threshold, gate
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.gitrepo import GitRepo
from support.suite import (
    BASE_PROMPT,
    GREETING_FIXTURE,
    HEAD_PROMPT,
    ORDER_FIXTURE,
    SUPPORT_BOT,
    SUPPORT_EVAL,
    script_model,
)

pytestmark = pytest.mark.hostile


def test_moving_a_definition_beside_another_prompt_file_changes_the_agent(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    named = "  systemFile: prompt.md\n"  # the old rule: beside the definition
    relative = SUPPORT_BOT.format(prompt="x").replace('  system: "x"\n', named)
    base = repo.commit(
        "a bot whose prompt is beside it, and another team's prompt in a folder below",
        {
            "agents/support-bot.yaml": relative,
            "agents/prompt.md": BASE_PROMPT,
            "agents/drafts/prompt.md": HEAD_PROMPT,
            "evals/support-bot.yaml": SUPPORT_EVAL,
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        },
    )
    repo.branch("feature")
    repo.git("mv", "agents/support-bot.yaml", "agents/drafts/support-bot.yaml")
    repo.git("commit", "-q", "-m", "only move the definition")
    head = repo.head()
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    assert "support-bot" in run.results()["changedAgents"], run.stdout + run.stderr
    assert_fails_below_threshold(run, github)
