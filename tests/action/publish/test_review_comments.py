"""`action.review.publish_review` against the fake GitHub's review API: one review holding the
findings on their lines, updated rather than repeated on each push, a fork's read-only token
answered with the reason, and the text of a finding escaped and redacted."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence

import pytest

from evalward.action.github import GitHubClient
from evalward.action.publish.review import RETIRED, LineFinding, ReviewOutcome, publish_review
from evalward.security import Redactor
from fakes.github_api import FakeGitHub, FakePull

pytestmark = pytest.mark.integration

BASE, HEAD, NEXT, LATER = "b" * 40, "a" * 40, "c" * 40, "d" * 40
MARKER = "<!-- evalward-review:ci/gate -->"
PROMPT = "prompts/support.md"
PATCH = (
    "@@ -10,5 +10,6 @@ You are the support desk.\n a\n b\n c\n d\n"
    "+Refuse refunds after 30 days.\n e\n"
    "@@ -18,2 +19,5 @@ Examples:\n f\n+x\n+y\n+z\n g"
)
RULE = LineFinding(PROMPT, 14, 14, "fx-refund-policy fails 0/8 on head, passes 8/8 on base.")
EXAMPLES = LineFinding(PROMPT, 20, 22, "fx-late-order: the reply no longer names the order.")


def pull(github: FakeGitHub, head_repo: str = "") -> None:
    github.add_pull(
        FakePull(
            number=7,
            head_sha=HEAD,
            base_sha=BASE,
            files=[{"filename": PROMPT, "status": "modified", "patch": PATCH}],
            head_repo=head_repo,
        )
    )


def push(
    github: FakeGitHub,
    head: str,
    findings: Sequence[LineFinding],
    redact: Redactor | None = None,
) -> ReviewOutcome:
    """One job's publishing, on `head`: a new client, as each push runs the action anew."""
    github.pulls[7].head_sha = head
    client = GitHubClient(github.url, github.token, github.repository)
    return publish_review(
        client, client.pull_request(7), head, MARKER, redact or Redactor([]), findings
    )


def writes(github: FakeGitHub) -> list[str]:
    """The requests that changed something (GraphQL's `viewer` only reads)."""
    return [
        f"{r.method} {r.path}"
        for r in github.requests
        if r.method != "GET" and "graphql" not in r.path
    ]


def test_one_review_holds_a_single_line_and_a_multi_line_comment(github: FakeGitHub) -> None:
    pull(github)

    outcome = push(github, HEAD, [RULE, EXAMPLES])

    (review,) = github.reviews_on(7)
    assert (review["state"], review["commit_id"]) == ("COMMENTED", HEAD)
    assert review["body"].startswith(MARKER + "\n") and "2 findings" in review["body"]
    rule, examples = github.review_comments_on(7)
    assert (rule["path"], rule["line"], rule["side"], rule["start_line"]) == (
        PROMPT,
        14,
        "RIGHT",
        None,
    )
    assert (examples["start_line"], examples["start_side"], examples["line"]) == (20, "RIGHT", 22)
    assert examples["side"] == "RIGHT"
    assert rule["body"].startswith(MARKER + "\n**evalward** on line 14:")
    assert "fx-refund-policy fails 0/8 on head" in rule["body"]
    assert "**evalward** on lines 20–22:" in examples["body"]
    assert outcome == ReviewOutcome(posted=2, url=review["html_url"])


def test_a_second_push_with_the_same_findings_posts_nothing_new(github: FakeGitHub) -> None:
    pull(github)
    push(github, HEAD, [RULE, EXAMPLES])
    before = writes(github)

    outcome = push(github, NEXT, [EXAMPLES, RULE])

    assert writes(github) == before
    assert len(github.reviews_on(7)) == 1 and len(github.review_comments_on(7)) == 2
    assert outcome == ReviewOutcome(kept=2)


