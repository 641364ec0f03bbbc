"""A pull request's attribution in the action: run once the gate has decided, never changing
the decision (`flows.attribution_runs`), said in the comment as `path:line` links and on the
changed lines as one review (`review.publish_review`). A failure of either costs a warning."""

from __future__ import annotations

from evalward.action.github import GitHubPort, PullInfo
from evalward.action.job import Console, Job
from evalward.action.review import LineFinding, publish_review
from evalward.action.workflow import command
from evalward.attribution.found import RunAttribution
from evalward.flows.attribution_runs import attribute_run
from evalward.flows.session import RunVerdict
from evalward.plan.request import RunRequest
from evalward.report.attribution_text import finding_text

FORK = (
    "A fork's pull request gets a read-only token, so these lines are not also commented on "
    "in a review."
)


async def attribute(console: Console, request: RunRequest, verdict: RunVerdict) -> None:
    """Attribution of the verdict's regressions, kept in its Evaluation for every report; an
    error in it is a warning, and the decision stands."""
    try:
        found = await attribute_run(request, verdict)
    except Exception as exc:
        console.log(command("warning", f"attribution did not finish: {exc}"))
        return
    verdict.evaluation.attribution = found
    if found is not None:
        proven = sum(1 for f in found.found if f.attributed is not None)
        console.log(
            f"evalward: attribution: {proven} of {len(found.found)} regressions traced to "
            f"their hunks, {found.spent_calls} model calls"
        )


def findings(found: RunAttribution | None) -> list[LineFinding]:
    """Each proven cause's hunk, on the head's lines it spans."""
    lines = []
    for each in found.found if found is not None else ():
        attributed = each.attributed
        if attributed is None:
            continue
        for hunk in sorted(attributed.culprit, key=lambda h: (h.path, h.index)):
            if hunk.first:
                lines.append(
                    LineFinding(hunk.path, hunk.first, hunk.last, finding_text(each, hunk))
                )
    return lines


SECTION = "Where it regressed"
"""The comment's attribution heading: an earlier comment that has it had findings."""


def review(
    job: Job,
    github: GitHubPort,
    pull: PullInfo,
    head_sha: str,
    attribution: RunAttribution | None,
    earlier: bool,
) -> None:
    """The review on the changed lines: posted for this head's findings, and on a push whose
    findings are gone, `earlier` ones (the comment had some) marked as no longer applying."""
    found = findings(attribution)
    if not found and not earlier:
        return
    outcome = publish_review(
        github,
        pull,
        head_sha,
        job.site.marker,
        job.console.redact,
        found,
        report_url=job.site.context.run_url,
    )
    if outcome.failure:
        job.console.log(command("warning", f"no review on the changed lines: {outcome.failure}"))
    elif outcome.url:
        job.console.log(f"review: {outcome.url}")
