"""The GitHub Action's entry: the environment in, the exit code out.

`main()` builds the real clients (git, GitHub, providers) from the environment, routes the
event (`route`) and runs what it asks for; everything below takes each client as a
parameter (`job.Job`), so tests drive it with local servers. The exit code always tells the
truth: 0 pass/bypassed/skipped, 1 fail, 2 configuration, 3 external failure (a file the
runner could not write among them), 130 cancelled.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from evalward.action.branch_status import begin_status
from evalward.action.context import WorkflowContext, load_context, unread_context
from evalward.action.evaluate import (
    LoggedProgress,
    evaluate,
    missing_secrets,
    run_options,
    sandbox_setup,
    shard_key,
    shard_parts,
)
from evalward.action.github import GitHubClient, PullInfo
from evalward.action.job import Clients, Console, Job, Site, Trusted
from evalward.action.ownership import hand_back
from evalward.action.publish.checks import annotate, report_check
from evalward.action.publish.outputs import (
    branch_report,
    conclude,
    in_workspace,
    record_scores,
    write_everything,
)
from evalward.action.pull_request import (
    gate,
    gate_group,
    gated_head,
    group_base,
    pull_request,
    say_in_comment,
)
from evalward.action.route import Route, RouteKind, eval_schedules, route_event
from evalward.action.settings import CommentMode, Settings
from evalward.action.trusted.base_cache import BaseCacheAsk, stamp
from evalward.action.trusted.setup import CacheUse, decide_cache, fetched_cache, trusted_replies
from evalward.action.trusted.trust import (
    TrustedInputs,
    agent_sandbox,
    as_committed,
    check_output_dir,
    trusted_inputs,
)
from evalward.action.workflow import Outputs, append_summary, command
from evalward.errors import (
    EXIT_BUG,
    EXIT_EXTERNAL,
    EXIT_INTERRUPTED,
    ConfigError,
    EvalwardError,
    MissingSecretError,
    ResourceError,
    refusal_message,
    refused_write,
)
from evalward.flows import session, shard
from evalward.flows.session import decide
from evalward.git import Git
from evalward.host import Host
from evalward.plan.request import RunRequest
from evalward.plan.result_cache_db import FILE_NAME
from evalward.plan.run_setup import Revisions, RunSetup
from evalward.providers.config import ProvidersConfig
from evalward.providers.registry import Providers, build_providers
from evalward.report.markdown import render_stopped_early
from evalward.verdict.gate import GateResult


def main(
    env: Mapping[str, str] | None = None, out: TextIO | None = None, host: Host | None = None
) -> int:
    """Build real clients from the environment and run the action. However it ends, what it
    left in the workspace goes back to the workspace's owner (`ownership`). `host` is the
    process's (its environment, redaction and start-up pause); tests give just an `env`."""
    host = host or Host.of_process(env)
    out = out or sys.stdout
    outputs = Outputs(host.env.get("GITHUB_OUTPUT"))
    try:
        settings = Settings.from_env(host.env)
        context = load_context(host.env)
    except (Exception, KeyboardInterrupt) as exc:  # an input or the event's payload is wrong
        stopped_early(host, unread_context(host.env), outputs, exc)
        raise
    written = [
        context.workspace_path(settings.output_dir),
        context.workspace_path(settings.cache_dir),
    ]
    try:
        return _main(host, out, settings, context, outputs)
    except (Exception, KeyboardInterrupt) as exc:
        stopped_early(host, context, outputs, exc)
        raise
    finally:
        given = hand_back(context.workspace, [path for path in written if path is not None])
        if given:
            owner = context.workspace.stat().st_uid
            print(f"evalward: {given} files and folders given back to uid {owner}", file=out)


def stopped_early(
    host: Host, context: WorkflowContext, outputs: Outputs, exc: Exception | KeyboardInterrupt
) -> None:
    """An error or a signal ended the run before it wrote its decision (GitHub's API refused
    the pull request, an input is wrong, a bug, the job cancelled while the pull request was
    looked up): `result=incomplete`, as for any gate an error stops, and a job summary saying
    what stopped it. The error itself is the log's last line (`evalward.__main__`), and its
    exit code the job's."""
    if "result" in outputs.written:
        return
    redact = host.redactor()
    if isinstance(exc, KeyboardInterrupt):
        message = "cancelled (SIGINT or SIGTERM) before the gate wrote its decision"
        code = EXIT_INTERRUPTED
    elif isinstance(exc, EvalwardError):
        message, code = str(exc), exc.exit_code
    elif isinstance(exc, OSError) and refused_write(exc):  # a full disk: no bug, rerun
        message, code = refusal_message(exc), EXIT_EXTERNAL
    else:
        message = f"internal error: {type(exc).__name__}: {exc}. This is a bug in evalward."
        code = EXIT_BUG
    summary = render_stopped_early(message, code, context.run_url)
    try:
        outputs.write({"result": GateResult.incomplete.value}, redact)
        append_summary(host.env.get("GITHUB_STEP_SUMMARY"), summary, redact)
    except OSError:
        pass  # the runner's files cannot be written: the error itself still ends the run


