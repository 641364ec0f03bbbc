"""A pull request's attribution in the action: run once the gate has decided, never changing
the decision (`flows.attribution_runs`), said in the comment as `path:line` links and on the
changed lines as one review (`review.publish_review`). A failure of either costs a warning."""

from __future__ import annotations

from collections.abc import Mapping

from evalward.action.github import GitHubClient, PullInfo
from evalward.action.job import Console, Job
from evalward.action.publish.review import LineFinding, publish_review
from evalward.action.workflow import command
from evalward.attribution.found import RunAttribution
from evalward.attribution.hunks import in_diff_order
from evalward.flows.attribution_runs import attribute_verdict
from evalward.flows.session import RunVerdict
from evalward.plan.request import RunRequest
from evalward.report.attribution_text import finding_text
from evalward.report.story import Blocking
from evalward.text import utf8

FORK = (
    "A fork's pull request gets a read-only token, so these lines are not also commented on "
    "in a review."
)


async def attribute(console: Console, request: RunRequest, verdict: RunVerdict) -> None:
    """Attribution of the verdict's regressions, kept in its Evaluation for every report; an
    error in it is a warning, and the decision stands."""
    said = await attribute_verdict(
        request, verdict, lambda warning: console.log(command("warning", warning))
    )
    if said:
        console.log(f"evalward: {said}")


def findings(
    found: RunAttribution | None, evidence: Mapping[tuple[str, str], str] = {}
) -> list[LineFinding]:
    """Each proven cause's hunk, on the head's lines it spans, with each regressed fixture's
    `evidence` (`evidence_of`); none on a file whose name is not UTF-8, which GitHub's API
    cannot name (the comment lists it)."""
    return [
        # hunk.changed: the lines of the diff a review comment may take
        LineFinding(hunk.path, *hunk.changed, finding_text(each, evidence))
        for each in (found.found if found is not None else ())
        if each.attributed is not None
        for hunk in in_diff_order(each.attributed.culprit)
        if hunk.changed[0] and utf8.writable(hunk.path) == hunk.path
    ]


SECTION = "Where it regressed"
"""The comment's attribution heading: an earlier comment that has it had findings."""
UNRETIRED = "<!-- evalward: review comments not yet marked -->"
"""Kept in the comment while review comments of evalward's may stand unmarked (this run's
findings, or earlier ones it could not or would not mark) and it has no `SECTION` (its
template shows none, or the findings are gone): the next run looks for them. Room is always
left for it (`write_everything`)."""


def evidence_of(blocking: Blocking) -> dict[tuple[str, str], str]:
    """Each blocking fixture's evidence as the comment gives it, by (Eval, fixture): the step
    where the head departs from the base, the assertion, the statistics. None of a private
    fixture's. `blocking` is the comment's own: its reasons are read once for both."""
    return {
        (reason.eval, reason.fixture): " · ".join(
            p for p in (reason.evidence_text, reason.assertion, reason.statistics) if p
        )
        for reason in blocking.reasons()
        if not reason.private
    }


def review(
    job: Job,
    github: GitHubClient,
    pull: PullInfo,
    head_sha: str,
    *,
    attribution: RunAttribution | None,
    blocking: Blocking,
    earlier: bool,
) -> bool:
    """The review on the changed lines: posted for this head's findings, with the evidence
    of the comment's `blocking` reasons, and on a push whose findings are gone, `earlier`
    ones (the comment had some) marked as no longer applying. True when review comments may
    stand unmarked after it: findings of this head on their lines, earlier ones that could
    not be marked or that GitHub did not list, or, where attribution did not say of every
    regression where it is (`RunAttribution.settled`: it did not finish, a budget ran out,
    its variants decided nothing), earlier ones left as they are (that they no longer apply
    is not known); the comment then keeps `UNRETIRED`."""
    proven = attribution is not None and any(f.attributed for f in attribution.found)
    found = findings(attribution, evidence_of(blocking) if proven else {})
    if not found and not earlier:
        return False
    outcome = publish_review(
        github,
        pull,
        head_sha,
        job.site.marker,
        job.console.redact,
        found,
        report_url=job.site.context.run_url,
        retire=attribution is None or attribution.settled,
    )
    if outcome.url:
        job.console.log(f"review: {outcome.url}")
    if outcome.failure:
        said = "some findings are not" if outcome.posted else "no review"
        job.console.log(command("warning", f"{said} on the changed lines: {outcome.failure}"))
    if outcome.unretired:
        said = "earlier review comments still stand, not marked as no longer applying"
        fix = "resolve them on the pull request, or the next run asks again"
        job.console.log(command("warning", f"{said} ({outcome.unretired}): {fix}"))
    unsettled = attribution is not None and not attribution.settled
    left = earlier and (unsettled or bool(outcome.failure))  # not looked at, or not marked
    return bool(outcome.posted or outcome.kept or outcome.unretired) or left
