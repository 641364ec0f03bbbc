"""A `labeled` run's own payload shows the head the bypass label was applied on only when it
is the event of the label that stands: the same sender, made no earlier than that event. A
run still going on when the label was removed and applied again by someone else, or a re-run
of an old `labeled` run (GitHub replays its payload), bypasses nothing, and stores no record a
later run could bypass from; nor does a label in other capitals than the `bypass-label` input,
whose refusal says which spelling to give it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_script import text
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.greeter import model_change
from support.suite import provider_env

pytestmark = pytest.mark.hostile

LABEL = "force-eval-bypass"


def gate(
    repo: GitRepo, github: FakeGitHub, event: dict[str, Any], model: ScriptedModelServer, run: Path
) -> ActionRun:
    return run_action(
        repo.path,
        github,
        event,
        env=provider_env(model),
        inputs={"check-run": "true"},
        run_dir=run,
    )


def bypass_records(github: FakeGitHub) -> list[str]:
    return [
        line
        for comment in github.comments_on(7)
        for line in comment["body"].splitlines()
        if "evalward-bypass-record" in line
    ]


def test_a_run_of_one_user_s_label_does_not_borrow_a_later_label_of_another(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """A triager labels the head `bad`; while that run goes on the label is taken off, the
    author pushes another head, and a maintainer labels that one. The triager's run bypasses
    nothing in the maintainer's name, and a force-push back to `bad` is not bypassed either."""
    repo = GitRepo(tmp_path / "repo")
    base, bad = model_change(repo)
    reviewed = repo.commit("what the maintainer reviewed", {"README.md": "reviewed\n"})
    github.add_pull(FakePull(number=7, head_sha=bad, base_sha=base))
    github.permissions["triager"] = "triage"
    github.permissions["maintainer"] = "admin"
    github.add_label(7, LABEL, "triager", at="2026-11-20T10:00:00Z")
    relabelled: list[bool] = []

    def meanwhile(body: dict[str, Any]) -> bool:
        """The head's run is under way when the maintainer labels another head."""
        if body.get("model") != "gpt-4.1":
            return False
        if not relabelled:
            relabelled.append(True)
            github.remove_label(7, LABEL, "triager", at="2026-11-20T10:01:00Z")
            github.pulls[7].head_sha = reviewed
            github.add_label(7, LABEL, "maintainer", at="2026-11-20T10:05:00Z")
        return True

    model.script(meanwhile, text("Bye."))
    model.script(lambda body: True, text("Hello!"))
    event = pull_request_event(
        github.repository, 7, base, bad, [LABEL], action="labeled", label=LABEL,
        sender="triager", updated_at="2026-11-20T10:00:00Z",
    )  # fmt: skip

    run = gate(repo, github, event, model, tmp_path / "runner")

    assert relabelled
    assert run.outputs["result"] == "fail", run.stdout
    assert run.returncode == 1, run.stdout + run.stderr
    refused = json.loads(run.outputs["audit"])
    assert refused["outcome"] == "refused" and refused["actor"] == "maintainer"
    assert "it is the label triager applied" in refused["reason"]
    assert "applied by maintainer" in refused["reason"]
    assert [c["conclusion"] for c in github.check_runs] == ["failure"]
    assert bypass_records(github) == [], "no record of `bad` under the maintainer's label"

    github.pulls[7].head_sha = bad  # the author force-pushes `bad` back
    pushed = pull_request_event(github.repository, 7, base, bad, [LABEL])
    again = gate(repo, github, pushed, model, tmp_path / "runner-2")

    assert again.outputs["result"] == "fail", again.stdout
    assert [c["conclusion"] for c in github.check_runs] == ["failure", "failure"]


def test_a_re_run_of_an_old_labeled_run_does_not_revive_a_withdrawn_label(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The maintainer labeled `bad`, took the label off, and later labeled another head. The
    author force-pushes `bad` back and re-runs the first `labeled` run: GitHub replays its
    payload (head `bad`, the maintainer its sender), made before the label that stands."""
    repo = GitRepo(tmp_path / "repo")
    base, bad = model_change(repo)
    github.add_pull(FakePull(number=7, head_sha=bad, base_sha=base))
    github.permissions["maintainer"] = "admin"
    github.add_label(7, LABEL, "maintainer", at="2026-11-20T10:00:00Z")
    github.remove_label(7, LABEL, "maintainer", at="2026-11-20T11:00:00Z")
    github.add_label(7, LABEL, "maintainer", at="2026-11-21T09:00:00Z")  # on another head
    model.script(lambda body: body.get("model") == "gpt-4.1", text("Bye."))
    model.script(lambda body: True, text("Hello!"))
    replay = pull_request_event(
        github.repository, 7, base, bad, [LABEL], action="labeled", label=LABEL,
        sender="maintainer", updated_at="2026-11-20T10:00:00Z",
    )  # fmt: skip

    run = gate(repo, github, replay, model, tmp_path / "runner")

    assert run.outputs["result"] == "fail", run.stdout
    assert run.returncode == 1, run.stdout + run.stderr
    refused = json.loads(run.outputs["audit"])
    assert refused["outcome"] == "refused" and refused["actor"] == "maintainer"
    assert "it was made at 2026-11-20T10:00:00Z, before the label" in refused["reason"]
    assert any(
        line.startswith("::warning::evalward bypass refused") and "a re-run" in line
        for line in run.stdout.splitlines()
    )
    assert [c["conclusion"] for c in github.check_runs] == ["failure"]
    assert [s["state"] for s in github.statuses] == ["failure"]
    assert bypass_records(github) == []


def test_a_label_in_other_capitals_than_the_input_is_refused_saying_so(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """GitHub holds one label of a name whatever its case, so a repository whose label reads
    `Force-Eval-Bypass` cannot make the input's `force-eval-bypass` too: a maintainer's label
    is never honoured by another spelling (the gate stays red), and the refusal says which
    spelling to give the input, in the comment, the log and the audit record."""
    repo = GitRepo(tmp_path / "repo")
    base, bad = model_change(repo)
    other = "Force-Eval-Bypass"
    github.add_pull(FakePull(number=7, head_sha=bad, base_sha=base))
    github.permissions["maintainer"] = "admin"
    github.add_label(7, other, "maintainer", at="2026-11-21T09:00:00Z")
    model.script(lambda body: body.get("model") == "gpt-4.1", text("Bye."))
    model.script(lambda body: True, text("Hello!"))
    labeled = pull_request_event(
        github.repository, 7, base, bad, [other], action="labeled", label=other,
        sender="maintainer", updated_at="2026-11-21T09:00:00Z",
    )  # fmt: skip

    run = gate(repo, github, labeled, model, tmp_path / "runner")

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail", run.stdout
    refused = json.loads(run.outputs["audit"])
    assert (refused["outcome"], refused["actor"], refused["label"]) == (
        "refused",
        "maintainer",
        other,
    )
    assert refused["reason"].startswith(
        "the action input bypass-label is 'force-eval-bypass', written in other capitals"
    ), refused["reason"]
    assert "set the input bypass-label to 'Force-Eval-Bypass'" in refused["reason"]
    (comment,) = github.comments_on(7)
    assert (
        "The `Force-Eval-Bypass` label is on this pull request but does not count: the action "
        "input bypass-label is 'force-eval-bypass', written in other capitals"
    ) in comment["body"], comment["body"]
    assert [c["conclusion"] for c in github.check_runs] == ["failure"]
    assert bypass_records(github) == []
