"""The GitHub Action: event and inputs in; comment, check, files and exit code out.

`main()` builds the real clients (git, GitHub, providers) from the environment and routes the
event; `gate()` and `run_all()` take each client as a parameter, so tests drive them with
local servers. The exit code always tells the truth: 0 pass/bypassed/skipped, 1 fail,
2 configuration, 3 external failure, 130 cancelled.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import signal
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from evalward.budget import Budget
from evalward.changes import ChangeSet
from evalward.context import RunContext, load_context
from evalward.cron import parse_cron
from evalward.errors import (
    EXIT_INTERRUPTED,
    ConfigError,
    GitHubError,
    MissingSecretError,
    ResourceError,
)
from evalward.gate import (
    Bypass,
    BypassRecord,
    BypassRefusal,
    GateDecision,
    GateResult,
    RegressionPolicy,
    audit_record,
    decide,
    judge_bypass,
)
from evalward.git import Git
from evalward.github import Annotation, CheckReport, GitHubClient, GitHubPort, PullInfo
from evalward.pipeline import (
    Evaluation,
    PlanShaper,
    Revisions,
    RunOptions,
    config_at,
    evaluate_change,
)
from evalward.plan import GateConfig, Plan, Side
from evalward.providers.config import CacheMode as ProviderCacheMode
from evalward.providers.config import ProvidersConfig, from_repo_config
from evalward.providers.registry import Providers, build_providers, repo_providers
from evalward.report import files
from evalward.report.escape import reveal_bidi
from evalward.report.markdown import (
    ReportContext,
    marker_for,
    render_comment,
    render_unloadable,
)
from evalward.report.workflow import command
from evalward.resources import ResourceSet, load_resources
from evalward.result_cache import CacheMode, ResultCache
from evalward.results import FixtureResult
from evalward.runtime.sandbox import AGENT_USER, NOT_COPIED, AgentUser, Sandbox, protect
from evalward.security import Redactor
from evalward.settings import Settings
from evalward.spool import TraceSpool
from evalward.trend import record_commit, trends
from evalward.trust import BaseFiles, check_output_dir, untrusted_cache

NOT_GATED_ACTIONS = ("closed",)
"""Pull request actions that do not gate. Any other (`edited`, `assigned`, …) gates the head as
`synchronize` does: a run that skipped would turn the head's check green by an edit of the
title, in a workflow that listens to it."""
SCHEDULE_WINDOW_MINUTES = 60
"""GitHub may start a scheduled workflow late; an Eval is due if its cron fired this long ago."""
SUMMARY_LIMIT = 1_000_000
"""GitHub's job summary limit is 1 MiB per step."""

PULL_REQUEST_TARGET_REFUSAL = (
    "GITHUB_EVENT_NAME=pull_request_target: evalward refuses to run here by default. "
    "pull_request_target runs with the base repository's secrets and a write token, and "
    "evalward runs the agents of the pull request's head — code anyone who opens a pull "
    "request controls — so a fork could read your provider keys or push to your repository. "
    "Use `on: pull_request` (secrets are not passed to workflows from forks, which is the "
    "point). If you have reviewed this risk (see docs/github.md), set the input "
    "`allow-untrusted-head: true`."
)

NOT_ROOT = (
    f"evalward is not running as root, so it cannot run that as the unprivileged user "
    f"`{AGENT_USER}`: the program could read evalward's environment (your secrets and the "
    "GitHub token) and write its outputs. The action's image always runs as root; run "
    "evalward as the action. Where the job already ran the pull request's code with the same "
    "rights (e.g. `evalward action` after installing its dependencies), set the input "
    "`agent-isolation: off` to run such programs as evalward's own user (see docs/github.md)."
)


def fork_dispatch_refusal(pull: PullInfo) -> str:
    where = f"the fork {pull.head_repo}" if pull.head_repo else "a repository that is gone"
    return (
        f"GITHUB_EVENT_NAME=workflow_dispatch: pull request #{pull.number} comes from {where}, "
        "and evalward refuses to gate it here by default. workflow_dispatch runs with this "
        "repository's secrets and token, and evalward runs the agents of the pull request's "
        "head — code whoever opened it controls — so it could read your provider keys or "
        "push to your repository, as on pull_request_target. Fork pull requests are gated by "
        "`on: pull_request` (secrets are not passed to forks). If you have reviewed this head "
        "(see docs/github.md), set the input `allow-untrusted-head: true`."
    )


