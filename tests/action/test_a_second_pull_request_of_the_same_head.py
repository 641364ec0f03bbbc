"""A second pull request from the same head, into a branch whose Evals are looser.

A check belongs to a commit, not to a pull request, and GitHub counts the latest of a name. The
head fails its gate into main; its author pushes a branch off main whose fixture checks
nothing that can fail and opens a second pull request of the same head into it. That gate
passes, and had it written its check under the gate's name, the head's required check would
read green for the pull request into main. A gate into a branch other than the default one
names it, so the check main's protection requires is only ever a gate into main's. It runs as
the runner runs the action: a real repository, the fake GitHub API and the scripted model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_script import text
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_eval, greeting_fixture, model_change
from support.suite import provider_env

pytestmark = pytest.mark.hostile


def test_a_pass_into_a_looser_branch_is_not_the_check_main_requires(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    repo = GitRepo(tmp_path / "repo")
    base, _ = model_change(repo)  # feature: the greeter on a model that says "Bye." (main's
    # fixture wants "Hello": its gate into main fails)
    model.script(lambda body: body.get("model") == "gpt-4.1", text("Bye."))
    model.script(lambda body: True, text("Hello!"))
    head = repo.commit("docs", {"README.md": "hi\n"})
    repo.git("checkout", "-q", "-b", "stage", base)
    loose = documents(greeter_eval(), greeting_fixture("{ type: notContains, value: zzzz }"))
    stage = repo.commit("a fixture that checks nothing", {"evals/greeter.yaml": loose})
    repo.git("checkout", "-q", "feature")
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))  # the one into main
    github.add_pull(FakePull(number=8, head_sha=head, base_sha=stage, base_ref="stage"))
    event = pull_request_event(github.repository, 8, stage, head)
    event["pull_request"]["base"]["ref"] = "stage"

    into_stage = run_action(
        repo.path, github, event, env=provider_env(model), inputs={"check-run": "true"}
    )

    assert into_stage.returncode == 0, into_stage.stdout + into_stage.stderr
    on_head = [(c["name"], c["conclusion"]) for c in github.check_runs if c["head_sha"] == head]
    assert on_head == [("evalward (evals/gate) into stage", "success")], on_head
