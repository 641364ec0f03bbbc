"""The GitHub Action: environment in, comment and exit code out.

`main()` builds the real clients (git, GitHub, providers) from the environment; `action()`
takes each of them as a parameter and does the work, so tests drive it with local servers.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from evalward.context import RunContext, load_context
from evalward.errors import ConfigError, GitHubError
from evalward.gate import GateDecision, audit_record, decide
from evalward.git import Git
from evalward.github import GitHubClient, GitHubPort
from evalward.pipeline import Evaluation, Revisions, evaluate_change
from evalward.providers.registry import Providers, build_providers
from evalward.report import files
from evalward.report.markdown import ReportContext, marker_for, render_comment
from evalward.security import Redactor
from evalward.settings import Settings

SUPPORTED_EVENTS = ("pull_request",)


def main(env: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    """Build real clients from the environment and run the action."""
    env = dict(os.environ if env is None else env)
    out = out or sys.stdout
    settings = Settings.from_env(env)
    context = load_context(env)
    if context.event_name not in SUPPORTED_EVENTS:
        raise ConfigError(
            f"GITHUB_EVENT_NAME={context.event_name or '(unset)'}: evalward gates "
            f"{', '.join(SUPPORTED_EVENTS)} events; run it from a workflow triggered "
            "`on: pull_request`"
        )
    token = settings.github_token or env.get("GITHUB_TOKEN", "")
    if not token:
        raise ConfigError(
            "no GitHub token: set the action input `github-token` (it defaults to "
            "`${{ github.token }}`) or the GITHUB_TOKEN environment variable"
        )
    github = GitHubClient(context.api_url, token, context.repository)
    mock_script = _in_workspace(context, settings.mock_script)
    providers = build_providers(env, mock_script=str(mock_script) if mock_script else None)
    return asyncio.run(
        _run_and_close(env, context, settings, Git(context.workspace), github, providers, out)
    )


async def _run_and_close(
    env: Mapping[str, str],
    context: RunContext,
    settings: Settings,
    git: Git,
    github: GitHubPort,
    providers: Providers,
    out: TextIO,
) -> int:
    try:
        return await action(env, context, settings, git, github, providers, out)
    finally:
        await providers.aclose()


async def action(
    env: Mapping[str, str],
    context: RunContext,
    settings: Settings,
    git: Git,
    github: GitHubPort,
    providers: Providers,
    out: TextIO,
) -> int:
    """Gate one pull request and return the exit code."""
    redact = Redactor.from_env(env)

    def log(line: str) -> None:
        print(redact(line), file=out, flush=True)

    assert context.pr_number is not None
    pull = github.pull_request(context.pr_number)
    head_sha = pull.head_sha or context.head_sha or "HEAD"
    base_sha = pull.base_sha or context.base_sha
    log(f"::group::evalward: pull request #{pull.number} ({base_sha} .. {head_sha})")
    evaluation = await evaluate_change(
        git,
        Revisions(base=base_sha, head=head_sha),
        providers,
        env,
        parallel=settings.parallel,
        on_result=lambda r: log(
            f"{r.side:4} {r.eval} / {r.fixture} #{r.rep}: {r.status.value} ({r.score:.2f})"
        ),
    )
    log("::endgroup::")
    for note in evaluation.notes:
        log(f"::notice::{note}")

    bypass = None
    would_fail = any(not c.head.passed for c in evaluation.comparisons)
    if would_fail and settings.bypass_label in pull.labels:
        bypass = github.label_applier(pull.number, settings.bypass_label)
    decision = decide(evaluation.comparisons, bypass)

    output_dir = _in_workspace(context, settings.output_dir)
    assert output_dir is not None
    report = ReportContext(
        comparisons=evaluation.comparisons,
        decision=decision,
        changes=evaluation.changes,
        skipped_base=evaluation.plan.skipped_base,
        repository=context.repository,
        head_sha=head_sha,
        run_url=context.run_url,
        marker=marker_for(context.comment_key),
    )
    body = redact(render_comment(report))
    _write_everything(env, output_dir, evaluation, decision, body, redact)

    if decision.bypass is not None:
        record = audit_record(
            decision,
            repository=context.repository,
            pr_number=pull.number,
            head_sha=head_sha,
            run_url=context.run_url,
        )
        log(json.dumps(record))
        log(
            f"::warning::evalward gate bypassed by {decision.bypass.applied_by or 'unknown'} "
            f"with the {decision.bypass.label!r} label; failing: "
            f"{', '.join(decision.failing_evals)}"
        )
        files.append_audit(output_dir, record, redact)

    try:
        url = github.upsert_comment(pull.number, report.marker, body)
        log(f"comment: {url}")
        files.write_outputs(env.get("GITHUB_OUTPUT"), {"comment-url": url}, redact)
    except GitHubError as exc:
        log(f"::error::{exc}")
    log(f"evalward: {decision.result.value} — {decision.reason}")
    return decision.exit_code


def _write_everything(
    env: Mapping[str, str],
    output_dir: Path,
    evaluation: Evaluation,
    decision: GateDecision,
    body: str,
    redact: Redactor,
) -> None:
    """Results first: whatever fails later, what was computed is on disk."""
    results_path = files.write_results(output_dir, evaluation, decision, redact)
    files.write_text(output_dir / "comment.md", body, redact)
    files.append_summary(env.get("GITHUB_STEP_SUMMARY"), body, redact)
    head_scores = [c.head.score for c in evaluation.comparisons]
    files.write_outputs(
        env.get("GITHUB_OUTPUT"),
        {
            "result": decision.result.value,
            "score": f"{min(head_scores):.2f}" if head_scores else "",
            "results-json": str(results_path),
        },
        redact,
    )


def _in_workspace(context: RunContext, path: str) -> Path | None:
    if not path:
        return None
    candidate = Path(path)
    return candidate if candidate.is_absolute() else context.workspace / candidate
