"""`action.github.GitHubClient` against the fake GitHub: each of its calls as the action
makes it, the comment only the token's own account wrote taken as evalward's, and a check run
and a commit status reported (or why each failed)."""

from __future__ import annotations

import pytest

from evalward.action.github import Annotation, CheckReport, GitHubClient
from evalward.errors import GitHubError
from fakes.github_api import FakeGitHub, FakePull

pytestmark = pytest.mark.integration

HEAD, BASE = "a" * 40, "b" * 40
MARKER = "<!-- evalward: ci/gate -->"


def client(github: FakeGitHub) -> GitHubClient:
    github.add_pull(
        FakePull(number=7, head_sha=HEAD, base_sha=BASE, labels=["ready"], author="octocat")
    )
    return GitHubClient(github.url, github.token, github.repository)


def test_the_pull_request_its_label_event_and_a_permission_are_read(github: FakeGitHub) -> None:
    gh = client(github)
    github.add_label(7, "force-eval-bypass", "first", at="2026-11-20T09:00:00Z")
    github.add_label(7, "force-eval-bypass", "second", at="2026-11-21T09:00:00Z")
    github.permissions["second"] = "maintain"

    pull = gh.pull_request(7)
    event = gh.latest_labeled(7, "force-eval-bypass")

    assert pull.labels == ["ready", "force-eval-bypass"]
    assert (pull.author, pull.base_repo, pull.head_repo) == ("octocat", *[github.repository] * 2)
    assert event is not None and event.actor == "second"
    assert event.created_at == "2026-11-21T09:00:00+00:00"
    assert gh.latest_labeled(7, "other") is None
    assert gh.permission("second") == "maintain"
    assert gh.permission("stranger") == "read"


def test_a_label_taken_off_stands_nowhere(github: FakeGitHub) -> None:
    gh = client(github)
    github.add_label(7, "force-eval-bypass", "maintainer", at="2026-11-20T09:00:00Z")
    assert gh.labels(7) == ["ready", "force-eval-bypass"]

    github.remove_label(7, "force-eval-bypass", "maintainer", at="2026-11-20T10:00:00Z")

    assert gh.labels(7) == ["ready"]  # read as it stands, not as the job first read it
    assert gh.latest_labeled(7, "force-eval-bypass") is None
    github.add_label(7, "force-eval-bypass", "other", at="2026-11-20T11:00:00Z")
    event = gh.latest_labeled(7, "force-eval-bypass")
    assert event is not None and event.actor == "other"


def test_only_the_token_s_own_comment_is_evalward_s_and_it_is_edited_in_place(
    github: FakeGitHub,
) -> None:
    gh = client(github)
    github.add_comment(7, MARKER + "\nplanted bypass record", "mallory")

    assert gh.find_comment(7, MARKER) is None
    url = gh.upsert_comment(7, MARKER, MARKER + "\nfirst")
    again = gh.upsert_comment(7, MARKER, MARKER + "\nsecond")

    mine = [c for c in github.comments_on(7) if c["user"]["login"] == github.login]
    assert len(mine) == 1 and mine[0]["body"].endswith("second")
    assert url == again == mine[0]["html_url"]
    found = gh.find_comment(7, MARKER)
    assert found is not None and found.body.endswith("second")
    assert gh.identity() == github.login  # the bot's login, from GraphQL's viewer


def test_a_person_s_token_is_named_by_the_user_endpoint() -> None:
    server = FakeGitHub(login="release-person")
    try:
        gh = client(server)
        assert gh.identity() == "release-person"
        assert not any(r.path == "/graphql" for r in server.requests)
    finally:
        server.close()


def test_a_check_run_and_a_commit_status_are_reported_with_at_most_50_annotations(
    github: FakeGitHub,
) -> None:
    gh = client(github)
    notes = [Annotation("evals/a.yaml", n, "failure", "t", "m") for n in range(1, 61)]
    check = CheckReport("evalward", HEAD, "failure", "1 Eval fails", "summary", "", notes)

    url = gh.report_check(check)

    (run,) = github.check_runs
    assert url == run["html_url"]
    assert (run["conclusion"], len(run["output"]["annotations"])) == ("failure", 50)
    (status,) = github.statuses
    assert (status["state"], status["context"], status["sha"]) == ("failure", "evalward", HEAD)


def test_a_refused_check_run_still_sets_the_status_and_names_what_failed(
    github: FakeGitHub,
) -> None:
    gh = client(github)
    github.fail("POST", r"/check-runs$", 403, "Resource not accessible by integration")

    with pytest.raises(GitHubError) as failed:
        gh.report_check(CheckReport("evalward", HEAD, "success", "passes", "summary"))

    assert failed.value.status == 403
    assert "could not create the check run" in str(failed.value)
    assert "checks: write" in str(failed.value)
    assert [s["state"] for s in github.statuses] == ["success"]


def test_an_answer_not_shaped_as_github_documents_is_github_s_failure(
    github: FakeGitHub,
) -> None:
    gh = client(github)
    github.pulls[7].head_sha = "not-a-commit"

    with pytest.raises(GitHubError) as unreadable:
        gh.pull_request(7)

    assert "no head and base commits" in str(unreadable.value)
