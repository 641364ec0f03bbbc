"""GitHub's secondary rate limit (a 403 whose message says so, with `retry-after`, as GitHub's
REST API documentation describes it) is named as a rate limit, to retry later: never taken for
a token that lacks a permission, which would send the user to change a workflow that is fine."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.http import Response
from fakes.model_script import text
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.greeter import model_change
from support.suite import provider_env

pytestmark = pytest.mark.hostile

SECONDARY = Response(
    403,
    {
        "message": "You have exceeded a secondary rate limit. Please wait a few minutes "
        "before you try again. If you reach out to GitHub Support for help, please include "
        "the request ID ABCD:1234.",
        "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
    },
    {"retry-after": "60", "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4990"},
)


def test_a_secondary_rate_limit_on_the_comment_is_named_as_one(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    repo = GitRepo(tmp_path / "repo")
    base, head = model_change(repo)
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script(lambda body: body.get("model") == "gpt-4.1", text("Bye."))
    model.script(lambda body: True, text("Hello!"))
    github.answer("POST", r"/issues/7/comments$", SECONDARY)

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
        run_dir=tmp_path / "runner",
    )

    assert run.returncode == 1, run.stdout + run.stderr
    (warning,) = [
        line
        for line in run.stdout.splitlines()
        if line.startswith("::warning::") and "post the comment" in line
    ]
    assert "rate limit" in warning and "retry later" in warning, warning
    assert "Check the token's permissions" not in warning, warning
    assert "ABCD:1234.." not in warning, warning  # GitHub's own full stop, not a second one
