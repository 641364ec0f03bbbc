"""Running the pipeline from the action: its options, cancellation, shards, missing keys.

SIGTERM and SIGINT (GitHub cancelling the job, a timeout) stop the runs; what finished by
then is still reported and written (`interrupt`, shared with `evalward run`), and the
decision says the run was cancelled. With the `merge` input nothing runs: the shards'
results are merged instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalward.action.github import PullInfo
from evalward.action.job import Clients, Console, Job, Trusted
from evalward.action.settings import Settings
from evalward.action.workflow import command
from evalward.errors import ConfigError, MissingSecretError
from evalward.flows import session
from evalward.flows.interrupt import RunProgress, reused_mark
from evalward.flows.run_setup import Revisions, RunOptions, RunSetup
from evalward.flows.session import Outcome
from evalward.flows.shard_signature import check_key
from evalward.record.schema import ShardPart
from evalward.rundata.results import FixtureResult
from evalward.rundata.spending import Budget
from evalward.runtime.environment import EnvironmentStore
from evalward.runtime.environment_limits import input_limits
from evalward.runtime.sandbox import Sandbox
from evalward.runtime.workspace_guard import protect
from evalward.stages.gate import GateResult
from evalward.stages.plan import MoreRuns, Plan


@dataclass
class LoggedProgress(RunProgress):
    """What has run so far (`interrupt.RunProgress`), logged as it happens."""

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


async def evaluate(
    job: Job,
    revisions: Revisions,
    progress: LoggedProgress,
    select: Callable[[str], bool] | None = None,
) -> Outcome:
    """Run the pipeline (`session.run_change`); a signal stops it, and the Outcome holds the
    runs finished so far. In merge mode nothing runs: the shards' results are merged."""
    if job.site.settings.merge:
        return merged(job, revisions, progress, select)
    prepare_sandbox(job)
    options = run_options(job.site.settings, job.trusted, job.clients.sandbox)
    setup = job_setup(job.clients, job.site.env, revisions, options, select)
    return await session.run_change(setup, progress)


def merged(
    job: Job,
    revisions: Revisions,
    progress: LoggedProgress,
    select: Callable[[str], bool] | None = None,
) -> Outcome:
    """The shards' results the `merge` input names, merged (`shard_merge`) into the plan
    this job computes itself from the base's definitions: parts sealed with `shard-key`, of
    this run's commits, plan and definitions, and none that the checkout brings (a
    committed file matching the glob)."""
    key = shard_key(job.site.settings)
    pattern = job.site.settings.merge
    given = Path(pattern)
    anchor = Path(given.anchor) if given.is_absolute() else job.site.context.workspace
    paths = sorted(anchor.glob(str(given.relative_to(given.anchor))))
    if not paths:
        raise ConfigError(
            f"action input `merge`: no file matches {pattern!r} in the workspace; download "
            "every shard's shard-i-of-n.json there first (see examples/workflows/sharded.yml)"
        )
    workspace = job.site.context.workspace

    def not_committed(path: Path, part: ShardPart) -> None:
        if path.is_relative_to(workspace) and job.clients.git.tracked(
            path.relative_to(workspace).as_posix()
        ):
            raise ConfigError(
                f"action input `merge`: {path} is committed in the repository; shard "
                "results come from this run's shard jobs, not from the checkout"
            )

    options = RunOptions(
        gate_config=job.site.settings.gate_config, run_all=job.site.settings.run_all
    )
    setup = job_setup(job.clients, job.site.env, revisions, options, select)
    outcome = session.merge(setup, paths, key, progress, not_committed)
    job.console.log(
        f"evalward: merged {len(paths)} shards, {len(outcome.evaluation.fixtures)} runs"
    )
    return outcome


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


def job_setup(
    clients: Clients,
    env: Mapping[str, str],
    revisions: Revisions,
    options: RunOptions,
    select: Callable[[str], bool] | None = None,
) -> RunSetup:
    """The pipeline's set-up for this job: the clients `action.run` built for it, passed in
    (nothing below builds one), and the run's options."""
    return RunSetup(
        git=clients.git,
        revisions=revisions,
        providers=clients.providers,
        env=env,
        options=options,
        select=select,
        started=clients.started,
    )


def prepare_sandbox(job: Job) -> None:
    """Before the first program from a checkout starts: the store of agents' environments
    (beside the result cache, under its trust rule), how runs' processes are tracked and the
    sides kept apart (said in the log), and, with the user switch, what the agent user must
    not write or read taken from the workspace (`workspace_guard.protect`), given back when
    the run ends."""
    sandbox, cache, context = job.clients.sandbox, job.trusted.cache, job.site.context
    if cache.distrust:
        job.console.log(command("warning", f"result cache not used: {cache.distrust}"))
    if sandbox is None:
        return
    if sandbox.environments is None:
        sandbox.use_environments(
            EnvironmentStore(
                cache.directory / "environments" if cache.directory else None,
                reuse=cache.directory is not None and cache.mode.reads,
                keep=cache.directory is not None and cache.mode.writes,
                scope=context.event_name,
                log=job.console.log,
                limits=input_limits(
                    job.site.settings.environment_timeout_seconds,
                    job.site.settings.environment_max_size_mb,
                    job.site.settings.environment_max_files,
                ),
            )
        )
    sandbox.keep_apart(job.console.log)
    if sandbox.user is not None:
        written = [job.site.output_dir, *([cache.directory] if cache.directory else [])]
        sandbox.give_back(protect(context.workspace, written, job.site.env))
        sandbox.close_to_others(context.workspace)
    elif persisted := job.clients.git.credential_settings():
        job.console.log(
            command(
                "warning",
                f"the checkout keeps a credential in its git configuration ({persisted[0]}), "
                "which every process in this job can read, the pull request's programs "
                "too (`agent-isolation: off`). Check out with `persist-credentials: false`.",
            )
        )


def run_options(settings: Settings, trusted: Trusted, sandbox: Sandbox | None) -> RunOptions:
    """The settings as the pipeline takes them."""
    return RunOptions(
        parallel=settings.parallel,
        run_all=settings.run_all,
        gate_config=settings.gate_config,
        cache=trusted.cache.open(),
        budget=Budget(settings.max_model_calls, settings.max_cost_usd),
        sandbox=sandbox,
        main_history=trusted.cache.directory,
        regressions=settings.fail_on_regression,
    )


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
    return 0
