"""A maintainer sets the action up from docs/github.md and gets a setting wrong: each mistake is
told once, naming the input or file (and its line), what was expected and how to put it right,
before the model is called where it can be found then; never read as another setting that runs
something else. Each test drives the action's entry point as GitHub runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import SHARD_KEY, ActionRun, pull_request_event, run_action
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


def test_a_dispatch_naming_pull_request_0_is_refused_not_run_as_a_manual_run(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Once, `0` ran every Eval on the current ref and decided on them, as an empty `pr`
    does, where the action's own input `pr: 0` is refused."""
    make_pr(repo, github)
    script_model(model, head_greets_well=True)
    payload = json.loads((WEBHOOKS / "workflow_dispatch.json").read_text())
    payload["repository"]["full_name"] = github.repository
    payload["inputs"] = {"pr": "0"}

    run = run_action(repo.path, github, payload, env=env, event_name="workflow_dispatch")

    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.strip() == (
        "::error::workflow_dispatch input `pr`: expected a pull request number (1 or more), "
        "got '0'; leave it empty to run every Eval on the current ref"
    )
    assert model.requests == []
    assert run.outputs == {"result": "incomplete"}


def test_shard_and_merge_given_to_one_job_are_refused_naming_both(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Once, `merge` ran and `shard` was dropped without a word: a shard job given both
    failed on parts it never meant to merge."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)

    run = gate(
        repo,
        github,
        base,
        head,
        env,
        shard="1/2",
        merge=".evalward/shards/shard-*-of-2.json",
        **{"shard-key": SHARD_KEY},
    )

    assert run.returncode == 2, run.stdout + run.stderr
    said = run.stderr.strip()
    assert said.startswith("::error::action inputs `shard` and `merge` are both given"), said
    assert "Give each matrix job `shard` alone and the job after them `merge` alone" in said
    assert "no file matches" not in said and "Traceback" not in said
    assert model.requests == []
    assert run.outputs == {"result": "incomplete"}