def agent_sandbox(settings: Settings, euid: int, workspace: Path | None = None) -> Sandbox:
    """How programs from a checkout run in the action: as the agent user when evalward is
    root (the image always is), refused otherwise unless the workflow turned that off. The
    agents' working copies leave out evalward's output and cache directories."""
    names = settings.agent_env_names
    if settings.agent_isolation == "off":
        return Sandbox(None, agent_env=names)
    if euid != 0:
        return Sandbox(None, unavailable=NOT_ROOT, agent_env=names)
    ours = set(NOT_COPIED)
    for folder in (settings.output_dir, settings.cache_dir):
        path = Path(os.path.normpath(folder))
        if workspace is not None and path.is_absolute() and path.is_relative_to(workspace):
            path = path.relative_to(workspace)
        if not path.is_absolute() and path.parts and path.parts[0] != "..":
            ours.add(path.as_posix())
    return Sandbox(AgentUser.resolve(), not_copied=ours, agent_env=names)


@dataclass(frozen=True)
class Route:
    """What this event asks for: gate a PR, run Evals on the current ref, or nothing."""

    kind: str  # gate | run | skip
    pr: int | None = None
    evals: frozenset[str] | None = None
    why: str = ""


def main(env: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    """Build real clients from the environment and run the action."""
    env = dict(os.environ if env is None else env)
    out = out or sys.stdout
    settings = Settings.from_env(env)
    context = load_context(env)
    route = route_event(context, settings)
    if route.kind == "skip":
        skipped = Redactor.from_env(env)
        print(skipped(f"evalward: skipped — {route.why}"), file=out, flush=True)
        files.write_outputs(env.get("GITHUB_OUTPUT"), {"result": "skipped"}, skipped)
        return 0
    token = settings.github_token or env.get("GITHUB_TOKEN", "")
    github: GitHubPort | None = None
    if route.kind == "gate" or settings.check_run:
        if not token:
            raise ConfigError(
                "no GitHub token: set the action input `github-token` (it defaults to "
                "`${{ github.token }}`) or the GITHUB_TOKEN environment variable"
            )
        github = GitHubClient(context.api_url, token, context.repository)
    git = Git(context.workspace)
    base_sha = context.base_sha
    if not base_sha and route.kind == "gate" and github is not None and route.pr is not None:
        base_sha = github.pull_request(route.pr).base_sha
    with tempfile.TemporaryDirectory(prefix="evalward-base-files-") as folder:
        trusted = trusted_inputs(context, settings, git, base_sha, Path(folder))
        providers = build_providers(
            env,
            mock_script=str(trusted.mock_script) if trusted.mock_script else None,
            config=trusted.providers,
            cache_root=context.workspace,
        )
        # Every secret evalward knows: the environment's, and the keys the provider settings
        # name.
        redact = Redactor.from_env(env, providers.key_envs)
        sandbox = agent_sandbox(settings, os.geteuid(), context.workspace)
        if sandbox.user is not None:
            os.umask(0o022)  # nothing evalward writes is writable by the agent user
        runner = Runner(
            env, context, settings, git, github, providers, out, redact, sandbox, trusted.template
        )
        return asyncio.run(runner.run_and_close(route))


@dataclass(frozen=True)
class TrustedInputs:
    """What the action reads that decides the gate or speaks for it, from where a pull request
    cannot change it: provider settings (where keys are sent), the mock script (every reply)
    and the comment template (what the comment says)."""

    providers: ProvidersConfig
    mock_script: Path | None
    template: Path | None


def trusted_inputs(
    context: RunContext, settings: Settings, git: Git, base_sha: str | None, folder: Path
) -> TrustedInputs:
    """On a pull request (a base commit is known), the base commit's files, written to
    `folder`; otherwise the checkout's. A path outside the workspace is the workflow's own and
    is read where it is."""
    base = BaseFiles(git, base_sha, folder) if base_sha else None

    def read(value: str, setting: str) -> Path | None:
        path = _in_workspace(context, value)
        if path is None:
            return None
        inside = path.is_relative_to(context.workspace)
        if base is not None and inside:
            return base.file(path.relative_to(context.workspace).as_posix(), setting)
        if not path.is_file():
            raise ConfigError(
                f"action input `{setting}`: {value} is not a file in the repository; give a "
                "path relative to the repository root"
            )
        return path

    providers = (
        from_repo_config(config_at(git, base_sha))
        if base_sha
        else repo_providers(context.workspace)
    )
    return TrustedInputs(
        providers,
        read(settings.mock_script, "mock-script"),
        read(settings.comment_template, "comment-template"),
    )


def route_event(context: RunContext, settings: Settings) -> Route:
    event = context.event_name
    if event in ("pull_request", "pull_request_target"):
        if event == "pull_request_target" and not settings.allow_untrusted_head:
            raise ConfigError(PULL_REQUEST_TARGET_REFUSAL)
        if context.pr_number is None:
            raise ConfigError(f"GITHUB_EVENT_PATH: a {event} event without a pull_request")
        if context.action in NOT_GATED_ACTIONS:
            return Route("skip", why=f"the `{context.action}` action of {event} does not gate")
        return Route("gate", pr=context.pr_number)
    if event == "workflow_dispatch":
        pr = settings.pr
        if pr is None and context.dispatch_pr.strip():
            if not context.dispatch_pr.strip().isdigit():
                raise ConfigError(
                    f"workflow_dispatch input `pr`: expected a pull request number, "
                    f"got {context.dispatch_pr!r}"
                )
            pr = int(context.dispatch_pr)
        return Route("gate", pr=pr) if pr else Route("run", why="every Eval on the current ref")
    if event == "schedule":
        return _scheduled(context)
    if event == "push":
        default = context.default_branch or "main"
        if context.ref != f"refs/heads/{default}":
            return Route("skip", why=f"push to {context.ref or '?'}, not the default branch")
        return Route("run", why=f"push to {default}")
    raise ConfigError(
        f"GITHUB_EVENT_NAME={event or '(unset)'}: evalward runs on pull_request, "
        "workflow_dispatch, schedule and push events (pull_request_target only with "
        "`allow-untrusted-head: true`)"
    )


def _scheduled(context: RunContext, now: dt.datetime | None = None) -> Route:
    """The Evals whose own cron is the workflow's, else those whose cron fired in the window."""
    resources = load_resources(context.workspace)
    schedules = {
        name: parse_cron(e.resource.spec.schedule)  # validated when the resources loaded
        for name, e in resources.evals.items()
        if e.resource.spec.schedule
    }
    if not schedules:
        return Route("skip", why="no Eval has a `schedule`")
    trigger = " ".join(context.schedule.split())
    due = {name for name, cron in schedules.items() if trigger and cron.expression == trigger}
    if not due:
        moment = now or dt.datetime.now(dt.UTC)
        due = {
            name
            for name, cron in schedules.items()
            if cron.fired_within(moment, SCHEDULE_WINDOW_MINUTES)
        }
    if not due:
        return Route("skip", why="no scheduled Eval is due")
    return Route("run", evals=frozenset(due), why=f"scheduled: {', '.join(sorted(due))}")


@dataclass
class Progress:
    """What has run so far, so a cancelled run can still write what it has."""

    plan: Plan | None = None
    done: list[FixtureResult] = field(default_factory=list)
    cancelled: bool = False

    @property
    def planned(self) -> int:
        return len(self.plan.runs) if self.plan else 0


@dataclass
class Outcome:
    evaluation: Evaluation
    progress: Progress


class Runner:
    def __init__(
        self,
        env: Mapping[str, str],
        context: RunContext,
        settings: Settings,
        git: Git,
        github: GitHubPort | None,
        providers: Providers,
        out: TextIO,
        redact: Redactor,
        sandbox: Sandbox | None = None,
        template: Path | None = None,
    ) -> None:
        self.template = template
        self.env = env
        self.sandbox = sandbox
        self.context = context
        self.settings = settings
        self.git = git
        self.github = github
        self.providers = providers
        self.out = out
        self.redact = redact
        output_dir = _in_workspace(context, settings.output_dir)
        assert output_dir is not None
        self.output_dir = output_dir
        self.marker = marker_for(context.comment_key)

    def log(self, line: str) -> None:
        print(self.redact(line), file=self.out, flush=True)

    def output(self, values: dict[str, str]) -> None:
        files.write_outputs(self.env.get("GITHUB_OUTPUT"), values, self.redact)

    async def run_and_close(self, route: Route) -> int:
        try:
            check_output_dir(self.context.workspace, self.output_dir)
            self.distrust_response_cache()
            if self.settings.shard and not self.settings.merge:
                return await self.shard_part(route)
            if route.kind == "gate":
                assert route.pr is not None
                return await self.gate(route.pr)
            return await self.run_all(route)
        finally:
            await self.providers.aclose()
            if self.sandbox is not None:
                self.sandbox.close()

    # --- running, with cancellation ---------------------------------------------------------

    def distrust_response_cache(self) -> None:
        """A response cache the checkout could fill is not read: its replies would decide the
        runs (the rule of the result cache, `trust.untrusted_cache`)."""
        cache = self.providers.cache
        if cache is None or not cache.enabled:
            return
        distrust = untrusted_cache(self.git, self.context.workspace, cache.directory)
        if distrust:
            self.log(command("warning", f"response cache not used: {distrust}"))
            cache.mode = ProviderCacheMode.off

    def run_options(self) -> RunOptions:
        settings = self.settings
        cache_dir = _in_workspace(self.context, settings.cache_dir)
        cache = None
        if settings.cache != "off" and cache_dir is not None:
            distrust = untrusted_cache(self.git, self.context.workspace, cache_dir)
            if distrust:
                self.log(command("warning", f"result cache not used: {distrust}"))
            else:
                cache = ResultCache(cache_dir, CacheMode(settings.cache))
        if self.sandbox is not None and self.sandbox.user is not None:
            written = [self.output_dir, *([cache_dir] if cache and cache_dir else [])]
            protect(self.context.workspace, written, self.env)
            self.sandbox.close_to_others(self.context.workspace)
        elif self.sandbox is not None and (persisted := self.git.credential_settings()):
            self.log(
                command(
                    "warning",
                    f"the checkout keeps a credential in its git configuration ({persisted[0]}), "
                    "which every process in this job can read, the pull request's programs "
                    "too (`agent-isolation: off`). Check out with `persist-credentials: false`.",
                )
            )
        return RunOptions(
            parallel=settings.parallel,
            run_all=settings.run_all,
            gate_config=GateConfig(settings.gate_config),
            cache=cache,
            budget=Budget(settings.max_model_calls, settings.max_cost_usd),
            sandbox=self.sandbox,
        )

    async def evaluate(
        self,
        revisions: Revisions,
        select: Callable[[str], bool] | None = None,
        shape: PlanShaper | None = None,
    ) -> Outcome:
        """Run the pipeline; SIGTERM/SIGINT stop it and return the runs finished so far.

        In merge mode nothing runs: the shards' results are merged into the Evaluation."""
        if self.settings.merge:
            return self.merged(revisions)
        progress = Progress()
        traces = TraceSpool()

        def finished(result: FixtureResult) -> None:
            progress.done.append(result)
            self.log(
                f"{result.side:4} {result.eval} / {result.fixture} #{result.rep}: "
                f"{result.status.value} ({result.score:.2f})"
            )

        def planned(plan: Plan) -> None:
            progress.plan = plan
            if plan.reused:
                self.log(
                    f"evalward: {plan.reused} of {len(plan.runs)} runs reused from the result "
                    f"cache ({self.settings.cache_dir}), not run again; the input `cache: "
                    "refresh` runs everything and replaces them"
                )

        task = asyncio.ensure_future(
            evaluate_change(
                self.git,
                revisions,
                self.providers,
                self.env,
                self.run_options(),
                on_result=finished,
                select=select,
                on_plan=planned,
                shape=shape,
                traces=traces,
            )
        )
        loop = asyncio.get_running_loop()

        def stop() -> None:
            if not progress.cancelled:
                progress.cancelled = True
                task.cancel()

        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop)
        try:
            evaluation = await task
        except asyncio.CancelledError:
            if not progress.cancelled:
                raise
            plan = progress.plan or Plan()
            evaluation = Evaluation(ChangeSet(), plan, list(progress.done), [], [], traces=traces)
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
        return Outcome(evaluation, progress)

    # --- shards: one part of the plan per job, merged by a later job ----------------------

    async def shard_part(self, route: Route) -> int:
        """Run part i of n and write its shard-i-of-n.json; comment and gate are the merge's."""
        from evalward.shard import ShardSpec, partial_document, split

        spec = ShardSpec.parse(self.settings.shard, "action input `shard`")
        select: Callable[[str], bool] | None = None
        if route.kind == "gate" and self.github is not None and route.pr is not None:
            pull = self.pull_request(route.pr)
            revisions = Revisions(pull.base_sha, pull.head_sha or self.context.head_sha or "HEAD")
        else:
            revisions = Revisions(base=None)
            chosen = route.evals
            select = (lambda name: name in chosen) if chosen is not None else None
        whole: dict[str, Any] = {}

        def shard(plan: Plan, resources: Mapping[Side, ResourceSet]) -> Plan:
            whole["plan"], whole["resources"] = plan, resources
            return split(plan, resources, self.providers.prices, spec)

        try:
            outcome = await self.evaluate(revisions, select, shape=shard)
        except MissingSecretError as exc:
            return self.missing_secrets(exc, None)
        if outcome.progress.cancelled:
            self.log(f"evalward: shard {spec} cancelled; no results written")
            return EXIT_INTERRUPTED
        source = {
            "head": self.git.resolve(revisions.head or "HEAD"),
            "base": self.git.resolve(revisions.base) if revisions.base else "",
        }
        document = partial_document(
            outcome.evaluation, spec, whole["plan"], whole["resources"], source
        )
        path = self.output_dir / spec.file_name
        files.write_text(path, json.dumps(document, indent=2) + "\n", self.redact)
        self.log(f"evalward: shard {spec}: {len(outcome.evaluation.fixtures)} runs -> {path}")
        self.output({"results-json": str(path)})
        return 0

    def merged(self, revisions: Revisions) -> Outcome:
        """The shards' results as one Evaluation: parts of this run's commits only, and none
        that the checkout brings (a committed file matching the glob)."""
        from evalward.shard import merge, read_parts

        pattern = self.settings.merge
        given = Path(pattern)
        anchor = Path(given.anchor) if given.is_absolute() else self.context.workspace
        paths = sorted(anchor.glob(str(given.relative_to(given.anchor))))
        if not paths:
            raise ConfigError(
                f"action input `merge`: no file matches {pattern!r} in the workspace; download "
                "every shard's shard-i-of-n.json there first (see examples/workflows/sharded.yml)"
            )
        parts = read_parts(paths)
        head = self.git.resolve(revisions.head or "HEAD")
        for path, (name, document) in zip(paths, parts, strict=True):
            if path.is_relative_to(self.context.workspace) and self.git.tracked(
                path.relative_to(self.context.workspace).as_posix()
            ):
                raise ConfigError(
                    f"action input `merge`: {name} is committed in the repository; shard "
                    "results come from this run's shard jobs, not from the checkout"
                )
            if str(document.get("source", {}).get("head", "")) != head:
                raise ConfigError(
                    f"action input `merge`: {name} holds results for commit "
                    f"{str(document.get('source', {}).get('head', '?'))[:12]}, and this run "
                    f"gates {head[:12]}; merge the parts of this run's shard jobs"
                )
        evaluation = merge(parts)
        self.log(f"evalward: merged {len(paths)} shards, {len(evaluation.fixtures)} runs")
        return Outcome(evaluation, Progress(evaluation.plan, list(evaluation.fixtures)))

    # --- the pull request gate ---------------------------------------------------------------

    def pull_request(self, number: int) -> PullInfo:
        """The pull request to gate; on workflow_dispatch only one whose head is this
        repository's, unless untrusted heads are allowed (pull_request_target's rule)."""
        assert self.github is not None
        pull = self.github.pull_request(number)
        dispatched = self.context.event_name == "workflow_dispatch"
        if dispatched and not pull.head_in_repository and not self.settings.allow_untrusted_head:
            raise ConfigError(fork_dispatch_refusal(pull))
        return pull

    async def gate(self, number: int) -> int:
        assert self.github is not None
        github = self.github
        pull = self.pull_request(number)
        head_sha = pull.head_sha or self.context.head_sha or "HEAD"
        self.log(
            command("group", f"evalward: pull request #{number} ({pull.base_sha}..{head_sha})")
        )
        try:
            outcome = await self.evaluate(Revisions(base=pull.base_sha, head=head_sha))
        except MissingSecretError as exc:
            self.log(command("endgroup"))
            return self.missing_secrets(exc, pull)
        except ResourceError as exc:
            self.log(command("endgroup"))
            self.comment_unloadable(number, head_sha, exc)
            raise
        self.log(command("endgroup"))
        evaluation = outcome.evaluation
        for note in evaluation.notes:
            self.log(command("notice", note))

        # GitHub failing from here on must not cost the decision, the files or the summary.
        try:
            existing = github.find_comment(number, self.marker)
        except GitHubError as exc:
            self.log(
                command(
                    "warning",
                    f"{exc} No earlier comment is taken as evalward's: no bypass record is "
                    "read from one, and the comment is posted anew.",
                )
            )
            existing = None
        previous = BypassRecord.parse(existing.body) if existing else None
        try:
            bypass, refusal, record = self.bypass(pull, head_sha, evaluation, previous)
        except GitHubError as exc:
            self.log(command("warning", f"{exc} The bypass label could not be checked: no bypass."))
            bypass, refusal, record = None, None, None
        if outcome.progress.cancelled:
            decision = self.cancelled_decision(outcome.progress)
        else:
            decision = decide(
                evaluation.comparisons,
                bypass,
                refusal,
                regressions=RegressionPolicy(self.settings.fail_on_regression),
                skipped_runs=len(evaluation.skipped),
                allow_incomplete=self.settings.allow_incomplete,
                not_run=evaluation.plan.not_run,
            )
        report = self.report_context(evaluation, decision, head_sha, outcome.progress)
        report.record = record
        body = self.write_everything(evaluation, decision, report, outcome.progress, pull)
        self.audit(decision, number, head_sha)
        self.annotate(evaluation)

        if self.should_comment(decision, existing is not None):
            try:
                url = github.upsert_comment(number, self.marker, body)
                self.log(f"comment: {url}")
                self.output({"comment-url": url})
            except GitHubError as exc:
                hint = (
                    " (a pull request from a fork gets a read-only token)" if pull.from_fork else ""
                )
                self.log(command("warning", f"{exc}{hint}"))
        self.check(decision, evaluation, head_sha)
        self.conclude(decision)
        return decision.exit_code

    def comment_unloadable(self, number: int, head_sha: str, exc: ResourceError) -> None:
        """Say in the pull request why nothing ran: its resources do not load. The error
        itself still ends the run (exit 2)."""
        problems = [problem.render() for problem in exc.problems]
        body = render_unloadable(self.marker, problems, head_sha, self.context.run_url, exc.source)
        files.append_summary(self.env.get("GITHUB_STEP_SUMMARY"), body, self.redact)
        self.output({"result": GateResult.failed.value})
        if self.github is None or self.settings.comment == "never":
            return
        try:
            url = self.github.upsert_comment(number, self.marker, self.redact(body))
            self.log(f"comment: {url}")
        except GitHubError as exc2:
            self.log(command("warning", str(exc2)))

    def bypass(
        self,
        pull: PullInfo,
        head_sha: str,
        evaluation: Evaluation,
        previous: BypassRecord | None,
    ) -> tuple[Bypass | None, BypassRefusal | None, BypassRecord | None]:
        """Who applied the label, may they, and does it cover this head? (docs/github.md)"""
        label = self.settings.bypass_label
        if label not in pull.labels or self.github is None:
            return None, None, None
        applied = self.github.latest_labeled(pull.number, label)
        labeled_at = applied.created_at if applied else None
        covered: str | None = None
        context = self.context
        if (
            context.action == "labeled"
            and context.event_label == label
            and context.pr_number == pull.number
            and context.head_sha
        ):
            covered = context.head_sha
        elif previous is not None and previous.label == label and previous.labeled_at == labeled_at:
            covered = previous.sha
        record = BypassRecord(label, labeled_at, covered) if covered else None
        if not evaluation.plan.not_run and all(c.head.passed for c in evaluation.comparisons):
            return None, None, record
        actor = applied.actor if applied else None
        permission = self.github.permission(actor) if actor else None
        verdict = judge_bypass(
            label=label,
            scope=self.settings.bypass_scope,
            head_sha=head_sha,
            applied_by=actor,
            applied_at=labeled_at,
            permission=permission,
            covered_sha=covered,
        )
        if isinstance(verdict, Bypass):
            return verdict, None, record
        return None, verdict, record

    def missing_secrets(self, exc: MissingSecretError, pull: PullInfo | None) -> int:
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
        if self.settings.on_missing_secrets == "fail":
            raise MissingSecretError(
                message + " To skip the gate instead, set the input `on-missing-secrets: skip`."
            )
        self.log(command("warning", f"evalward skipped: {message}"))
        self.output({"result": GateResult.skipped.value})
        return 0

    # --- every Eval on the current ref (dispatch, schedule, push) ---------------------------

    async def run_all(self, route: Route) -> int:
        self.log(command("group", f"evalward: {route.why}"))
        chosen = route.evals
        select = (lambda name: name in chosen) if chosen is not None else None
        try:
            outcome = await self.evaluate(Revisions(base=None), select)
        except MissingSecretError as exc:
            self.log(command("endgroup"))
            return self.missing_secrets(exc, None)
        self.log(command("endgroup"))
        evaluation = outcome.evaluation
        if outcome.progress.cancelled:
            decision = self.cancelled_decision(outcome.progress)
        else:
            decision = decide(
                evaluation.comparisons,
                None,
                skipped_runs=len(evaluation.skipped),
                allow_incomplete=self.settings.allow_incomplete,
                not_run=evaluation.plan.not_run,
            )
        head_sha = self.context.sha
        report = self.report_context(evaluation, decision, head_sha, outcome.progress)
        self.write_everything(evaluation, decision, report, outcome.progress, None)
        if self.context.event_name == "push" and not outcome.progress.cancelled:
            self.record_scores(evaluation)
        self.annotate(evaluation)
        self.check(decision, evaluation, head_sha)
        self.conclude(decision)
        return decision.exit_code

    # --- shared reporting ---------------------------------------------------------------------

    def conclude(self, decision: GateDecision) -> None:
        if decision.result is GateResult.unavailable:
            self.log(command("error", decision.reason, title="evalward: provider unavailable"))
        self.log(f"evalward: {decision.result.value} — {decision.reason}")

    @staticmethod
    def cancelled_decision(progress: Progress) -> GateDecision:
        return GateDecision(
            GateResult.incomplete,
            reason=f"cancelled after {len(progress.done)} of {progress.planned} runs",
            interrupted=True,
        )

    def report_context(
        self, evaluation: Evaluation, decision: GateDecision, head_sha: str, progress: Progress
    ) -> ReportContext:
        return ReportContext(
            comparisons=evaluation.comparisons,
            decision=decision,
            changes=evaluation.changes,
            skipped_base=evaluation.plan.skipped_base,
            not_run=evaluation.plan.not_run,
            dropped=evaluation.plan.dropped,
            repository=self.context.repository,
            head_sha=head_sha,
            run_url=self.context.run_url,
            marker=self.marker,
            notes=evaluation.notes,
            private=evaluation.private,
            cancelled=decision.reason if progress.cancelled else "",
            gate_config=self.settings.gate_config,
            cache_hits=evaluation.cache_hits,
            skipped_runs=len(evaluation.skipped),
        )

    def write_everything(
        self,
        evaluation: Evaluation,
        decision: GateDecision,
        report: ReportContext,
        progress: Progress,
        pull: PullInfo | None,
    ) -> str:
        """Results first: whatever fails later, what was computed is on disk."""
        run = files.RunInfo(
            event=self.context.event_name,
            repository=self.context.repository,
            pull_request=pull.number if pull else None,
            head_sha=report.head_sha,
            base_sha=pull.base_sha if pull else "",
            run_url=self.context.run_url,
            runs_planned=progress.planned,
            runs_done=len(progress.done),
            cancelled=progress.cancelled,
        )
        results_path, body = files.write_reports(
            self.output_dir,
            evaluation,
            decision,
            lambda: render_comment(report, self.template),
            self.redact,
            run,
            trends(
                [c.name for c in evaluation.comparisons],
                cache_dir=self.trusted_cache_dir(),
            ),
        )
        summary = render_comment(report, self.template, limit=SUMMARY_LIMIT)
        files.append_summary(self.env.get("GITHUB_STEP_SUMMARY"), summary, self.redact)
        head_scores = [c.head.score for c in evaluation.comparisons]
        self.output(
            {
                "result": decision.result.value,
                "score": f"{min(head_scores):.2f}" if head_scores else "",
                "results-json": str(results_path),
            }
        )
        return body

    def trusted_cache_dir(self) -> Path | None:
        """The result cache's directory when this run may read it (as `run_options` decides)."""
        cache_dir = _in_workspace(self.context, self.settings.cache_dir)
        if self.settings.cache == "off" or cache_dir is None:
            return None
        if untrusted_cache(self.git, self.context.workspace, cache_dir):
            return None
        return cache_dir

    def record_scores(self, evaluation: Evaluation) -> None:
        """On the default branch, each Eval's score at this commit joins the cache's score log:
        the trend that pull requests restoring this cache show in report.html."""
        cache_dir = self.trusted_cache_dir()
        if cache_dir is None or self.settings.cache != CacheMode.read_write.value:
            return
        try:
            record_commit(
                cache_dir,
                evaluation.evals,
                commit=self.context.sha,
                branch=self.context.default_branch or "main",
            )
        except OSError as exc:
            self.log(command("warning", f"the Evals' scores were not added to the cache: {exc}"))

    def audit(self, decision: GateDecision, number: int, head_sha: str) -> None:
        if decision.bypass is None and decision.refusal is None:
            return
        record = audit_record(
            decision,
            repository=self.context.repository,
            pr_number=number,
            head_sha=head_sha,
            run_url=self.context.run_url,
        )
        line = json.dumps(record)
        self.log(line)
        if decision.bypass is not None:
            self.log(
                command(
                    "warning",
                    f"evalward gate bypassed by {decision.bypass.applied_by} with the "
                    f"{decision.bypass.label!r} label; failing: "
                    f"{', '.join(decision.failing_evals)}",
                )
            )
        elif decision.refusal is not None:
            self.log(
                command(
                    "warning",
                    f"evalward bypass refused: {decision.refusal.reason}",
                )
            )
        files.append_audit(self.output_dir, record, self.redact)
        self.output({"audit": line})

    def annotate(self, evaluation: Evaluation) -> None:
        for result in self.failing_head(evaluation):
            held_out = (result.eval, result.fixture) in evaluation.private
            message = "failed (held-out fixture)" if held_out else result.message or "failed"
            self.log(
                command(
                    "error",
                    message,
                    file=result.file or None,
                    line=result.line or None,
                    title=f"evalward: {result.eval} / {result.fixture}",
                )
            )

    @staticmethod
    def failing_head(evaluation: Evaluation) -> list[FixtureResult]:
        return [f for f in evaluation.fixtures if f.side == "head" and not f.passed]

    def should_comment(self, decision: GateDecision, exists: bool) -> bool:
        mode = self.settings.comment
        if mode == "never":
            return False
        if mode == "always" or exists:
            return True
        return decision.result in (
            GateResult.failed,
            GateResult.bypassed,
            GateResult.incomplete,
            GateResult.unavailable,
        )

    def check(self, decision: GateDecision, evaluation: Evaluation, head_sha: str) -> None:
        if not self.settings.check_run or self.github is None or not head_sha:
            return
        conclusion = {
            GateResult.passed: "success",
            GateResult.failed: "failure",
            GateResult.bypassed: "neutral",
            GateResult.skipped: "skipped",
            GateResult.incomplete: "cancelled",
            GateResult.unavailable: "failure",
        }[decision.result]
        annotations = []
        for result in self.failing_head(evaluation):
            if not result.file:
                continue
            held_out = (result.eval, result.fixture) in evaluation.private
            message = "held-out fixture" if held_out else result.message or "failed"
            annotations.append(
                Annotation(
                    path=result.file,
                    line=max(result.line, 1),
                    level="failure",
                    title=f"{result.eval} / {result.fixture}: {result.status.value}",
                    message=self.redact(reveal_bidi(message)),
                )
            )
        report = CheckReport(
            name=f"evalward ({self.context.comment_key})",
            head_sha=head_sha,
            conclusion=conclusion,
            title=f"evalward: {decision.result.value}",
            summary=self.redact(reveal_bidi(decision.reason or decision.result.value)),
            details_url=self.context.run_url,
            annotations=annotations,
        )
        try:
            url = self.github.report_check(report)
            self.log(f"check run: {url}")
        except GitHubError as exc:
            self.log(command("warning", str(exc)))


def _in_workspace(context: RunContext, path: str) -> Path | None:
    if not path:
        return None
    candidate = Path(path)
    return candidate if candidate.is_absolute() else context.workspace / candidate