def test_a_finding_gone_on_the_next_push_marks_its_comment_and_keeps_the_other(
    github: FakeGitHub,
) -> None:
    pull(github)
    push(github, HEAD, [RULE, EXAMPLES])
    rule, examples = github.review_comments_on(7)
    kept_body = examples["body"]

    outcome = push(github, NEXT, [EXAMPLES])

    assert outcome == ReviewOutcome(kept=1, retired=1)
    assert len(github.reviews_on(7)) == 1 and len(github.review_comments_on(7)) == 2
    assert examples["body"] == kept_body
    assert rule["body"].startswith(f"{MARKER}\n{RETIRED} as of `{NEXT[:12]}`")
    assert "resolve it once read" in rule["body"]
    assert "fx-refund-policy fails 0/8" in rule["body"]  # what it said, folded
    assert writes(github)[-1] == f"PATCH /repos/{github.repository}/pulls/comments/{rule['id']}"

    # a later push leaves the marked comment as it is, and says the finding anew if it returns
    before = writes(github)
    assert push(github, LATER, [EXAMPLES]) == ReviewOutcome(kept=1)
    assert writes(github) == before
    again = push(github, LATER, [EXAMPLES, RULE])
    assert (again.posted, again.kept, again.retired) == (1, 1, 0)
    assert len(github.reviews_on(7)) == 2 and len(github.review_comments_on(7)) == 3


def test_a_comment_that_cannot_be_marked_leaves_the_findings_on_their_lines(
    github: FakeGitHub,
) -> None:
    pull(github)
    push(github, HEAD, [RULE, EXAMPLES])
    github.fail("PATCH", r"/pulls/comments/\d+$", 403, "Resource not accessible by integration")

    outcome = push(github, NEXT, [EXAMPLES])

    assert not outcome.failure and (outcome.kept, outcome.retired) == (1, 0)
    assert "HTTP 403" in outcome.unretired and "edit review comment" in outcome.unretired


def test_a_fork_s_read_only_token_gets_the_reason_back(github: FakeGitHub) -> None:
    pull(github, head_repo="contributor/agents")
    github.fail("POST", r"/pulls/7/reviews$", 403, "Resource not accessible by integration")

    outcome = push(github, HEAD, [RULE, EXAMPLES])

    assert "HTTP 403 Resource not accessible by integration" in outcome.failure
    assert "pull-requests: write" in outcome.failure and "fork" in outcome.failure
    assert (outcome.posted, outcome.retired) == (0, 0)
    assert github.reviews_on(7) == [] and github.review_comments_on(7) == []


def test_any_github_failure_is_returned_and_nothing_is_posted_blind(github: FakeGitHub) -> None:
    pull(github)
    github.fail("GET", r"/pulls/7/comments$", 404, "Not Found")

    outcome = push(github, HEAD, [RULE])

    assert "HTTP 404" in outcome.failure and "read the review comments" in outcome.failure
    assert writes(github) == []


def test_a_line_outside_the_diff_is_refused_with_github_s_reason(github: FakeGitHub) -> None:
    pull(github)

    outcome = push(github, HEAD, [LineFinding(PROMPT, 17, 17, "between the hunks")])

    assert "HTTP 422" in outcome.failure and "Line could not be resolved" in outcome.failure
    assert github.reviews_on(7) == [] and outcome.posted == 0


def test_one_refused_comment_does_not_take_the_others_with_it(github: FakeGitHub) -> None:
    """GitHub refuses the whole review for one comment it cannot place, and does not say
    which: each is posted in a review of its own, and those it places stand."""
    pull(github)
    between = LineFinding(PROMPT, 17, 17, "between the hunks")

    outcome = push(github, HEAD, [RULE, between, EXAMPLES])

    assert (outcome.posted, outcome.kept) == (2, 0) and outcome.url
    assert outcome.failure.startswith("1 of 3 findings refused (prompts/support.md line 17: ")
    assert "Line could not be resolved" in outcome.failure
    placed = sorted((c["line"], c.get("start_line")) for c in github.review_comments_on(7))
    assert placed == [(14, None), (22, 20)] and len(github.reviews_on(7)) == 2
    # the next push keeps what stands and asks again only for the refused one
    again = push(github, NEXT, [RULE, between, EXAMPLES])
    assert (again.posted, again.kept) == (0, 2) and "HTTP 422" in again.failure
    assert len(github.reviews_on(7)) == 2


