"""A pull request whose base branch changes is gated again against its new base: the check
a gate against another branch left on the head (where the pull request's own Evals decide,
the branch having none of its own) never stands for the base branch it is merged into.

The workflow `evalward init` writes is the user's real path: GitHub starts it for the
pull_request actions it lists, and retargeting a pull request is the `edited` action alone
(no `synchronize`: the head does not change)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_script import text
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.clirun import evalward
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture
from support.suite import provider_env

pytestmark = pytest.mark.hostile

STRICT = greeting_fixture("{ type: contains, value: Hello }")
LENIENT = greeting_fixture("{ type: contains, value: Bye }")


def gated_actions(tmp_path: Path) -> list[str]:
    """The pull_request actions the workflow of `evalward init` runs on."""
    project = GitRepo(tmp_path / "project")
    project.commit("start", {"README.md": "a project\n"})
    done = evalward("init", cwd=project.path)
    assert done.returncode == 0, done.stderr
    workflow = yaml.safe_load((project.path / ".github/workflows/evals.yml").read_text())
    on = workflow.get("on", workflow.get(True))
    return list(on["pull_request"]["types"])


def test_a_head_green_against_another_branch_is_gated_again_once_retargeted(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    repo = GitRepo(tmp_path / "repo")
    old = repo.commit("an old release branch: no agent, no Eval", {"README.md": "v0\n"})
    agent = greeter_agent("openai/%s")
    main = repo.commit(
        "a greeter and its Eval",
        {
            "agents/greeter.yaml": agent % "gpt-4.1-mini",
            "evals/greeter.yaml": documents(greeter_eval(), STRICT),
        },
    )
    repo.branch("feature")
    # a worse model, and the fixture rewritten to pass it
    head = repo.commit(
        "another model",
        {
            "agents/greeter.yaml": agent % "gpt-4.1",
            "evals/greeter.yaml": documents(greeter_eval(), LENIENT),
        },
    )
    model.script(lambda body: body.get("model") == "gpt-4.1", text("Bye."))
    model.script(lambda body: True, text("Hello!"))
    env, inputs = provider_env(model), {"check-run": "true"}

    # the author points the pull request at the old branch and pushes: its own Evals decide
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=old, base_ref="release-0"))
    against_old = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, old, head),
        env=env,
        inputs=inputs,
        run_dir=tmp_path / "run-1",
    )
    assert against_old.returncode == 0, against_old.stdout + against_old.stderr

    # then points it back at main: GitHub sends `edited`, and runs the workflow if it listens
    github.pulls[7].base_sha, github.pulls[7].base_ref = main, "main"
    if "edited" in gated_actions(tmp_path):
        run_action(
            repo.path,
            github,
            pull_request_event(github.repository, 7, main, head, action="edited"),
            env=env,
            inputs=inputs,
            run_dir=tmp_path / "run-2",
        )

    latest = [s for s in github.statuses if s["sha"] == head][-1]
    assert latest["state"] == "failure", (
        "the head's evalward status is still the one its gate against release-0 left: "
        f"{latest['state']} ({latest['description']})"
    )
