"""The base side reads only what it needs: changed YAML from git, a worktree when agents read
files at run time — and either way runs the base's own definitions."""

from __future__ import annotations

import asyncio
import json

from evalward.flows.pipeline import evaluate_change
from evalward.flows.run_setup import Revisions, RunOptions, RunSetup
from evalward.git import Git
from evalward.providers.registry import build_providers
from fakes.model_server import ScriptedModelServer, text
from support.gitrepo import GitRepo
from support.suite import provider_env

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: bot }
spec:
  models: [openai/gpt-test]
  systemFile: prompts/bot.md
"""
SUITE = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: bot-eval }
spec:
  targetAgent: bot
  fixtureSelector: { matchLabels: { agent: bot } }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: hello, labels: { agent: bot } }
spec:
  targetAgent: bot
  input: { type: prompt, payload: { prompt: hello } }
  assertions:
    - { type: contains, value: hi }
"""


def test_the_base_side_runs_the_base_system_prompt_file(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    base = repo.commit(
        "base",
        {"agents/bot.yaml": AGENT, "evals/bot.yaml": SUITE, "prompts/bot.md": "PROMPT-V1"},
    )
    repo.branch("pr")
    repo.commit("prompt", {"prompts/bot.md": "PROMPT-V2"})
    model.script("PROMPT", text("hi there"))
    env = provider_env(model, "sk-test")

    async def go() -> None:
        providers = build_providers(env)
        try:
            evaluation = await evaluate_change(
                RunSetup(
                    Git(repo.path), Revisions(base=base, head=None), providers, env, RunOptions()
                )
            )
        finally:
            await providers.aclose()
        assert [r.side for r in evaluation.fixtures] == ["head", "base"]
        assert all(r.passed for r in evaluation.fixtures)

    asyncio.run(go())
    systems = sorted(r["messages"][0]["content"] for r in model.requests)
    assert systems == ["PROMPT-V1", "PROMPT-V2"]
    assert json.dumps(model.requests).count("PROMPT-V1") == 1
