"""`action.pull_request` on its own: the pull request it looks up on the fake GitHub (a fork's
refused on workflow_dispatch, one GitHub does not know named where its number came from), and
when the gate comments. The client is `action.github.GitHubClient`, bound to the fake."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalward.action.context import WorkflowContext
from evalward.action.github import GitHubClient, PullInfo
from evalward.action.job import Site
from evalward.action.pull_request import (
    fork_dispatch_refusal,
    number_source,
    pull_request,
    should_comment,
)
from evalward.action.settings import CommentMode, Settings
from evalward.errors import ConfigError, GitHubError, UnknownPullRequest
from evalward.verdict.gate import GateDecision, GateResult
from fakes.github_api import FakeGitHub, FakePull

pytestmark = pytest.mark.integration

HEAD, BASE = "a" * 40, "b" * 40


def site(tmp_path: Path, github: FakeGitHub, event: str, **inputs: str) -> Site:
    context = WorkflowContext(
        event_name=event,
        repository=github.repository,
        workspace=tmp_path,
        api_url=github.url,
        server_url="https://github.example",
        run_id="42",
    )
    return Site({}, context, Settings.model_validate(inputs))


@pytest.fixture
def client(github: FakeGitHub) -> Iterator[GitHubClient]:
    github.add_pull(FakePull(number=7, head_sha=HEAD, base_sha=BASE))
    github.add_pull(FakePull(number=8, head_sha=HEAD, base_sha=BASE, head_repo="mallory/agents"))
    yield GitHubClient(github.url, github.token, github.repository)


def test_a_pull_request_of_the_repository_is_read_whole(
    tmp_path: Path, github: FakeGitHub, client: GitHubClient
) -> None:
    pull = pull_request(site(tmp_path, github, "workflow_dispatch"), client, 7)

    assert (pull.number, pull.head_sha, pull.base_sha) == (7, HEAD, BASE)
    assert pull.head_in_repository and not pull.from_fork


def test_a_fork_is_refused_on_workflow_dispatch_unless_untrusted_heads_are_allowed(
    tmp_path: Path, github: FakeGitHub, client: GitHubClient
) -> None:
    with pytest.raises(ConfigError) as refused:
        pull_request(site(tmp_path, github, "workflow_dispatch"), client, 8)

    assert "the fork mallory/agents" in str(refused.value)
    assert "allow-untrusted-head: true" in str(refused.value)
    allowed = site(tmp_path, github, "workflow_dispatch", **{"allow-untrusted-head": "true"})
    assert pull_request(allowed, client, 8).from_fork
    # on pull_request the fork gets no secrets: nothing to refuse
    assert pull_request(site(tmp_path, github, "pull_request"), client, 8).number == 8


def test_a_pull_request_github_does_not_know_names_where_its_number_came_from(
    tmp_path: Path, github: FakeGitHub, client: GitHubClient
) -> None:
    dispatched = site(tmp_path, github, "workflow_dispatch", pr="99")

    with pytest.raises(UnknownPullRequest) as unknown:
        pull_request(dispatched, client, 99)

    message = str(unknown.value)
    assert message.startswith("the action input `pr`: pull request #99 is not known")
    assert "HTTP 404" in message and github.repository in message
    assert number_source(site(tmp_path, github, "workflow_dispatch")).startswith(
        "the workflow_dispatch input"
    )
    assert "pull_request_target event" in number_source(
        site(tmp_path, github, "pull_request_target")
    )


def test_another_failure_reading_the_pull_request_is_github_s(
    tmp_path: Path, github: FakeGitHub, client: GitHubClient
) -> None:
    github.fail("GET", r"/pulls/7$", 500, "down")

    with pytest.raises(GitHubError) as failed:
        pull_request(site(tmp_path, github, "pull_request"), client, 7)

    assert not isinstance(failed.value, UnknownPullRequest)
    assert failed.value.status == 500


def test_a_deleted_fork_is_named_as_gone() -> None:
    gone = PullInfo(number=3, labels=[], head_sha=HEAD, base_sha=BASE, base_repo="acme/agents")

    assert "a repository that is gone" in fork_dispatch_refusal(gone)
    assert not gone.head_in_repository


@pytest.mark.parametrize(
    ("mode", "result", "exists", "comments"),
    [
        (CommentMode.always, GateResult.passed, False, True),
        (CommentMode.never, GateResult.failed, True, False),
        (CommentMode.on_failure, GateResult.passed, False, False),
        (CommentMode.on_failure, GateResult.passed, True, True),
        (CommentMode.on_failure, GateResult.failed, False, True),
        (CommentMode.on_failure, GateResult.bypassed, False, True),
        (CommentMode.on_failure, GateResult.skipped, False, False),
        (CommentMode.on_failure, GateResult.inconclusive, False, True),
    ],
)
def test_the_comment_follows_the_comment_input(
    mode: CommentMode, result: GateResult, exists: bool, comments: bool
) -> None:
    assert should_comment(mode, GateDecision(result), exists) is comments
