"""A merge queue's group queued behind others: its parent holds the pull requests ahead of
it, not yet merged, so the group is gated against the base branch's tip as GitHub's API has
it. What a pull request ahead committed (where the provider keys go, a regression of its
own) is the group's change, never its base, and the label of the last pull request covers
its own head alone."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import (
    ActionRun,
    merge_group_event,
    pull_request_event,
    queue_group,
    run_action,
    run_group,
)
from support.gitrepo import GitRepo
from support.suite import PROVIDER_KEY, make_pr, script_model

pytestmark = pytest.mark.hostile

LABEL = "force-eval-bypass"
MAINTAINER = "maintainer"


def queued_behind(repo: GitRepo, github: FakeGitHub, ahead: dict[str, str]) -> tuple[str, str, str]:
    """Pull request 6 (`ahead`, from main) queued first and pull request 7 (make_pr's, the
    support bot's new prompt) behind it: main's tip, the group of 6 and the group of 7, whose
    parent is the group of 6. GitHub's API has main at its tip: nothing has merged."""
    base, head = make_pr(repo, github)
    repo.checkout("main")
    repo.branch("ahead")
    ahead_head = repo.commit("the pull request queued first", ahead)
    github.add_pull(FakePull(number=6, head_sha=ahead_head, base_sha=base, head_ref="ahead"))
    first = queue_group(repo, base, ahead_head, number=6)
    second = queue_group(repo, first, head, number=7)
    github.branches["main"] = base
    return base, first, second


def gate_second(
    repo: GitRepo, github: FakeGitHub, first: str, second: str, env: dict[str, str]
) -> ActionRun:
    """The group of pull request 7, its parent the group of 6, gated with a check run."""
    event = merge_group_event(github.repository, 7, first, second)
    return run_group(repo, github, event, env, {"check-run": "true"})


def test_a_pull_request_queued_ahead_does_not_say_where_the_keys_of_the_groups_behind_it_go(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Pull request 6 points the provider at a server of its own in `evalward.yaml`; its
    group fails or is taken out, but the group behind it, read from its parent, would have
    sent the key there. The provider settings are main's: the key goes where main says."""
    thief = ScriptedModelServer()
    try:
        script_model(model, head_greets_well=True)
        script_model(thief, head_greets_well=True)
        stolen = f"providers:\n  openai:\n    baseUrl: {thief.base_url}\n"
        _, first, second = queued_behind(repo, github, {"evalward.yaml": stolen})

        run = gate_second(repo, github, first, second, env)

        assert run.returncode == 0, run.stdout + run.stderr
        assert thief.calls == [], [c.headers.get("authorization") for c in thief.calls]
        assert model.requests_mentioning("HEAD-V2")
        assert all(c.headers.get("authorization") == f"Bearer {PROVIDER_KEY}" for c in model.calls)
    finally:
        thief.close()


def test_the_group_behind_a_regressing_pull_request_fails_its_check(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Pull request 6 breaks the support bot and 7 behind it only adds a note. A queue that
    merges a group once its last commit's check passes ("Only merge non-failing pull
    requests" off) would merge 6 with 7 on the check of 7's group: that check gates all the
    group merges onto main, 6's regression with it."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    first = queue_group(repo, base, head)  # pull request 7 here breaks the agent
    repo.checkout("main")
    repo.branch("note")
    note = repo.commit("a note", {"NOTES.md": "hello\n"})
    github.add_pull(FakePull(number=8, head_sha=note, base_sha=base, head_ref="note"))
    second = queue_group(repo, first, note, number=8)
    github.branches["main"] = base

    run = run_group(
        repo,
        github,
        merge_group_event(github.repository, 8, first, second),
        env,
        {"check-run": "true"},
    )

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    recorded = run.results()["run"]
    assert (recorded["base_sha"], recorded["head_sha"]) == (base, second)
    (check,) = github.check_runs
    assert (check["head_sha"], check["conclusion"]) == (second, "failure")


def test_the_label_of_the_last_pull_request_does_not_let_the_ones_ahead_of_it_through(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A maintainer labels pull request 7 on its head; 6 is queued ahead of it. Its group is
    7's head merged onto its parent, but it merges 6 onto main too, which the label does not
    cover: refused, saying so."""
    script_model(model, head_greets_well=False)
    base, first, second = queued_behind(repo, github, {"NOTES.md": "hello\n"})
    head = github.pulls[7].head_sha
    github.permissions[MAINTAINER] = "maintain"
    github.add_label(7, LABEL, actor=MAINTAINER)
    labeled = pull_request_event(
        github.repository, 7, base, head, [LABEL], action="labeled", label=LABEL, sender=MAINTAINER
    )
    repo.git("checkout", "-q", "--detach", head)
    assert run_action(repo.path, github, labeled, env=env).outputs["result"] == "bypassed"
    repo.git("checkout", "-q", "--detach", second)

    run = gate_second(repo, github, first, second, env)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    record = json.loads(run.outputs["audit"])
    assert (record["outcome"], record["head_sha"]) == ("refused", second)
    assert record["reason"] == (
        f"the group's commit {second[:12]} merges the pull requests queued ahead of pull "
        f"request #7 too (its parent {first[:12]} is not the base branch's tip {base[:12]}): "
        f"the label covers #7's head {head[:12]} alone; queue it again once they have merged"
    )
