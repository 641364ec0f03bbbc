"""Attribution's trials, run as the head runs: each variant of the head the search asks about
(`attribution/`) is a real commit, checked out and run through the same phases as the head
(`session.run`: plan, execute, score), for one Eval's regressing fixtures on the head's side,
with the Eval's own reps and tests.

A variant's verdict is the Eval's own per fixture (its `minRepPassRate`, its sequential
tests): the regression is there while a fixture that regressed does not pass. A variant that
cannot be run (its plan or its runs stopped by an error) is said so and counts as not built:
the search never guesses from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from evalward.attribution.hunks import AgentFiles, Hunk, split_change
from evalward.attribution.search import Attribution, FixtureScore, Trial, attribute
from evalward.attribution.variants import NotBuildable, build_variant, with_only
from evalward.definitions.loader import load_resources
from evalward.files.committed import RepoFiles
from evalward.flows import session
from evalward.plan.fingerprint import referenced_files
from evalward.plan.plan import Plan, PlannedRun
from evalward.plan.prepare import config_at
from evalward.plan.progress import RunProgress
from evalward.plan.request import RunRequest
from evalward.plan.run_setup import Revisions, compose
from evalward.record.evaluation import Evaluation
from evalward.resources import ResourceSet
from evalward.rundata.results import Status
from evalward.rundata.sides import Side
from evalward.verdict.compare import Change


@dataclass(frozen=True)
class Regression:
    """One Eval's fixtures that pass on the base and not on the head, and its target agent."""

    eval: str
    agent: str
    fixtures: tuple[str, ...]


def regressions_of(evaluation: Evaluation) -> list[Regression]:
    """Every Eval of the run with fixtures that regressed, in the comparisons' order."""
    found = []
    for comparison in evaluation.comparisons:
        fixtures = tuple(f.fixture for f in comparison.fixtures if f.change is Change.regression)
        if fixtures:
            found.append(Regression(comparison.name, comparison.head.agent, fixtures))
    return found


def agent_files(request: RunRequest, agent: str, head: str) -> AgentFiles | None:
    """The files `agent` is made of at `head`: its definition and the files it names, as the
    head's definitions load under the base's `evalward.yaml` (None: not defined there)."""
    git, base = request.setup.git, request.setup.revisions.base
    config = config_at(git, git.resolve(base)) if base is not None else None
    with git.worktree(head) as root:
        resources = load_resources(root, config=config, door=RepoFiles.at_commit(git, head, root))
    located = resources.agents.get(agent)
    if located is None:
        return None
    return AgentFiles(agent, located.file, tuple(referenced_files(located)))


async def attribute_regression(
    request: RunRequest, regression: Regression, *, max_trials: int
) -> Attribution:
    """The hunks of the change to `regression.agent` proven to cause `regression`, searched
    with at most `max_trials` trials (`attribution.search.attribute`), each trial the
    regressing fixtures run on one variant of the head."""
    setup = request.setup
    git, revisions = setup.git, setup.revisions
    assert revisions.base is not None, "a regression is measured against a base"
    head = git.resolve(revisions.head or "HEAD")
    base = git.merge_base(git.resolve(revisions.base), head)
    files = agent_files(request, regression.agent, head)
    hunks: tuple[Hunk, ...] = split_change(git, base, head, files) if files is not None else ()

    async def regresses(reverted: frozenset[Hunk]) -> Trial:
        assert files is not None
        variant = build_variant(git, base, head, files, reverted)
        if isinstance(variant, NotBuildable):
            return Trial(False, not_built=variant.reason)
        return await variant_trial(request, regression, variant.commit)

    async def reproduces(applied: frozenset[Hunk]) -> Trial:
        assert files is not None
        variant = with_only(git, base, head, files, hunks, applied)
        if isinstance(variant, NotBuildable):
            return Trial(False, not_built=variant.reason)
        return await variant_trial(request, regression, variant.commit)

    return await attribute(hunks, regresses, reproduces, max_trials=max_trials)


async def variant_trial(request: RunRequest, regression: Regression, commit: str) -> Trial:
    """The regressing fixtures of `regression` run on the head's side at `commit`, as the
    head's were: whether each passes by its Eval's rule, and how many of its runs did."""
    setup = request.setup

    def head_runs(plan: Plan, resources: Mapping[Side, ResourceSet]) -> Plan:
        return plan.with_runs([run for run in plan.runs if _asked(run, regression)])

    variant = dataclasses.replace(
        setup,
        revisions=Revisions(base=setup.revisions.base, head=commit),
        select=lambda name: name == regression.eval,
        shape=compose(setup.shape, head_runs),
        options=dataclasses.replace(setup.options, run_all=True),
        started=None,
    )
    outcome = await session.run(RunRequest(variant, RunProgress()))
    if outcome.failure is not None:
        return Trial(False, not_built=f"its runs stopped: {outcome.failure_message}")
    evaluation = outcome.evaluation
    result = next(
        (r for r in evaluation.evals if r.side == Side.head.value and r.eval == regression.eval),
        None,
    )
    if result is None:
        return Trial(False, not_built=f"{regression.eval} did not run on it")
    verdicts = {o.name: o.result is Status.passed for o in result.fixture_results}
    scores = tuple(
        FixtureScore(
            fixture,
            sum(1 for f in result.fixtures if f.fixture == fixture and f.passed),
            sum(1 for f in result.fixtures if f.fixture == fixture),
        )
        for fixture in regression.fixtures
    )
    regressed = any(not verdicts.get(fixture, False) for fixture in regression.fixtures)
    return Trial(regressed, scores)


def _asked(run: PlannedRun, regression: Regression) -> bool:
    return (
        run.side is Side.head and run.eval == regression.eval and run.fixture in regression.fixtures
    )
