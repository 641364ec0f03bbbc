"""evalward trusts (edits, and reads its bypass record from) only comments written by the
account of the token it runs with: the workflow token's `github-actions[bot]`, another App's
`<slug>[bot]`, or the person whose token it is. Each learned through the fake GitHub API the
way GitHub answers: `GET /user`, or GraphQL's `viewer` where `GET /user` refuses the token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from action.test_github_events import LABEL, labeled, real_payload
from fakes.github_api import WORKFLOW_BOT, FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import Shared, make_pr, script_model, shared_pr

pytestmark = pytest.mark.e2e

MARKER = "<!-- evalward-comment:evals/gate -->"


def fake_github(login: str) -> Iterator[FakeGitHub]:
    server = FakeGitHub(login=login)
    yield server
    server.close()
    assert server.contract_violations == []


@pytest.fixture
def app_github() -> Iterator[FakeGitHub]:
    """GitHub as another App's installation token sees it."""
    yield from fake_github("acme-evals[bot]")


@pytest.fixture
def personal_github() -> Iterator[FakeGitHub]:
    """GitHub as a person's token sees it."""
    yield from fake_github("release-captain")


@pytest.fixture(scope="module")
def greets_badly(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    """The pull request whose head greets badly, gated by every test but one: each is about
    which comment the gate trusts and edits once its runs are done."""
    yield from shared_pr(tmp_path_factory.mktemp("identity"), head_greets_well=False)


def forged_record(head: str) -> str:
    return (
        f"{MARKER}\n## ✅ evalward: bypassed\n"
        f'<!-- evalward-bypass-record {{"label": "{LABEL}", "labeled_at": '
        f'"2026-11-20T10:00:00+00:00", "sha": "{head}", "base": "main"}} -->'
    )


def edits_of(github: FakeGitHub, comment: dict[str, Any]) -> list[Any]:
    return [
        r
        for r in github.requests
        if r.method == "PATCH" and r.path.endswith(f"/issues/comments/{comment['id']}")
    ]


def test_another_bots_comment_with_the_marker_and_a_record_for_the_head_is_not_trusted(
    greets_badly: Shared, github: FakeGitHub, tmp_path: Path
) -> None:
    change, head = greets_badly, greets_badly.head
    change.opened(github)
    github.permissions["maintainer"] = "maintain"
    github.add_label(7, LABEL, actor="maintainer")
    forged = github.add_comment(7, forged_record(head), author="other-app[bot]")

    run = change.gate(
        github, real_payload("pull_request.synchronize", head=head, base=change.base), tmp_path
    )

    assert run.returncode == 1, run.stdout
    assert run.outputs["result"] == "fail", "the forged record would have made it `bypassed`"
    assert json.loads(run.outputs["audit"])["outcome"] == "refused"
    assert github.comments[forged["id"]]["body"] == forged_record(head)
    assert edits_of(github, forged) == []
    own = [c for c in github.comments_on(7) if c["id"] != forged["id"]]
    assert [c["user"]["login"] for c in own] == [WORKFLOW_BOT]
    assert own[0]["body"].startswith(MARKER)
    assert any(r.path == "/graphql" for r in github.requests), "the workflow token's account"


def test_as_another_app_the_workflow_bots_comment_is_not_trusted_and_its_own_is_edited(
    greets_badly: Shared, app_github: FakeGitHub, tmp_path: Path
) -> None:
    github, change, head = app_github, greets_badly, greets_badly.head
    change.opened(github)
    github.permissions["maintainer"] = "write"
    github.add_label(7, LABEL, actor="maintainer")
    # another workflow of the repository writes as github-actions[bot]
    forged = github.add_comment(7, forged_record(head), author=WORKFLOW_BOT)
    event = real_payload("pull_request.synchronize", head=head, base=change.base)

    first = change.gate(github, event, tmp_path)
    second = change.gate(github, event, tmp_path)

    assert first.outputs["result"] == second.outputs["result"] == "fail"
    assert edits_of(github, forged) == []
    (own,) = [c for c in github.comments_on(7) if c["id"] != forged["id"]]
    assert own["user"]["login"] == "acme-evals[bot]"
    assert len(edits_of(github, own)) == 1, "the second run edits the first run's comment"
    assert second.outputs["comment-url"].endswith(f"#issuecomment-{own['id']}")


def test_a_personal_token_edits_the_same_comment_on_every_rerun(
    repo: GitRepo, personal_github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    github = personal_github
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)
    event = pull_request_event(github.repository, 7, base, head)

    runs = [run_action(repo.path, github, event, env=env) for _ in range(3)]

    assert [r.outputs["result"] for r in runs] == ["pass"] * 3
    (comment,) = github.comments_on(7)
    assert comment["user"]["login"] == "release-captain"
    assert len(edits_of(github, comment)) == 2
    assert any(r.path == "/user" for r in github.requests)
    assert not any(r.path == "/graphql" for r in github.requests), "GET /user answered"


def test_a_bypass_record_in_the_apps_own_comment_still_counts(
    greets_badly: Shared, app_github: FakeGitHub, tmp_path: Path
) -> None:
    github, change = app_github, greets_badly
    base, head = change.base, change.head
    change.opened(github)
    github.permissions["maintainer"] = "write"
    github.add_label(7, LABEL, actor="maintainer")

    first = change.gate(github, labeled(base, head), tmp_path)
    again = change.gate(
        github, real_payload("pull_request.reopened", head=head, base=base), tmp_path
    )

    assert first.outputs["result"] == "bypassed", first.stdout
    assert again.outputs["result"] == "bypassed", "the record in its own comment is read"
    assert len(github.comments_on(7)) == 1


def test_when_the_tokens_account_cannot_be_learned_no_comment_is_trusted(
    greets_badly: Shared, github: FakeGitHub, tmp_path: Path
) -> None:
    change = greets_badly
    base, head = change.base, change.head
    change.opened(github)
    github.permissions["maintainer"] = "write"
    github.add_label(7, LABEL, actor="maintainer")
    first = change.gate(github, labeled(base, head), tmp_path)
    assert first.outputs["result"] == "bypassed"
    github.fail("POST", r"^/graphql$", 404, "Not Found")

    again = change.gate(
        github, real_payload("pull_request.reopened", head=head, base=base), tmp_path
    )

    assert again.outputs["result"] == "fail", "its own record cannot be told from a forgery"
    assert any(
        line.startswith("::warning::") and "learn which account the token writes as" in line
        for line in again.stdout.splitlines()
    )
    first_comment, second_comment = github.comments_on(7)
    assert edits_of(github, first_comment) == []
    assert "Bypass refused" in second_comment["body"]
