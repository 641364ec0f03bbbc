"""The stages from a change to scored, compared results, shared by the action and the CLI.

This module wires stages together; it owns no client. Git and the providers come in as
parameters, so tests run it against real repositories and local model servers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from evalward.changes import ChangeSet, detect_changes
from evalward.compare import EvalComparison, compare
from evalward.errors import ConfigError, MissingSecretError, ResourceError
from evalward.execute import Checkout, ProgressCallback, execute, score_evals
from evalward.git import FileChange, Git
from evalward.plan import GateConfig, Plan, Side, build_plan, gate_resources
from evalward.providers.registry import Providers, check_credentials
from evalward.resources import ResourceSet, load_resources
from evalward.results import EvalResult, FixtureResult


@dataclass
class Evaluation:
    changes: ChangeSet
    plan: Plan
    fixtures: list[FixtureResult]
    evals: list[EvalResult]
    comparisons: list[EvalComparison]
    notes: list[str] = field(default_factory=list)
    private: set[tuple[str, str]] = field(default_factory=set)
    """(Eval, fixture) pairs marked `visibility: private`: held out of public reports."""


@dataclass(frozen=True)
class Revisions:
    """What to compare. `head=None` means the working tree as it is on disk."""

    base: str | None
    head: str | None = None


async def evaluate_change(
    git: Git,
    revisions: Revisions,
    providers: Providers,
    env: Mapping[str, str],
    *,
    parallel: int,
    run_all: bool = False,
    gate_config: GateConfig = GateConfig.base,
    on_result: ProgressCallback | None = None,
    select: Callable[[str], bool] | None = None,
    on_plan: Callable[[Plan], None] | None = None,
) -> Evaluation:
    """Detect the change, plan, run both sides, score and compare.

    With `gate_config=base` the Evals and fixtures that gate come from the merge base.
    """
    with ExitStack() as stack:
        head_root = stack.enter_context(_tree(git, revisions.head))
        head = load_resources(head_root)
        notes: list[str] = []
        base: ResourceSet | None = None
        base_root: Path | None = None
        changed: list[FileChange] = []
        if revisions.base is not None:
            head_commit = revisions.head or "HEAD"
            merge_base = git.merge_base(git.resolve(revisions.base), git.resolve(head_commit))
            changed = git.changed_files(merge_base, revisions.head)
            base_root = stack.enter_context(git.worktree(merge_base))
            try:
                base = load_resources(base_root)
            except ResourceError as exc:
                notes.append(
                    f"the base branch's resources do not load, so there is no baseline: "
                    f"{exc.problems[0].render()}"
                )
        changes = detect_changes(changed, head, base)
        gate = gate_resources(head, base, gate_config)
        plan = build_plan(changes, gate, base, run_all=run_all or revisions.base is None)
        if select is not None:
            plan.evals = [name for name in plan.evals if select(name)]
            plan.runs = [run for run in plan.runs if select(run.eval)]
        if on_plan is not None:
            on_plan(plan)
        checkouts = {Side.head: Checkout(Side.head, head_root, gate)}
        if base is not None and base_root is not None:
            checkouts[Side.base] = Checkout(Side.base, base_root, base)
        try:
            check_credentials(env, _models_of(plan, checkouts), providers)
        except ConfigError as exc:
            raise MissingSecretError(str(exc)) from None
        fixtures = await execute(
            plan, checkouts, providers, parallel=parallel, on_result=on_result, env=env
        )
        evals = score_evals(plan, checkouts, fixtures)
        return Evaluation(
            changes, plan, fixtures, evals, compare(evals), notes, _private(plan, checkouts)
        )


@contextmanager
def _tree(git: Git, commit: str | None) -> Iterator[Path]:
    """The working tree when it already is `commit` (or no commit is asked for), else a worktree."""
    if commit is None or git.resolve("HEAD") == git.resolve(commit):
        yield git.repo
        return
    with git.worktree(commit) as path:
        yield path


def _private(plan: Plan, checkouts: dict[Side, Checkout]) -> set[tuple[str, str]]:
    """Held-out fixtures: private on either side, or every fixture of a private Eval."""
    private: set[tuple[str, str]] = set()
    for run in plan.runs:
        resources = checkouts[run.side].resources
        evaluation = resources.evals[run.eval].resource
        fixture = resources.fixtures[run.fixture].resource
        if "private" in (evaluation.spec.visibility, fixture.spec.visibility):
            private.add((run.eval, run.fixture))
    return private


def _models_of(plan: Plan, checkouts: dict[Side, Checkout]) -> list[str]:
    """Every model the plan will call: the agents' first choices and the Evals' judges."""
    models: set[str] = set()
    for run in plan.runs:
        resources = checkouts[run.side].resources
        evaluation = resources.evals[run.eval].resource
        agent = resources.agents[evaluation.spec.target_agent]
        models.update(agent.resource.spec.models[:1])
        if evaluation.spec.judge.model:
            models.add(evaluation.spec.judge.model)
    return sorted(models)