def _providers(
    env: Mapping[str, str],
    trusted: TrustedInputs,
    config: ProvidersConfig,
    workspace: Path,
    *,
    base_files: Path,
    base_sha: str | None,
) -> Providers:
    """The run's providers: a mistake in the base commit's mock script named as the
    repository names the file, not by its private copy in `base_files`."""
    try:
        return build_providers(
            env,
            mock_script=str(trusted.mock_script) if trusted.mock_script else None,
            config=config,
            cache_root=workspace,
            workflow=True,
        )
    except ResourceError as exc:
        raise as_committed(exc, base_files, base_sha) from None


def _main(
    host: Host, out: TextIO, settings: Settings, context: WorkflowContext, outputs: Outputs
) -> int:
    env = host.env
    schedules = eval_schedules(context.workspace) if context.event_name == "schedule" else {}
    route = route_event(context, settings, schedules=schedules, now=dt.datetime.now(dt.UTC))
    if route.kind is RouteKind.skip:
        skipped = Console(out, host.redactor(), outputs)
        skipped.log(f"evalward: skipped — {route.why}")
        skipped.output({"result": GateResult.skipped.value})
        return skipped.exit_code(0)
    token = settings.github_token.get_secret_value() or env.get("GITHUB_TOKEN", "")
    github: GitHubClient | None = None
    if route.kind in (RouteKind.gate, RouteKind.group) or settings.check_run:
        if not token:
            raise ConfigError(
                "no GitHub token: set the action input `github-token` (it defaults to "
                "`${{ github.token }}`) or the GITHUB_TOKEN environment variable"
            )
        github = GitHubClient(context.api_url, token, context.repository)
    git = Git(context.workspace)
    site = Site(env, context, settings)
    pull = _pull(site, github, route)
    try:
        check_output_dir(git, context.workspace, site.output_dir)
    except ConfigError as exc:
        if pull is not None and github is not None:
            _comment_stopped(site, github, pull, exc, Console(out, host.redactor(), outputs))
        raise
    parts = shard_parts(settings, context.workspace, git) if settings.merge else None
    # What the base decides (its provider settings, mock script, comment template) is read
    # from the commit the runs are compared with: the API's, not a replayed payload's older one.
    base_sha = pull.base_sha if pull is not None else context.base_sha or None
    if route.kind is RouteKind.group and github is not None:
        base_sha = group_base(site, github, git)  # the base branch's tip, not the parent
    with tempfile.TemporaryDirectory(prefix="evalward-base-files-") as folder:
        trusted = trusted_inputs(context, settings, git, base_sha, Path(folder))
        cache = _cache(site, git, route, pull, token, base_sha=base_sha, folder=Path(folder))
        config, distrusted_replies = trusted_replies(
            trusted.providers, context, git, cache, settings.cache_dir
        )
        providers = _providers(
            env, trusted, config, context.workspace, base_files=Path(folder), base_sha=base_sha
        )
        # Every secret evalward knows: the environment's, and the keys the provider settings
        # name.
        host.note_key_envs(providers.key_envs)
        redact = host.redactor()
        sandbox = agent_sandbox(settings, os.geteuid(), context.workspace)
        if sandbox.user is not None:
            os.umask(0o022)  # nothing evalward writes is writable by the agent user
        console = Console(out, redact, outputs)
        if route.kind is RouteKind.group:  # the base branch's tip and the group's commit
            revisions, select = Revisions(base_sha, context.head_sha), None
        elif pull is None:
            revisions, select = Revisions(base=None), _chosen(route)
        else:
            revisions = Revisions(pull.base_sha, gated_head(context, pull))
            select = None
        setup = RunSetup(
            git=git,
            revisions=revisions,
            providers=providers,
            env=env,
            options=run_options(settings, cache, sandbox),
            select=select,
            started=host.started,
            sandbox_setup=sandbox_setup(site, cache, console.log),
            unloadable_base=(
                f"have someone with write access apply the `{settings.bypass_label}` label to "
                "merge this pull request as it is (the bypass, audited)"
            ),
        )
        progress = LoggedProgress(log=console.log, cache_dir=cache.fetched or settings.cache_dir)
        request = RunRequest(setup, progress, parts)
        job = Job(
            console=console,
            site=site,
            clients=Clients(git, github),
            route=route,
            pull=pull,
            trusted=Trusted(trusted.template, trusted.template_named, cache, distrusted_replies),
        )
        return asyncio.run(run(job, request))


