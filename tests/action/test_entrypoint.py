"""A pull request cannot replace evalward: the image's entry point runs with the checkout as its
working directory, and a checkout that brings its own `evalward` package or a module evalward
imports (`yaml`, `regex`) must not be what runs as the gate."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import prepare, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import make_pr, provider_env, script_model

pytestmark = pytest.mark.hostile

EXIT_QUIETLY = "import os\nos._exit(0)\n"
IMPOSTORS = {
    "evalward/__init__.py": EXIT_QUIETLY,
    "evalward/__main__.py": EXIT_QUIETLY,
    "yaml.py": EXIT_QUIETLY,
    "regex.py": EXIT_QUIETLY,
}


@pytest.mark.parametrize("impostor", sorted(IMPOSTORS))
def test_a_pr_that_brings_its_own_evalward_or_yaml_still_fails_with_its_comment(
    impostor: str, repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, _ = make_pr(repo, github)
    # The same pull request also breaks its agent, so an honest gate fails.
    files = {impostor: IMPOSTORS[impostor]}
    if impostor == "evalward/__main__.py":
        files["evalward/__init__.py"] = ""  # a regular package, which would take precedence
    head = repo.commit("speed up the gate", files)
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=False)
    env = provider_env(model)
    event = pull_request_event(github.repository, 7, base, head)

    run = run_action(repo.path, github, event, env=env)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    (comment,) = github.comments_on(7)
    assert "support-bot-eval" in comment["body"]

    # What the entry point prevents: `python -m evalward` in the checkout runs the impostor.
    # (PyYAML and regex are imported only on other paths: PyYAML for the mock provider and
    # YAML the fast parser rejects, regex for a pattern the standard library's re may not
    # search; there, a yaml.py or a regex.py would run the same way.)
    if impostor in ("yaml.py", "regex.py"):
        return
    launch = prepare(repo.path, github, event, env=env, run_dir=repo.path.parent / "plain")
    plain = subprocess.run(
        [sys.executable, "-m", "evalward"],
        cwd=repo.path,
        env=launch.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert plain.returncode == 0 and plain.stdout == "", "the impostor did not run"
    assert len(github.comments_on(7)) == 1


@pytest.mark.parametrize("path", [None, ""], ids=["unset", "empty"])
def test_a_step_without_its_event_fails_saying_so_not_green_with_the_help(
    repo: GitRepo, path: str | None
) -> None:
    """The image's entry point runs with no arguments; where GITHUB_EVENT_PATH was not set
    (or set empty) it printed the command line's help and exited 0: the job went green."""
    env = {
        "PATH": "/usr/bin:/bin",
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_WORKSPACE": str(repo.path),
        "INPUT_MAX-COST-USD": "5",
    }
    if path is not None:
        env["GITHUB_EVENT_PATH"] = path
    done = subprocess.run(
        [sys.executable, "-I", "-m", "evalward"],
        cwd=repo.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "GITHUB_EVENT_PATH is not set, and GitHub sets it for every job's steps" in (
        done.stdout + done.stderr
    )
    assert "usage:" not in done.stdout + done.stderr
