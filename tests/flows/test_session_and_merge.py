"""The run's lifecycle (`flows.session`) and the shard merge (`flows.shard_merge`) called
in-process, as the front ends call them (one `RunRequest`, `session.run`, `session.decide`):
a real repository, providers built from the environment, the scripted model server on
loopback. A change's run, and the same change run
as two parts and merged, reach the same verdicts; a part given twice or missing is refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from evalward.errors import ConfigError
from evalward.flows import session
from evalward.flows.shard import ShardSpec, WrittenPart
from evalward.git import Git
from evalward.plan.progress import RunProgress
from evalward.plan.request import RunRequest, ShardParts
from evalward.plan.run_setup import Revisions, RunSetup
from evalward.providers.registry import build_providers
from evalward.security import Redactor
from evalward.verdict.gate import GateResult
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.gitrepo import GitRepo
from support.suite import PROVIDER_KEY, make_pr, script_model

pytestmark = pytest.mark.integration

Verdicts = dict[tuple[str, str, str, int], str]


def setup_for(repo: GitRepo, base: str, env: dict[str, str]) -> RunSetup:
    return RunSetup(Git(repo.path), Revisions(base=base), build_providers(env), env)


def verdicts(outcome: session.Outcome) -> Verdicts:
    return {(f.eval, f.fixture, f.side, f.rep): f.status for f in outcome.evaluation.fixtures}


async def change(setup: RunSetup, progress: RunProgress) -> session.Outcome:
    try:
        return await session.run(RunRequest(setup, progress))
    finally:
        await setup.providers.aclose()


async def part(setup: RunSetup, spec: ShardSpec, output: Path) -> WrittenPart | None:
    try:
        request = RunRequest(setup, RunProgress())
        return await session.run_part(request, spec, output, Redactor([PROVIDER_KEY]), None)
    finally:
        await setup.providers.aclose()


def merge(setup: RunSetup, paths: list[Path]) -> session.Outcome:
    parts = ShardParts(tuple(paths), None)
    return asyncio.run(session.run(RunRequest(setup, RunProgress(), parts)))


def failing(outcome: session.Outcome) -> list[str]:
    return session.decide(outcome).decision.failing_evals


@pytest.fixture
def pull(repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer) -> str:
    """The suite's pull request, its head greeting badly: the base commit."""
    base, _ = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    return base


def test_an_error_before_the_plan_is_the_outcomes_and_nothing_began(
    repo: GitRepo, env: dict[str, str], pull: str
) -> None:
    """A base that is no commit stops the run before its plan: `session.run` hands the error
    back in the Outcome (it raises nothing across), and the decision is never a pass."""
    outcome = asyncio.run(change(setup_for(repo, "no-such-base", env), RunProgress()))

    assert outcome.failure is not None and not outcome.began
    assert outcome.evaluation.fixtures == []
    assert session.decide(outcome).decision.result is GateResult.incomplete


def test_a_change_runs_to_an_outcome_that_blocks_and_counts_every_call(
    repo: GitRepo, model: ScriptedModelServer, env: dict[str, str], pull: str
) -> None:
    progress = RunProgress()

    outcome = asyncio.run(change(setup_for(repo, pull, env), progress))

    assert progress.planned == len(outcome.evaluation.fixtures) > 0
    assert {f.side for f in outcome.evaluation.fixtures} == {"base", "head"}
    failed = [(f.fixture, f.side) for f in outcome.evaluation.fixtures if f.status == "fail"]
    assert failed == [("greeting", "head")]
    decision = session.decide(outcome).decision
    assert decision.result is GateResult.failed
    assert decision.failing_evals == ["support-bot-eval"]
    assert outcome.spent is not None
    assert outcome.spent.model_calls == len(model.requests) > 0


def test_two_parts_merged_reach_the_verdicts_of_the_run_they_were_split_from(
    repo: GitRepo, tmp_path: Path, env: dict[str, str], pull: str
) -> None:
    whole = asyncio.run(change(setup_for(repo, pull, env), RunProgress()))
    parts = tmp_path / "parts"
    written = [
        asyncio.run(part(setup_for(repo, pull, env), ShardSpec(i, 2), parts)) for i in (1, 2)
    ]
    assert all(w is not None for w in written)
    paths = [w.path for w in written if w is not None]
    assert sum(w.runs for w in written if w is not None) == len(whole.evaluation.fixtures)

    merged = merge(setup_for(repo, pull, env), paths)

    assert verdicts(merged) == verdicts(whole)
    assert failing(merged) == failing(whole)


def test_a_merge_refuses_a_part_given_twice_or_one_missing(
    repo: GitRepo, tmp_path: Path, env: dict[str, str], pull: str
) -> None:
    first = asyncio.run(part(setup_for(repo, pull, env), ShardSpec(1, 2), tmp_path / "parts"))
    assert first is not None

    twice = merge(setup_for(repo, pull, env), [first.path, first.path])
    missing = merge(setup_for(repo, pull, env), [first.path])

    # the refusal is the outcome's, as data: nothing merged, nothing began
    assert isinstance(twice.failure, ConfigError) and not twice.began
    assert isinstance(missing.failure, ConfigError) and not missing.began
    assert "shard 1/2 is given twice" in str(twice.failure)
    assert "shard 2/2 missing" in str(missing.failure)
    assert session.decide(twice).decision.result is GateResult.incomplete
