"""What a run of the action leaves behind: the files, the job summary, the outputs, the
default branch's score log, and the last line of the log.

Results are written first, before anything that talks to GitHub: whatever fails later, what
was computed is on disk. A file the runner cannot take (its disk full) costs that file, never
the comment, the check or the decision: the job then exits 3 where it would exit 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from evalward import __version__
from evalward.action.attributed import FORK, UNRETIRED
from evalward.action.context import WorkflowContext
from evalward.action.github import PullInfo
from evalward.action.job import Console, Job, Site
from evalward.action.route import Route
from evalward.action.workflow import append_summary, command
from evalward.flows.session import RunVerdict
from evalward.past.flaky import record_runs
from evalward.past.trend import record_commit, trends
from evalward.record.evaluation import Evaluation
from evalward.report.files import Shown, write_reports
from evalward.report.markdown import (
    MAX_COMMENT_CHARS,
    ReportContext,
    RunReason,
    WorkflowNotes,
    render_comment,
    report_context,
)
from evalward.text import utf8
from evalward.verdict.gate import GateResult

SUMMARY_LIMIT = 1_000_000
"""The job summary's size in bytes of UTF-8: GitHub refuses a step's summary over 1 MiB
(1,048,576 bytes) and then shows none; the rest is room for the line break and redaction."""


def gate_report(site: Site, verdict: RunVerdict, pull: PullInfo, head_sha: str) -> ReportContext:
    """The comment's context for a pull request's gate: its base and head, and the record
    of the bypass label (`_report`)."""
    found = verdict.evaluation.attribution
    on_the_lines = FORK if pull.from_fork and found is not None else ""
    notes = WorkflowNotes(
        gate_config=site.settings.gate_config, record=verdict.label, on_the_lines=on_the_lines
    )
    return _report(site, verdict, notes, pull.number, head_sha, pull.base_sha)


def group_report(site: Site, verdict: RunVerdict, pr: int | None, base_sha: str) -> ReportContext:
    """The job summary's context for a merge queue's group: its commit against its base
    branch's tip `base_sha` (`pull_request.group_base`), and the pull request it ends with
    (`_report`)."""
    notes = WorkflowNotes(gate_config=site.settings.gate_config)
    return _report(site, verdict, notes, pr, site.context.head_sha or "", base_sha)


def branch_report(site: Site, verdict: RunVerdict, route: Route) -> ReportContext:
    """The comment's context for a run of Evals without a base (`_report`): what ran, and
    why."""
    notes = WorkflowNotes(
        gate_config=site.settings.gate_config, ran=run_reason(site.context, route)
    )
    return _report(site, verdict, notes, None, site.context.sha, "")


def _report(
    site: Site,
    verdict: RunVerdict,
    notes: WorkflowNotes,
    pull_request: int | None,
    head_sha: str,
    base_sha: str,
) -> ReportContext:
    """The comment's context for this job (`report_context`, shared with the command line),
    with the run's record of where it happened (results.json's `run`)."""
    run = verdict.outcome.run_info(
        event=site.context.event_name,
        repository=site.context.repository,
        pull_request=pull_request,
        head_sha=head_sha,
        base_sha=base_sha,
        run_url=site.context.run_url,
    )
    evaluation, decision = verdict.evaluation, verdict.decision
    return report_context(evaluation, decision, marker=site.marker, run=run, workflow=notes)


def run_reason(context: WorkflowContext, route: Route) -> RunReason:
    """What a run without a base ran, and why: the event, its cron, the Evals it chose."""
    event = context.event_name
    evals = tuple(sorted(route.evals)) if route.evals is not None else ()
    if event == "schedule":
        return RunReason("Scheduled run", route.scope, cron=route.cron, evals=evals)
    if event == "push":
        branch = context.default_branch or "main"
        return RunReason(f"Run on push to {branch}", route.scope or "every Eval", evals=evals)
    if event == "workflow_dispatch":
        return RunReason("Manual run", route.scope, evals=evals)
    return RunReason(f"Run on {event}", route.scope or route.why, evals=evals)


def write_everything(job: Job, verdict: RunVerdict, report: ReportContext) -> str:
    """Every file, the job summary and the outputs, and what the run spent beside the
    estimate; returns the comment as written (rendered from memory: a file the runner cannot
    take costs that file, `Console.lose`, never the comment or the decision), with room left
    in GitHub's limit for the review's `UNRETIRED` line."""
    outcome, decision = verdict.outcome, verdict.decision
    evaluation = outcome.evaluation
    lost: list[Path] = []

    def lose(path: Path, exc: OSError) -> None:
        lost.append(path)
        job.console.lose(str(path), exc)

    results_path, body = write_reports(
        job.site.output_dir,
        evaluation,
        decision,
        lambda: render_comment(
            report,
            job.trusted.template,
            MAX_COMMENT_CHARS - len(UNRETIRED) - 1,
            named=job.trusted.template_named,
        ),
        job.console.redact,
        Shown(
            report.run,
            trends([c.name for c in evaluation.comparisons], cache_dir=job.trusted.cache.directory),
            report.summary,
        ),
        lose=lose,
    )
    spending = outcome.spending()
    if spending is not None:
        job.console.log(f"evalward: {spending}")
    summary = render_comment(
        report,
        job.trusted.template,
        SUMMARY_LIMIT,
        measure=utf8.size,
        named=job.trusted.template_named,
    )
    add_summary(job.console, job.site.env, summary)
    head_scores = [c.head.score for c in evaluation.comparisons if not c.head.advisory]
    outputs = {
        "result": decision.result.value,
        "score": f"{min(head_scores):.2f}" if head_scores else "",
    }
    if results_path not in lost:
        outputs["results-json"] = in_workspace(job.site.context, results_path)
    job.console.output(outputs)
    return body


def add_summary(console: Console, env: Mapping[str, str], markdown: str) -> None:
    """Append to the job summary (GITHUB_STEP_SUMMARY); one the runner cannot take is lost
    (`Console.lose`), never the decision."""
    path = env.get("GITHUB_STEP_SUMMARY")
    try:
        append_summary(path, markdown, console.redact)
    except OSError as exc:
        console.lose(f"the job summary (GITHUB_STEP_SUMMARY: {path})", exc)


def in_workspace(context: WorkflowContext, path: Path) -> str:
    """A path as later steps can use it: the action runs in a container, where the workspace
    is mounted elsewhere than on the runner, so a path inside it is given relative to it."""
    workspace = context.workspace
    return path.relative_to(workspace).as_posix() if path.is_relative_to(workspace) else str(path)


def record_scores(job: Job, evaluation: Evaluation) -> None:
    """On the default branch (a push, a schedule), each Eval's score at this commit joins the
    cache's score log (the trend that pull requests restoring this cache show in report.html)
    and each fixture's outcomes its records (flaky on main), wherever the run writes the
    cache: `read-write`, or `refresh` (a schedule's `read-write` is one)."""
    cache_dir = job.trusted.cache.directory
    if cache_dir is None or not job.trusted.cache.mode.writes:
        return
    try:
        record_commit(
            cache_dir,
            evaluation.evals,
            commit=job.site.context.sha,
            branch=job.site.context.default_branch or "main",
        )
        agents = {
            r.eval: evaluation.agents[r.agent].fingerprint
            for r in evaluation.evals
            if r.side == "head" and r.agent in evaluation.agents
        }
        record_runs(
            cache_dir,
            evaluation.evals,
            commit=job.site.context.sha,
            agents=agents,
            version=__version__,
        )
    except OSError as exc:
        job.console.log(command("warning", f"the Evals' scores were not added to the cache: {exc}"))


def conclude(console: Console, verdict: RunVerdict) -> int:
    """The log's last line, the decision and why; then the exit code
    (`RunVerdict.exit_code`: the error that stopped the run is raised again, its files
    written, and reported and exits as ever; 3 in place of 0 where something was not
    written, `Console.exit_code`)."""
    decision = verdict.decision
    if decision.result is GateResult.unavailable:
        console.log(command("error", decision.reason, title="evalward: provider unavailable"))
    console.log(f"evalward: {decision.result.value} — {decision.reason}")
    late = verdict.signalled_late()
    if late:
        console.log(command("error", late))
    return console.exit_code(verdict.exit_code())