async def run(job: Job, request: RunRequest) -> int:
    """What the job's route asks for: the runs `request` asks the phases for (`main` built
    it, the one door into a run), for the job's pull request when the route gates one. Its
    clients are closed however it ends."""
    try:
        for unread in job.site.settings.unread(job.site.context.event_name):
            job.console.log(command("warning", unread))
        if job.trusted.distrusted_replies:
            job.console.log(
                command("warning", f"response cache not used: {job.trusted.distrusted_replies}")
            )
        if job.trusted.cache.fetched:
            job.console.log(
                f"evalward: the result cache is the base branch's, {job.trusted.cache.fetched} "
                "(input `base-cache`); the workspace's `cache-dir` is not read"
            )
        if job.trusted.cache.distrust and not job.site.settings.merge:
            job.console.log(
                command("warning", f"result cache not used: {job.trusted.cache.distrust}")
            )
        elif (restored := _restored_on_a_pull_request(job)) is not None:
            job.console.log(
                command(
                    "notice",
                    f"the result cache in {restored} is read: a workflow the pull request "
                    "adds, or a step before evalward, can fill it, and its results answer "
                    "runs unrun. Give `base-cache` so that a pull request's gate reads only "
                    "what a push run on its base branch uploaded (docs/github.md, `base-cache`)",
                    title="evalward: a cache the pull request could have written",
                )
            )
        if job.site.settings.shard and not job.site.settings.merge:
            return await shard_part(job, request)
        if job.route.kind is RouteKind.group:
            return await gate_group(job, request)
        if job.pull is not None:
            return await gate(job, request)
        return await run_all(job, request)
    finally:
        setup = request.setup
        await setup.providers.aclose()
        cache = setup.providers.response_cache
        if cache is not None and (unkept := cache.unkept()):  # said; the run went on
            job.console.log(command("warning", unkept))
        results = setup.options.cache
        if results is not None and (lost := results.unkept(job.site.context.workspace)):
            job.console.log(command("warning", lost))  # said; the run went on
        sandbox = setup.options.sandbox
        if sandbox is not None and (left := sandbox.close()):
            job.console.log(command("warning", f"agents' leftovers not removed: {left}"))


async def run_all(job: Job, request: RunRequest) -> int:
    """Every Eval (or the scheduled ones) on the current ref: dispatch, schedule, push."""
    route = job.route
    job.console.log(command("group", f"evalward: {route.why}"))
    status = begin_status(job, route)
    try:
        outcome = await evaluate(request, job.console.log)
    except BaseException:
        status.close(job.console, "the run stopped with an error")
        raise
    failure = outcome.failure
    if isinstance(failure, MissingSecretError):
        status.close(job.console, "a model provider's key is missing")
        job.console.log(command("endgroup"))
        return missing_secrets(job.console, job.site.settings, failure, None)
    if failure is not None and not outcome.began:
        status.close(job.console, "the run stopped with an error")
        raise failure
    job.console.log(command("endgroup"))
    verdict = decide(outcome)
    evaluation = verdict.evaluation
    head_sha = job.site.context.sha
    report = branch_report(job.site, verdict, route)
    report.since_scheduled = status.since_scheduled(evaluation)
    write_everything(job, verdict, report)
    # after the files: what the run found is written whatever recording its status meets
    if outcome.failure is not None:
        status.close(job.console, "the run stopped with an error")
    else:
        status.finish(job.console, evaluation, cancelled=outcome.cancelled)
    whole = not outcome.cancelled and outcome.failure is None
    if job.site.context.event_name in ("push", "schedule") and whole:
        record_scores(job, evaluation)
    annotate(job.console, report)
    report_check(job, verdict, report, head_sha, into=None)
    return conclude(job.console, verdict)


