"""Attribution's trials run through the real phases: a pull request whose prompt change is
three hunks, of which one makes two fixtures regress, and one whose model field does; each
variant of the head is a commit checked out and run as the head is, against the scripted
model server, which answers by what the agent is really sent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from evalward.attribution.found import Regression
from evalward.attribution.search import Attributed
from evalward.flows import session
from evalward.flows.attribution_runs import attribute_regression, head_commit, regressions_of
from evalward.git import Git
from evalward.plan.progress import RunProgress
from evalward.plan.request import RunRequest
from evalward.plan.run_setup import Revisions, RunSetup
from evalward.providers.registry import build_providers
from fakes.model_server import ScriptedModelServer
from support.clerk import AGENT, BASE_PROMPT, HEAD_PROMPT, SUITE, script
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


def _request(repo: GitRepo, base: str, head: str, env: dict[str, str]) -> RunRequest:
    setup = RunSetup(Git(repo.path), Revisions(base=base, head=head), build_providers(env), env)
    return RunRequest(setup, RunProgress())


async def _attribute(request: RunRequest) -> tuple[list[Regression], Any]:
    try:
        outcome = await session.run(request)
        assert outcome.failure is None, outcome.failure
        regressions = regressions_of(outcome.evaluation)
        head, _ = head_commit(request)
        found = await attribute_regression(
            request, outcome.evaluation, regressions[0], max_trials=12, head=head
        )
        assert found.witnesses == ()  # no budget: every variant runs every regressed fixture
        files = outcome.evaluation.agent_files["clerk"]
        assert files.definition == "agents/clerk.yaml" and "prompts/clerk.md" in files.files
        return regressions, found.attribution
    finally:
        await request.setup.providers.aclose()


def test_the_hunk_that_makes_two_fixtures_regress_is_found_on_its_lines(
    repo: GitRepo, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    script(model)
    agent = AGENT.format(model="openai/gpt-4.1-mini")
    files = {"agents/clerk.yaml": agent, "prompts/clerk.md": BASE_PROMPT, "evals/s.yaml": SUITE}
    base = repo.commit("the clerk", files)
    repo.branch("feature")
    head = repo.commit("a stricter clerk", {"prompts/clerk.md": HEAD_PROMPT})

    regressions, found = asyncio.run(_attribute(_request(repo, base, head, env)))

    assert regressions == [Regression("clerk-eval", "clerk", ("refund-a", "refund-b"))]
    assert isinstance(found, Attributed), found
    (hunk,) = found.culprit
    assert (hunk.path, hunk.first, hunk.last) == ("prompts/clerk.md", 5, 5)
    assert hunk.head_lines == ("NEVER REFUND anything.\n",)
    # proven both ways: without it the head passes both fixtures; the base with it fails them
    assert not found.removed.trial.regressed and found.reproduced.trial.regressed
    scores = {s.fixture: (s.passed, s.runs) for s in found.removed.trial.scores}
    assert scores == {"refund-a": (1, 1), "refund-b": (1, 1)}
    # each variant ran only the regressing fixtures: `greet` was asked once a side, by the run
    assert len(model.requests_mentioning('"hi"')) == 2
    assert len(model.requests_mentioning("refund order")) > 4


def test_a_model_field_that_regresses_is_the_cause_not_the_prompt_beside_it(
    repo: GitRepo, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    script(model)
    files = {
        "agents/clerk.yaml": AGENT.format(model="openai/gpt-4.1-mini"),
        "prompts/clerk.md": BASE_PROMPT,
        "evals/s.yaml": SUITE,
    }
    base = repo.commit("the clerk", files)
    repo.branch("feature")
    changed = {
        "agents/clerk.yaml": AGENT.format(model="openai/gpt-4.1-nano"),
        "prompts/clerk.md": BASE_PROMPT.replace("Be brief.", "Be very brief."),
    }
    head = repo.commit("a cheaper model, a briefer clerk", changed)

    regressions, found = asyncio.run(_attribute(_request(repo, base, head, env)))

    assert [r.fixtures for r in regressions] == [("refund-a", "refund-b")]
    assert isinstance(found, Attributed), found
    (hunk,) = found.culprit
    assert (hunk.path, hunk.kind, hunk.field_name) == ("agents/clerk.yaml", "field", "spec.models")
