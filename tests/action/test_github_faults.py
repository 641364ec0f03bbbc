"""The GitHub API failing: the gate's decision, the job summary and the results still stand,
and the log says what failed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from support.actionrun import pull_request_event
from support.suite import Shared, shared_pr

pytestmark = pytest.mark.hostile

LABEL = "force-eval-bypass"
RATE_LIMITED = {
    "x-ratelimit-limit": "5000",
    "x-ratelimit-remaining": "0",
    "x-ratelimit-used": "5000",
    "x-ratelimit-reset": str(int(time.time()) + 3600),
}

FAULTS = {
    "comment create 403": ("POST", r"/issues/\d+/comments$", 403, {}, "post the comment"),
    "comment create 422": ("POST", r"/issues/\d+/comments$", 422, {}, "post the comment"),
    "comment create 500": ("POST", r"/issues/\d+/comments$", 500, {}, "post the comment"),
    "comments list rate limit": (
        "GET",
        r"/issues/\d+/comments$",
        403,
        RATE_LIMITED,
        "read the comments",
    ),
    "comment create 429": ("POST", r"/issues/\d+/comments$", 429, {"retry-after": "0"}, "post"),
}


@pytest.fixture(scope="module")
def greets_badly(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    """The pull request every test gates, whose head greets badly: each test's point is what
    the gate does with GitHub once its runs are done."""
    yield from shared_pr(tmp_path_factory.mktemp("faults"), head_greets_well=False)


@pytest.mark.parametrize("fault", list(FAULTS), ids=list(FAULTS))
def test_a_comment_failure_leaves_the_decision_and_the_summary_standing(
    fault: str, github: FakeGitHub, greets_badly: Shared, tmp_path: Path
) -> None:
    method, path, status, headers, what = FAULTS[fault]
    change = greets_badly
    change.opened(github)
    github.fail(method, path, status, "API rate limit exceeded" if headers else "nope", headers)

    run = change.gate(
        github, pull_request_event(github.repository, 7, change.base, change.head), tmp_path
    )

    assert run.returncode == 1, run.stderr  # the gate failed, as the evals say
    assert "Traceback" not in run.stderr
    assert run.outputs["result"] == "fail"
    assert "support-bot-eval" in run.summary
    assert run.results()["result"] == "fail"
    warnings = [line for line in run.stdout.splitlines() if line.startswith("::warning::")]
    assert any(what in w and f"HTTP {status}" in w for w in warnings), run.stdout
    if headers.get("x-ratelimit-remaining") == "0":
        assert any("rate limit is exhausted" in w for w in warnings)
    assert "evalward: fail" in run.stdout


def test_events_api_failing_refuses_the_bypass_and_says_why(
    github: FakeGitHub, greets_badly: Shared, tmp_path: Path
) -> None:
    change = greets_badly
    change.opened(github)
    github.permissions["maintainer"] = "admin"
    github.add_label(7, LABEL, "maintainer")
    github.fail("GET", r"/issues/\d+/events$", 500)
    event = pull_request_event(github.repository, 7, change.base, change.head, [LABEL])

    run = change.gate(github, event, tmp_path)

    assert run.returncode == 1, run.stderr  # fail closed: no bypass without its audit facts
    assert run.outputs["result"] == "fail"
    assert "support-bot-eval" in run.summary
    assert "read the events of pull request #7: HTTP 500" in run.stdout
    assert github.comments_on(7), "the comment is still posted"
