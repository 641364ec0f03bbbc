"""A push that moves a pull request's head while an earlier run still gates the older one.

Without a `concurrency` group that cancels it, the older run finishes after the newer one
and would edit the one comment to speak of a head that is no longer the pull request's: a
pass of the old head over the newer head's failure. Its check run is written on its own
commit, as ever; the comment is left to the newer head's run. Run as the runner runs the
action: a real repository, the fake GitHub API and the scripted model server, which moves
the head while the runs are under way.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import make_pr, script_model

pytestmark = pytest.mark.e2e

NEWER = "f" * 40
"""The head a push moved the pull request to, as GitHub's API says it."""


def _gate(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str], base: str, head: str
) -> ActionRun:
    """Pull request 7 gated from `base` to `head`, with a check run and a comment."""
    event = pull_request_event(github.repository, 7, base, head)
    inputs = {"check-run": "true", "comment": "always"}
    return run_action(repo.path, github, event, env=env, inputs=inputs)


def test_a_run_whose_head_a_push_moved_on_writes_its_check_and_leaves_the_comment(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)

    def pushed(body: dict[str, Any]) -> bool:
        """The head's greeting run: the pull request's head moves on meanwhile."""
        github.pulls[7].head_sha = NEWER
        return "HEAD-V2" in json.dumps(body) and "12345" not in json.dumps(body)

    model.script(pushed, text("Hello! What can I do for you?"))
    script_model(model, head_greets_well=True)

    run = _gate(repo, github, env, base, head)

    assert run.returncode == 0, run.stdout + run.stderr
    assert github.comments_on(7) == [], "the older head's comment over the newer one's"
    assert [(c["head_sha"], c["conclusion"]) for c in github.check_runs] == [(head, "success")]
    assert f"head moved on to {NEWER[:12]}" in run.stdout, run.stdout
    assert github.contract_violations == []


def test_control_a_head_that_stayed_gets_its_comment(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)

    run = _gate(repo, github, env, base, head)

    assert run.returncode == 0, run.stdout + run.stderr
    assert "every affected Eval passes" in github.comments_on(7)[0]["body"]
    assert "moved on" not in run.stdout