async def shard_part(job: Job, request: RunRequest) -> int:
    """Run part i of n and write its shard-i-of-n.json (`session.run_part`); the comment and
    the gate are the merge's. A cancelled part writes nothing."""
    spec = shard.ShardSpec.parse(job.site.settings.shard, "action input `shard`")
    key = shard_key(job.site.settings)
    try:
        part = await session.run_part(request, spec, job.site.output_dir, job.console.redact, key)
    except MissingSecretError as exc:
        return missing_secrets(job.console, job.site.settings, exc, None)
    if part is None:
        job.console.log(f"evalward: shard {spec} cancelled; no results written")
        return EXIT_INTERRUPTED
    if part.unwritten is not None:  # its runs are lost: the job ends 3, to be rerun
        where = in_workspace(job.site.context, part.path)
        job.console.lose(
            f"shard {spec}'s file {where}", part.unwritten, costs="The part's runs are lost"
        )
        return job.console.exit_code(request.progress.exit_code(0))
    job.console.log(f"evalward: {part}")
    job.console.output({"results-json": in_workspace(job.site.context, part.path)})
    return job.console.exit_code(request.progress.exit_code(0))


def _restored_on_a_pull_request(job: Job) -> str | None:
    """The workspace's result cache where a pull request's gate reads one restored there
    without `base-cache` (the plain `actions/cache` route), as the log names it; else None."""
    cache = job.trusted.cache
    gates_a_pull = job.pull is not None or job.route.kind is RouteKind.group
    if not gates_a_pull or cache.fetched or cache.directory is None or not cache.mode.reads:
        return None
    if not (cache.directory / "results" / FILE_NAME).is_file():
        return None  # nothing restored: nothing there answers a run
    return in_workspace(job.site.context, cache.directory)


def _cache(
    site: Site,
    git: Git,
    route: Route,
    pull: PullInfo | None,
    token: str,
    *,
    base_sha: str | None,
    folder: Path,
) -> CacheUse:
    """The result cache this run may use (`setup.decide_cache`): with `base-cache` on a
    pull request's or a merge queue's gate, only the artifact a push run on its base branch
    uploaded at a commit of the branch's line up to `base_sha` (`setup.fetched_cache`),
    whatever the workspace holds. A push run says in its cache that it ran on it."""
    settings, context = site.settings, site.context
    if route.kind is RouteKind.group:
        branch = context.group_branch
    elif route.kind is RouteKind.gate and pull is not None:
        branch = pull.base_ref
    else:
        branch = None
    if not settings.base_cache or branch is None:
        use = decide_cache(settings, context, git)
        if context.event_name == "push" and route.kind is RouteKind.run and use.directory:
            # the artifact this run uploads names it, as a gate's `base-cache` asks
            stamp(use.directory, context.ref, context.sha, context.run_id)
        return use
    private = folder / "caches"
    private.mkdir(mode=0o700)
    ask = BaseCacheAsk(
        context.api_url, token, context.repository, settings.base_cache, branch, base_sha or ""
    )
    return fetched_cache(settings, ask, private, git)


def _comment_stopped(
    site: Site, github: GitHubClient, pull: PullInfo, exc: ConfigError, console: Console
) -> None:
    """Say in the pull request's comment that its head stopped the gate before it ran (a
    file it commits where the results go): the comment an earlier head's gate wrote, a pass
    perhaps, must not stand over this one; a head pushed since speaks for itself. The error
    itself still ends the run."""
    moved_on = bool(site.context.head_sha) and site.context.head_sha != pull.head_sha
    if site.settings.comment is CommentMode.never or moved_on:
        return
    said = render_stopped_early(str(exc), exc.exit_code, site.context.run_url, pull.head_sha)
    say_in_comment(console, github, site.marker, pull, console.redact(f"{site.marker}\n{said}"))


def _pull(site: Site, github: GitHubClient | None, route: Route) -> PullInfo | None:
    """The pull request a gate's route names, looked up before anything runs; a merge
    queue's group looks its pull request up only to weigh its bypass label."""
    if route.kind is not RouteKind.gate or route.pr is None or github is None:
        return None
    return pull_request(site, github, route.pr)


def _chosen(route: Route) -> Callable[[str], bool] | None:
    """The route's Evals as a filter on Eval names (None: every Eval)."""
    chosen = route.evals
    return (lambda name: name in chosen) if chosen is not None else None