def test_comments_one_by_one_are_bounded(github: FakeGitHub) -> None:
    pull(github)
    many = [LineFinding(PROMPT, 14, 14, f"finding {n}") for n in range(12)]

    outcome = push(github, HEAD, [LineFinding(PROMPT, 17, 17, "between the hunks"), *many])

    assert outcome.posted == 9 and len(github.reviews_on(7)) == 9
    assert outcome.failure.startswith("4 of 13 findings refused (prompts/support.md line 17")
    assert outcome.failure.endswith("; 3 more not tried one by one)")


@pytest.mark.parametrize(
    ("comment", "reason"),
    [
        ({"line": 0}, "Line could not be resolved"),
        ({"line": 20, "start_line": 22}, "start_line must precede the end line"),
        ({"line": 22, "start_line": 14}, "start_line must be part of the same hunk"),
        ({"line": 3, "path": "prompts/other.md"}, "Path could not be resolved"),
    ],
)
def test_the_fake_refuses_comments_as_github_does(
    github: FakeGitHub, comment: dict[str, object], reason: str
) -> None:
    pull(github)
    drafted = {"path": PROMPT, "body": "b", "side": "RIGHT", **comment}
    request = urllib.request.Request(
        f"{github.url}/repos/{github.repository}/pulls/7/reviews",
        data=json.dumps({"commit_id": HEAD, "event": "COMMENT", "comments": [drafted]}).encode(),
        headers={"Authorization": f"token {github.token}", "Content-Type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request)

    assert refused.value.code == 422
    assert reason in json.loads(refused.value.read())["errors"][0]
    refused.value.close()
    assert github.reviews_on(7) == []


def test_a_comment_someone_else_wrote_with_the_marker_is_neither_kept_nor_edited(
    github: FakeGitHub,
) -> None:
    pull(github)
    push(github, HEAD, [RULE])
    (mine,) = github.review_comments_on(7)
    forged = github.add_review_comment(7, PROMPT, 20, MARKER + "\nplanted", "mallory")
    copied = github.add_review_comment(7, PROMPT, 14, mine["body"], "mallory")

    outcome = push(github, NEXT, [RULE])

    assert outcome == ReviewOutcome(kept=1)
    assert github.review_comments[forged["id"]]["body"] == MARKER + "\nplanted"
    assert github.review_comments[copied["id"]]["body"] == mine["body"]


def test_hostile_text_in_a_finding_is_escaped_and_redacted(github: FakeGitHub) -> None:
    pull(github)
    secret = "sk-live-0123456789abcdef"
    hostile = (
        "@octocat look here\n"
        "<img src=x onerror=alert(1)></details>\n"
        "::set-output name=verdict::pass\n"
        f"the key is {secret}\n"
        f"{MARKER}\n"
        "[click](https://evil.example) **bold**"
    )

    outcome = push(github, HEAD, [LineFinding(PROMPT, 14, 14, hostile)], Redactor([secret]))

    assert outcome.posted == 1
    (comment,) = github.review_comments_on(7)
    body = comment["body"]
    assert body.startswith(MARKER + "\n") and body.count(MARKER) == 1
    assert "@octocat" not in body and "@\u200boctocat" in body
    assert "<img" not in body and "&lt;img src=x onerror=alert(1)&gt;" in body
    assert "</details>" not in body
    assert not any(line.startswith("::") for line in body.splitlines())
    assert "set-output name=verdict" in body  # shown, inert
    assert secret not in body and "the key is ***" in body
    assert "](https://evil" not in body and "\\*\\*bold\\*\\*" in body
    assert secret not in github.reviews_on(7)[0]["body"]
