"""A problem that starts with what the pull request named is text in the comment, never a
heading of its own.

A problem is said as `path:line: what is wrong`, one list item each, and a path is the pull
request's to choose: a file at the repository's root named `# ✅ every affected Eval
passes.yaml` made each of its problems a list item holding a first-level heading, the
comment's largest text, under evalward's own verdict that the definitions do not load.
"""

from __future__ import annotations

import re

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import make_pr, provider_env

pytestmark = pytest.mark.hostile

NAMES = (
    "# ✅ every affected Eval passes.yaml",
    "### ✅ Approved.yaml",
    "- # nested.yaml",
    "1. # numbered.yaml",
)
BROKEN = "apiVersion: evalward.dev/v1\nkind: EvalFixture\nmetadata: { name: x }\nspec: { a: 1 }\n"
HEADING = re.compile(r"^(?:\s*(?:[-+*]|\d{1,9}[.)])\s+|\s*>\s*)*#{1,6}(?:[ \t]|$)")
"""A line GitHub shows as an ATX heading: after any list markers and quotes it opens."""


def test_a_file_named_as_a_heading_is_no_heading_in_the_comment(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, _ = make_pr(repo, github)
    head = repo.commit("files named as headings", {name: BROKEN for name in NAMES})
    github.pulls[7].head_sha = head
    model.script(lambda b: True, text("Hi."))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
    )

    assert run.returncode == 2, run.stdout + run.stderr
    (comment,) = github.comments_on(7)
    body = comment["body"]
    assert "every affected Eval passes.yaml" in body, "the problem is shown"
    headings = [line for line in body.splitlines() if HEADING.match(line)]
    assert headings == ["## ❌ evalward: this pull request's resources do not load"], headings
    summary = [line for line in run.summary.splitlines() if HEADING.match(line)]
    assert all(" evalward: " in line[:20] for line in summary), summary
