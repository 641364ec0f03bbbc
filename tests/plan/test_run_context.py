"""A prepared change's run as one object (`flows.run_context`): made once, its cache keys
shared by every step and every round, and what the result cache holds read through them.
A real run of a declarative agent against the scripted model server."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from evalward.definitions.loader import load_resources
from evalward.execute.execute import Execution, execute
from evalward.git import Git
from evalward.plan.plan import Checkout, Plan, PlannedRun
from evalward.plan.result_cache import ResultCache
from evalward.plan.run_context import RunContext
from evalward.plan.run_setup import Revisions, RunOptions, RunSetup
from evalward.providers.registry import build_providers
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import Side
from fakes.model_server import ScriptedModelServer, text

pytestmark = pytest.mark.integration

SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: bot }
spec:
  models: [openai/gpt-4.1-mini]
  system: You are the bot.
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: bot-eval }
spec:
  targetAgent: bot
  fixtures: [a]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: a }
spec:
  targetAgent: bot
  input: { type: prompt, payload: { prompt: "question a" } }
  assertions:
    - { type: contains, value: "right" }
"""
RUN = PlannedRun(Side.head, "bot-eval", "a", 0)


def test_every_round_shares_the_contexts_keys_and_reads_what_its_runs_stored(
    model: ScriptedModelServer, env: dict[str, str], tmp_path: Path
) -> None:
    model.script("question a", text("right"))
    root = tmp_path / "head"
    root.mkdir()
    (root / "suite.yaml").write_text(SUITE)
    checkouts = {Side.head: Checkout(Side.head, root, load_resources(root))}
    options = RunOptions(parallel=1, cache=ResultCache(tmp_path / "cache"))
    providers = build_providers(env)
    setup = RunSetup(Git(root), Revisions(None), providers, {}, options)
    context = RunContext.of(Plan(runs=[RUN]), checkouts, setup)
    assert context.setup is setup and context.options is options  # held, not copied

    assert context.cached() is None  # an empty cache answers nothing, and makes no key
    round_of = context.with_plan(context.plan.with_runs([RUN]))
    assert round_of.keys is context.keys and round_of.plan is not context.plan
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.plan = Plan()  # type: ignore[misc]

    async def go() -> list[FixtureResult]:
        try:
            return await execute(round_of, Execution())
        finally:
            await providers.aclose()

    assert [r.passed for r in asyncio.run(go())] == [True]
    cached = context.cached()
    assert cached is not None and cached(RUN)
    assert len(model.requests_mentioning("question a")) == 1
