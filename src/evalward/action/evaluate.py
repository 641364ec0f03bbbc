"""What the action hands the phases (its one set-up, its progress, a merge's parts), and a
missing key.

SIGTERM and SIGINT (GitHub cancelling the job, a timeout) stop the runs; what finished by
then is still reported and written (`interrupt`, shared with `evalward run`), and the
decision says the run was cancelled. With the `merge` input nothing runs: the shards'
results are merged instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from evalward.action.context import WorkflowContext
from evalward.action.github import PullInfo
from evalward.action.job import Console, Site
from evalward.action.settings import Settings
from evalward.action.trusted.setup import CacheUse
from evalward.action.workflow import command
from evalward.errors import ConfigError, MissingSecretError
from evalward.flows.session import Outcome, run
from evalward.flows.shard_signature import check_key
from evalward.git import Git
from evalward.plan.plan import MoreRuns, Plan
from evalward.plan.progress import RunProgress, reused_mark
from evalward.plan.request import RunRequest, ShardParts
from evalward.plan.run_setup import RunOptions
from evalward.plan.sandbox_ready import EnvironmentBounds, SandboxSetup
from evalward.rundata.results import FixtureResult
from evalward.rundata.spending import Budget
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.verdict.gate import GateResult


@dataclass
class LoggedProgress(RunProgress):
    """What has run so far (`plan.progress.RunProgress`), logged as it happens."""

    log: Callable[[str], None] = field(kw_only=True)
    cache_dir: str = field(kw_only=True)
    """The `cache-dir` input, as the log names it."""

    def on_plan(self, plan: Plan) -> None:
        super().on_plan(plan)
        if plan.reused:
            self.log(
                f"evalward: {plan.reused} of {len(plan.runs)} runs reused from the result "
                f"cache ({self.cache_dir}), not run again; the input `cache: "
                "refresh` runs everything and replaces them"
            )

    def on_more(self, plan: Plan, more: MoreRuns) -> None:
        super().on_more(plan, more)
        self.log(f"evalward: {more.text(len(plan.runs))}")

    def on_result(self, result: FixtureResult) -> None:
        super().on_result(result)
        self.log(
            f"{result.side:4} {result.eval} / {result.fixture} #{result.rep}: "
            f"{result.outcome} ({result.score:.2f}{reused_mark(result)})"
        )


async def evaluate(request: RunRequest, log: Callable[[str], None]) -> Outcome:
    """The request's outcome (`session.run`): a signal or an error stops the runs, and the
    Outcome holds those finished so far; a merge says how many shards it merged."""
    outcome = await run(request)
    if request.parts is not None and outcome.failure is None:
        shards, runs = len(request.parts.paths), len(outcome.evaluation.fixtures)
        log(f"evalward: merged {shards} shards, {runs} runs")
    return outcome


def shard_parts(settings: Settings, workspace: Path, git: Git) -> ShardParts:
    """The shards' results the `merge` input names, to merge (`shard_merge`) into the plan
    this job computes itself from the base's definitions: parts sealed with `shard-key`, of
    this run's commits, plan and definitions, and none that the checkout brings (a
    committed file matching the glob)."""
    key = shard_key(settings)
    pattern = settings.merge
    given = Path(pattern)
    anchor = Path(given.anchor) if given.is_absolute() else workspace
    paths = tuple(sorted(anchor.glob(str(given.relative_to(given.anchor)))))
    if not paths:
        raise ConfigError(
            f"action input `merge`: no file matches {pattern!r} in the workspace; download "
            "every shard's shard-i-of-n.json there first (see examples/workflows/sharded.yml)"
        )

    def not_committed(path: Path) -> None:
        if path.is_relative_to(workspace) and git.tracked(path.relative_to(workspace).as_posix()):
            raise ConfigError(
                f"action input `merge`: {path} is committed in the repository; shard "
                "results come from this run's shard jobs, not from the checkout"
            )

    return ShardParts(paths, key, not_committed)


def shard_key(settings: Settings) -> str:
    """The key that seals shard parts (`seal`); a shard or a merge refuses to go without."""
    if not settings.shard_key:
        raise ConfigError(
            "action input `shard-key`: a shard's part is sealed for the merge with a key that "
            "the pull request's code cannot read, and the merge takes no other; give every "
            "shard step and the merge step `shard-key: ${{ secrets.EVALWARD_SHARD_KEY }}` (a "
            "secret of at least 32 characters: `openssl rand -hex 32`; see docs/github.md)"
        )
    return check_key(settings.shard_key, "action input `shard-key`")


def run_options(settings: Settings, cache: CacheUse, sandbox: Sandbox | None) -> RunOptions:
    """How the pipeline runs for this job: the settings as it takes them, the result cache as
    this run may use it (`setup.decide_cache`), and the sandbox `action.run` built."""
    return RunOptions(
        parallel=settings.parallel,
        run_all=settings.run_all,
        gate_config=settings.gate_config,
        cache=cache.open(),
        budget=Budget(settings.max_model_calls, settings.max_cost_usd),
        sandbox=sandbox,
        main_history=cache.directory,
        regressions=settings.fail_on_regression,
        allow_incomplete=settings.allow_incomplete,
        warm_pairs=True,
    )


def sandbox_setup(site: Site, cache: CacheUse, log: Callable[[str], None]) -> SandboxSetup:
    """How this job's sandbox is readied: agents' environments kept beside the result cache,
    under its trust rule, and the output and cache folders kept from the agent user. With
    `base-cache` on a pull request's gate they are built for this job alone: an archive
    does not keep what seals them (`base_cache.KEPT_OUT`), and the workspace is not read."""
    settings, directory = site.settings, cache.directory
    kept = directory if cache.private is None else None
    return SandboxSetup(
        workspace=site.context.workspace,
        written=(site.output_dir, *([directory] if directory else [])),
        environments=kept / "environments" if kept else None,
        reuse=cache.mode.reads,
        keep=cache.mode.writes,
        scope=site.context.event_name,
        bounds=EnvironmentBounds(
            settings.environment_timeout_seconds,
            settings.environment_max_size_mb,
            settings.environment_max_files,
        ),
        log=log,
        warn=lambda message: log(command("warning", message)),
        default_branch=_into_the_default_branch(site.context),
    )


def _into_the_default_branch(context: WorkflowContext) -> bool:
    """Whether the event's base is the repository's default branch: a pull request's or a
    merge group's into it (the branch the event names, not one a pull request chose)."""
    base = context.event_base_ref or context.group_branch
    return bool(base) and base == context.default_branch


def missing_secrets(
    console: Console, settings: Settings, exc: MissingSecretError, pull: PullInfo | None
) -> int:
    """A provider key is missing: fail, or skip the gate where the input allows it."""
    where = (
        f"This pull request comes from the fork {pull.head_repo}, and secrets are not "
        "passed to workflows from forks, so the provider key is empty. "
        if pull is not None and pull.from_fork
        else ""
    )
    message = f"{where}{exc}"
    if not exc.skippable:
        raise MissingSecretError(
            message + " The base branch's agents and judges have every key they need, so "
            "this pull request's change is what needs it: `on-missing-secrets: skip` does "
            "not apply. Add the key as a secret, or keep the provider the base uses.",
            skippable=False,
        )
    if settings.on_missing_secrets == "fail":
        raise MissingSecretError(
            message + " To skip the gate instead, set the input `on-missing-secrets: skip`."
        )
    console.log(command("warning", f"evalward skipped: {message}"))
    console.output({"result": GateResult.skipped.value})
    return console.exit_code(0)
