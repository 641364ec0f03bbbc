"""`execute.run_plan.execute` on a `Planned` change (a real repository, the scripted model
server): the runs it hands on in a `Ran`, scored by `execute.plan_scores`, and an error once a
run has finished carried in `Ran.failure` beside that run, not raised."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest

from evalward.execute.plan_scores import score_evals
from evalward.execute.run_plan import Ran, execute
from evalward.plan.planned import Planned
from evalward.plan.progress import RunProgress
from evalward.plan.run_setup import RunOptions
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import Side
from fakes.model_server import ScriptedModelServer, text
from support.gitrepo import GitRepo
from support.greeter import greeter_agent
from support.planning import greeter_files, planned

pytestmark = pytest.mark.integration


def change(repo: GitRepo, model: ScriptedModelServer) -> str:
    """The greeter says "Hi" on the base; its head's warmer prompt says "Hello" and fails."""
    base = repo.commit("greeter", greeter_files())
    repo.write({"agents/greeter.yaml": greeter_agent("openai/gpt-test", "Greet warmly.")})
    model.script(lambda body: "warmly" in json.dumps(body), text("Hello there."))
    model.script(lambda body: True, text("Hi there."))
    return base


async def ran_of(ready: Planned) -> Ran:
    try:
        return await execute(ready)
    finally:
        await ready.context.providers.aclose()


def test_the_plan_runs_on_both_sides_and_is_handed_on_scored(
    repo: GitRepo, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = change(repo, model)
    progress = RunProgress()

    with planned(repo, base, env, RunOptions(parallel=1), progress) as ready:
        ran = asyncio.run(ran_of(ready))
        head = ready.context.checkouts[Side.head].sha

    assert ran.failure is None
    assert sorted((f.side, f.status) for f in ran.fixtures) == [("base", "pass"), ("head", "fail")]
    assert {(f.side, f.rep) for f in progress.done} == {(f.side, f.rep) for f in ran.fixtures}
    assert [f.side for f in ran.fixtures] == [
        "head",
        "base",
    ]  # base held: the head failed first
    assert ran.head_commit == head == repo.head()
    assert list(ran.agents) == ["greeter"]
    assert ran.estimate is not None and ran.estimate.calls == len(model.requests) == 2
    scored = score_evals(ran.plan, ran.evals, ran.fixtures)
    assert [(e.side, e.eval, e.passed) for e in scored] == [
        ("head", "greeter-eval", False),
        ("base", "greeter-eval", True),
    ]


def test_a_base_the_plan_skipped_scores_no_base_eval(
    repo: GitRepo, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = change(repo, model)
    with planned(repo, base, env) as ready:
        ran = asyncio.run(ran_of(ready))
    skipped = copy.copy(ran.plan)
    skipped.skipped_base = {"greeter-eval": "the base has no such Eval"}
    head_only = [f for f in ran.fixtures if f.side == "head"]

    scored = score_evals(skipped, ran.evals, head_only)

    assert [(e.side, e.eval) for e in scored] == [("head", "greeter-eval")]


class FailingLog(RunProgress):
    """A front end whose progress stops working once the first run is in (its log is gone)."""

    def on_result(self, result: FixtureResult) -> None:
        super().on_result(result)
        raise OSError("the log is gone")


def test_an_error_after_a_run_finished_is_carried_beside_that_run(
    repo: GitRepo, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = change(repo, model)

    with planned(repo, base, env, RunOptions(parallel=1), FailingLog()) as ready:
        ran = asyncio.run(ran_of(ready))

    assert isinstance(ran.failure, OSError) and str(ran.failure) == "the log is gone"
    assert len(ran.fixtures) == 1
