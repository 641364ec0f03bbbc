"""A maintainer sets the action up from docs/github.md and gets a setting wrong: each mistake is
told once, naming the input or file (and its line), what was expected and how to put it right,
before the model is called where it can be found then; never read as another setting that runs
something else. Each test drives the action's entry point as GitHub runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import make_pr, script_model

pytestmark = pytest.mark.e2e

WEBHOOKS = Path(__file__).resolve().parents[1] / "data" / "github" / "webhooks"


def gate(
    repo: GitRepo, github: FakeGitHub, base: str, head: str, env: dict[str, str], **inputs: str
) -> ActionRun:
    event = pull_request_event(github.repository, 7, base, head)
    return run_action(repo.path, github, event, env=env, inputs=inputs)


def test_a_base_cache_with_no_artifact_yet_says_how_to_upload_one_that_holds_the_cache(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The fix the warning gives is the upload docs/github.md shows: without
    `include-hidden-files: true`, actions/upload-artifact leaves `.evalward` out, and a
    maintainer who followed the warning would upload nothing and meet it on every gate."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)

    run = gate(repo, github, base, head, env, **{"base-cache": "evalward-cache"})

    assert run.returncode == 0, run.stdout + run.stderr
    warning = next(line for line in run.stdout.splitlines() if "action input `base-cache`" in line)
    assert warning.startswith("::warning::"), warning
    assert "GitHub has no such artifact" in warning
    assert "`name: evalward-cache`" in warning
    assert "`include-hidden-files: true`" in warning
    assert "`path: .evalward/cache` less `!.evalward/cache/environments`" in warning
    assert "`if: always() && github.event_name == 'push'`" in warning
    assert "`permissions: actions: read`" in warning
