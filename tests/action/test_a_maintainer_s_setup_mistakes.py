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


def with_base_template(repo: GitRepo, github: FakeGitHub, template: bytes) -> tuple[str, str]:
    """Pull request 7, its base branch holding the comment template `ci/comment.md.j2`."""
    make_pr(repo, github)
    repo.checkout("main")
    (repo.path / "ci").mkdir()
    (repo.path / "ci" / "comment.md.j2").write_bytes(template)
    base = repo.commit("our comment")
    repo.checkout("feature")
    repo.git("merge", "-q", "main", "-m", "merge main")
    head = repo.head()
    github.pulls[7].head_sha, github.pulls[7].base_sha = head, base
    return base, head


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


@pytest.mark.parametrize(
    ("template", "said"),
    [
        (b"Result:\n{% if %}\n", ":2 (of the base commit {base}): Expected an expression"),
        ("R\xe9sultat\n".encode("latin-1"), " (of the base commit {base}): not UTF-8 text"),
    ],
    ids=["does not parse", "not UTF-8"],
)
def test_a_comment_template_that_cannot_be_read_is_refused_before_any_model_call(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    template: bytes,
    said: str,
) -> None:
    """Once, it was found as the comment was rendered, after every run and its model calls."""
    base, head = with_base_template(repo, github, template)
    script_model(model, head_greets_well=True)

    run = gate(repo, github, base, head, env, **{"comment-template": "ci/comment.md.j2"})

    assert run.returncode == 2, run.stdout + run.stderr
    where = "::error::comment-template ci/comment.md.j2" + said.format(base=base[:12])
    assert run.stderr.startswith(where), run.stderr
    assert run.stderr.rstrip().endswith(
        "fix the template or clear the `comment-template` input to use the built-in one"
    )
    assert model.requests == []
    assert github.comments_on(7) == []
    assert run.outputs == {"result": "incomplete"}


def test_a_comment_template_that_fails_as_it_renders_is_named_at_its_line(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """An undefined attribute has no line of Jinja's own: once it was named at line `?`.
    The runs are done by then, and their files are written before the job ends."""
    base, head = with_base_template(repo, github, b"Result:\n\n{{ ctx.verdict_text }}\n")
    script_model(model, head_greets_well=True)

    run = gate(repo, github, base, head, env, **{"comment-template": "ci/comment.md.j2"})

    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.startswith(
        f"::error::comment-template ci/comment.md.j2:3 (of the base commit {base[:12]}): "
    ), run.stderr
    assert "has no attribute 'verdict_text'" in run.stderr
    assert ":?" not in run.stderr
    assert (run.output_dir / "results.json").is_file()
    assert run.outputs["result"] == "incomplete"


def test_an_event_the_action_does_not_serve_is_refused_saying_how_to_leave_it_out(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A workflow that also listens to `issue_comment` (for a command of its own) fails its
    evalward step there: the message says which events it serves, and what to change."""
    make_pr(repo, github)
    payload = {"action": "created", "repository": {"full_name": github.repository}}

    run = run_action(repo.path, github, payload, env=env, event_name="issue_comment")

    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.strip() == (
        "::error::GITHUB_EVENT_NAME=issue_comment: evalward runs on pull_request, "
        "merge_group, workflow_dispatch, schedule and push events (pull_request_target only "
        "with `allow-untrusted-head: true`), and has nothing to gate on `issue_comment`; take "
        "`issue_comment` out of the workflow's `on:`, or skip the evalward step on it (`if: "
        "github.event_name != 'issue_comment'`)"
    )
    assert model.requests == []
    assert run.outputs == {"result": "incomplete"}
    assert "stopped before a decision" in run.summary
