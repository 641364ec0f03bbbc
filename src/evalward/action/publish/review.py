"""Findings said on the changed lines: comments of one pull-request review, on the head's side
of the diff, kept up to date across pushes.

Each push posts one review, holding only the findings no comment of evalward's says yet on
the same lines in the same words (GitHub refuses a whole review for one comment it cannot
place, without saying which: then each is posted in a review of its own, and those it places
stand); a comment whose finding is gone is edited to say it
no longer applies as of the new head. GitHub's REST API cannot resolve a review thread (only
a person, or GraphQL's `resolveReviewThread` with a token that may write the pull request,
can), so the thread stays open, saying so; GitHub itself shows a comment whose lines a push
took out of the diff as outdated.

The text of a finding comes from the diff, the trace and the model: it is escaped line by
line as the sticky comment's text is (no mention, no HTML, no markdown of its own, no line a
runner could take for a workflow command) and redacted. Nothing here raises or changes the
gate's decision: a token that cannot write reviews (a fork's pull request) or any GitHub
failure comes back as the reason, for the sticky comment to list the lines as links instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from evalward.action.github import GitHubClient, LineComment, PullInfo, ReviewComment
from evalward.errors import GitHubError
from evalward.report.markdown import MAX_COMMENT_CHARS
from evalward.security import Redact
from evalward.text.counts import counted
from evalward.text.escaping import code_span, inline

RETIRED = "**No longer applies**"
"""How the text of a comment whose finding is gone begins, below the marker."""
LINE_LIMIT = 1_000
"""Characters of one line of a finding shown; the rest is cut with `…`."""
ROOM = MAX_COMMENT_CHARS - 2_000
"""What a comment's quoted text may take of GitHub's limit, leaving room for the rest."""
CANNOT_WRITE = (401, 403, 404)
"""GitHub's answers for a token that may not write the pull request's reviews: every other
write would be answered the same."""
ALONE_AT_MOST = 10
"""Comments posted one review each when GitHub refuses them together (422: it refuses the
whole review for one comment it cannot place, and does not say which)."""


@dataclass(frozen=True)
class LineFinding:
    """What evalward has to say on lines `first_line`..`last_line` of `path` at the head.

    `body` is plain text, from whatever source: each of its lines is escaped when posted."""

    path: str
    first_line: int
    last_line: int
    body: str

    def lines(self) -> str:
        """ "line 14" or "lines 14–16"."""
        if self.first_line == self.last_line:
            return f"line {self.last_line}"
        return f"lines {self.first_line}–{self.last_line}"


@dataclass(frozen=True)
class ReviewOutcome:
    """What became of the review: how many findings were posted now or already stood, how
    many earlier comments were marked as no longer applying, and why something failed."""

    posted: int = 0
    kept: int = 0
    retired: int = 0
    url: str = ""
    """The review posted by this push; empty when nothing new was posted."""
    failure: str = ""
    """Why the findings are not on the lines (the sticky comment lists them either way);
    empty when each stands on its lines."""
    unretired: str = ""
    """Why earlier comments whose findings are gone could not be marked so."""


def publish_review(
    github: GitHubClient,
    pull: PullInfo,
    head_sha: str,
    marker: str,
    redact: Redact,
    findings: Sequence[LineFinding],
    *,
    report_url: str = "",
    retire: bool = True,
) -> ReviewOutcome:
    """Post `findings` as one review of `head_sha` on `pull`, updating what an earlier push
    posted rather than repeating it (module docstring); earlier comments no finding of this
    head stands for are marked as no longer applying, unless not `retire` (findings this
    head's attribution did not get to). Never raises."""
    try:
        earlier = github.review_comments(pull.number, marker)
    except GitHubError as exc:
        return _failed(exc, pull)
    # each finding as the comment it would be: its lines and its text, escaped and redacted
    wanted = list(
        dict.fromkeys(
            (f.path, f.first_line, f.last_line, redact(comment_body(marker, f, report_url)))
            for f in findings
        )
    )
    standing = {_key(comment) for comment in earlier if _standing(comment)}
    new = [key for key in wanted if key not in standing]
    said = set(wanted)
    gone = [
        comment
        for comment in earlier
        if retire
        and not _retired(comment, marker)
        and (not _standing(comment) or _key(comment) not in said)
    ]
    outcome = ReviewOutcome(kept=len(wanted) - len(new))
    if new:
        comments = [
            LineComment(path, last, text, start_line=first if first < last else None)
            for (path, first, last, text) in new
        ]
        summary = redact(review_body(marker, len(comments), head_sha, report_url))
        try:
            url = github.create_review(pull.number, head_sha, summary, comments)
            outcome = ReviewOutcome(posted=len(comments), kept=outcome.kept, url=url)
        except GitHubError as exc:
            if exc.status == 422 and len(comments) > 1:
                alone = redact(review_body(marker, 1, head_sha, report_url))
                kept = outcome.kept
                outcome = replace(_one_by_one(github, pull, head_sha, alone, comments), kept=kept)
            else:
                outcome = _failed(exc, pull, kept=outcome.kept)
                if exc.status in CANNOT_WRITE:
                    return outcome
    # each of `gone` marked as no longer applying at `head_sha` (its text redacted again, as
    # every text posted is); the first failure is said in `unretired`
    retired, unretired = 0, ""
    for comment in gone:
        try:
            github.edit_review_comment(
                pull.number, comment.id, redact(retired_body(marker, comment, head_sha))
            )
            retired += 1
        except GitHubError as exc:
            unretired = unretired or str(exc)
    return replace(outcome, retired=retired, unretired=unretired)


def _one_by_one(
    github: GitHubClient,
    pull: PullInfo,
    head_sha: str,
    summary: str,
    comments: Sequence[LineComment],
) -> ReviewOutcome:
    """`comments`, which GitHub refused as one review, each in a review of its own (the first
    `ALONE_AT_MOST`): those it can place stand, and what it refused is said."""
    posted, urls, refused = 0, [], []
    for comment in comments[:ALONE_AT_MOST]:
        try:
            urls.append(github.create_review(pull.number, head_sha, summary, [comment]))
            posted += 1
        except GitHubError as exc:
            refused.append(f"{comment.path} line {comment.line}: {exc}")
    untried = len(comments) - ALONE_AT_MOST
    failure = "; ".join(
        [*refused[:1], *([f"{untried} more not tried one by one"] if untried > 0 else [])]
    )
    if failure:
        failure = f"{len(comments) - posted} of {len(comments)} findings refused ({failure})"
    return ReviewOutcome(posted=posted, url=urls[0] if urls else "", failure=failure)


def comment_body(marker: str, finding: LineFinding, report_url: str) -> str:
    """A finding's comment: the marker, a line naming evalward and the lines, then the text
    quoted, each line escaped (a line of its own could otherwise begin a workflow command
    where the text is printed)."""
    quoted: list[str] = []
    size = 0
    lines = finding.body.strip("\n").split("\n")
    for number, line in enumerate(lines):
        escaped = inline(line, LINE_LIMIT) if line.strip() else ""
        size += len(escaped) + 3
        if size > ROOM:
            quoted.append(f"> … {len(lines) - number} more lines cut to fit GitHub's limit")
            break
        quoted.append(f"> {escaped}".rstrip())
    link = f"\n\n[report.html]({report_url})" if report_url else ""
    return f"{marker}\n**evalward** on {finding.lines()}:\n\n" + "\n".join(quoted) + link


def review_body(marker: str, count: int, head_sha: str, report_url: str) -> str:
    """The review's own text: what it holds and for which head."""
    link = f" Details: [report.html]({report_url})." if report_url else ""
    return (
        f"{marker}\n**evalward**: {counted(count, 'finding')} on the changed lines, as of "
        f"{code_span(head_sha[:12])}.{link}"
    )


def retired_body(marker: str, comment: ReviewComment, head_sha: str) -> str:
    """An earlier comment, marked as no longer applying, what it said folded below."""
    said = comment.body.split("\n", 1)[1] if "\n" in comment.body else ""
    return (
        f"{marker}\n{RETIRED} as of {code_span(head_sha[:12])}: evalward no longer finds "
        "this on these lines. GitHub's API does not let evalward resolve this thread; "
        "resolve it once read.\n\n<details><summary>What it said</summary>\n\n"
        f"{said.strip()}\n\n</details>"
    )


def _standing(comment: ReviewComment) -> bool:
    """On lines of the head's side of the diff, not outdated."""
    return comment.line is not None and comment.side == "RIGHT"


def _retired(comment: ReviewComment, marker: str) -> bool:
    return comment.body.startswith(f"{marker}\n{RETIRED}")


def _key(comment: ReviewComment) -> tuple[str, int, int, str]:
    line = comment.line or 0
    first = comment.start_line if comment.start_line is not None else line
    return (comment.path, first, line, comment.body.replace("\r\n", "\n"))


def _failed(exc: GitHubError, pull: PullInfo, kept: int = 0) -> ReviewOutcome:
    hint = (
        " (a pull request from a fork gets a read-only token: its findings go in the comment)"
        if pull.from_fork
        else ""
    )
    return ReviewOutcome(kept=kept, failure=f"{exc}{hint}")
