"""Failing fixtures where a reviewer sees them: `::error file=…,line=…::` annotations in the
log, and a check run (the `check-run` input) with one annotation per failing fixture.

A fixture a head run of which did not pass is shown by the run the comment shows it by: one
annotation a fixture however many of its reps failed, and none for one the gate passes
though a rep of it failed (noise, by its sequential test; unless it drove a pooled test that
blocks) or in which nothing gates. An error is a fixture that fails by its Eval's rule (or
drove a pooled test that blocks): the comment's failing fixtures; one some of whose runs
failed though it is not failing (its test did not settle, the pull request adds it, a
provider was down) is a warning. A held-out fixture (`visibility: private`) is named but its
message is not shown.
"""

from __future__ import annotations

from evalward.action.context import WorkflowContext
from evalward.action.github import SUMMARY_BYTES, Annotation, CheckReport
from evalward.action.job import Console, Job
from evalward.action.workflow import command
from evalward.errors import GitHubError, printable
from evalward.flows.session import RunVerdict
from evalward.report.markdown import ReportContext
from evalward.report.story import counts_phrases, figures_text, head_fixtures, shown_run
from evalward.rundata.results import FixtureResult
from evalward.text.escaping import inline, reveal_controls
from evalward.verdict.gate import GateDecision, GateResult

CONCLUSIONS = {
    GateResult.passed: "success",
    GateResult.failed: "failure",
    GateResult.bypassed: "neutral",
    GateResult.skipped: "skipped",
    GateResult.incomplete: "cancelled",
    GateResult.unavailable: "failure",
    GateResult.inconclusive: "failure",
}
"""The check run's conclusion for each gate result."""
SUMMARY_CHARS = SUMMARY_BYTES
"""A paragraph of the summary is cut to as many characters as it is escaped (no more could be
shown); the client cuts the whole summary to GitHub's limit in bytes."""


def annotate(console: Console, report: ReportContext) -> None:
    """One `::error::` workflow command per failing fixture, one `::warning::` per other
    fixture a run of which failed."""
    for result, fails in failing_fixtures(report):
        held_out = (result.eval, result.fixture) in report.private
        message = "failed (held-out fixture)" if held_out else result.message or "failed"
        console.log(
            command(
                "error" if fails else "warning",
                message,
                file=result.file or None,
                line=result.line or None,
                title=f"evalward: {result.eval} / {result.fixture}",
            )
        )


def check_name(context: WorkflowContext, *, into: str | None) -> str:
    """The check run's and commit status's name. Only a gate writes under the gate's name,
    and only a gate into the repository's default branch: a run of the branch's own Evals
    (`into` None: `workflow_dispatch` without `pr`, on a pull request's branch) would
    otherwise put a later `success` of the same name on its head commit, and GitHub counts
    the latest; so would a second pull request from the same head into a branch whose Evals
    are looser (or none), which the check then names (`evalward (…) into stage`)."""
    if into is None:
        return f"evalward run ({context.comment_key})"
    name = f"evalward ({context.comment_key})"
    into = into.removeprefix("refs/heads/")  # a merge group's base is its full ref
    default = context.default_branch
    return name if not into or not default or into == default else f"{name} into {printable(into)}"


def report_check(
    job: Job, verdict: RunVerdict, report: ReportContext, head_sha: str, *, into: str | None
) -> None:
    """The check run on the head commit, when the `check-run` input asks for one: the verdict
    in plain words and the counts the comment shows (`report`). GitHub failing here costs a
    warning, never the decision."""
    if not job.site.settings.check_run or job.clients.github is None or not head_sha:
        return
    decision = verdict.decision
    annotations = []
    for result, fails in failing_fixtures(report):
        if not result.file:
            continue
        held_out = (result.eval, result.fixture) in report.private
        message = "held-out fixture" if held_out else result.message or "failed"
        annotations.append(
            Annotation(
                path=result.file,
                line=max(result.line, 1),
                level="failure" if fails else "warning",
                title=f"{result.eval} / {result.fixture}: {result.outcome}",
                message=job.console.redact(reveal_controls(message)),
            )
        )
    check = CheckReport(
        name=check_name(job.site.context, into=into),
        head_sha=head_sha,
        conclusion=CONCLUSIONS[decision.result],
        title=job.console.redact(reveal_controls(report.numbers.headline)),
        summary=job.console.redact(_summary(decision, report)),
        details_url=job.site.context.run_url,
        annotations=annotations,
    )
    try:
        url = job.clients.github.report_check(check)
        job.console.log(f"check run: {url}")
    except GitHubError as exc:
        job.console.log(command("warning", str(exc)))


def failing_fixtures(report: ReportContext) -> list[tuple[FixtureResult, bool]]:
    """Of each fixture a head run of which did not pass, the run it is shown by
    (`story.shown_run`), and whether it fails (the comment's blocking fixtures,
    `report.blocking`); not of one that passes by its Eval's rule and blocks nothing, nor of
    an advisory one. The failing ones come first, worst first as the comment lists them:
    GitHub shows a step's first ten `::error` lines beside the diff."""
    first = report.blocking.candidates
    named = {(c.comparison.name, c.fixture.fixture) for c in first}
    rest = [
        (shown_run(fixture.head, outcome), False)
        for comparison in report.comparisons
        for fixture, outcome, facts in head_fixtures(comparison)
        if (comparison.name, fixture.fixture) not in named
        and not all(r.passed for r in fixture.head)
        and not facts.advisory
        and not facts.passing
    ]
    return [(shown_run(c.fixture.head, c.outcome), True) for c in first] + rest


def _summary(decision: GateDecision, report: ReportContext) -> str:
    """The same words and numbers as the comment's first lines: the counts, the wall time and
    what the model calls spent, then the decision's reason. GitHub renders the summary as
    markdown, and the counts name Evals and the reason quotes the pull request (its YAML, its
    Evals' names), so each paragraph is escaped as the comment's text is (`_paragraph`)."""
    reason = decision.reason or decision.result.value
    if not report.comparisons:
        return _paragraph(reason)
    lines = [
        " · ".join(counts_phrases(report.numbers)),
        figures_text(report.numbers, report.run),
        reason,
    ]
    return "\n\n".join(_paragraph(line) for line in lines)


def _paragraph(text: str) -> str:
    """One paragraph of the summary as inert markdown, on one line, as the comment shows the
    same reasons (`escaping.inline`)."""
    return inline(text, limit=SUMMARY_CHARS)
