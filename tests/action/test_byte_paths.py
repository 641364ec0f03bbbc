"""File names are bytes: a pull request chooses them, so they may hold newlines, quotes,
leading dashes or bytes that are not UTF-8. None of it may change what evalward reads from git,
and none may crash a run. Each pull request below also breaks its agent (see
test_gate_evasion), so the only right outcome is a failing gate."""

from __future__ import annotations

import os

import pytest

from action.test_gate_evasion import assert_fails_below_threshold, comment, gate, hostile_pr
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.gitrepo import GitRepo
from support.suite import GREETING_FIXTURE, make_pr, script_model

pytestmark = pytest.mark.hostile

WEAK_GREETING = GREETING_FIXTURE.replace("    - { type: toolNotCalled, tool: lookup_order }\n", "")


def test_a_newline_in_a_file_name_does_not_inject_an_object_name_into_the_base(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """`evals/a\\nHEAD:node_modules/w.yaml` once asked git for a second object, the PR's own
    weak fixture, which then answered for the base's `greeting.yaml`."""
    base, head = hostile_pr(
        repo,
        github,
        {
            "evals/a\nHEAD:node_modules/w.yaml": "x: 1\n",
            "node_modules/w.yaml": WEAK_GREETING,
            "evals/fixtures/greeting.yaml": WEAK_GREETING,
        },
    )
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    body = assert_fails_below_threshold(run, github)
    assert "fixture greeting: spec.assertions changed" in body


@pytest.mark.parametrize(
    "name",
    [b"evals/caf\xe9.yaml", b"evals/\xff\xfe.txt", b"agents/\x80/notes.md"],
    ids=["latin-1 yaml", "binary name", "folder"],
)
def test_a_file_name_that_is_not_utf8_does_not_crash_the_gate(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    name: bytes,
) -> None:
    base, _ = make_pr(repo, github)
    path = os.fsencode(repo.path) + b"/" + name
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as stream:
        stream.write(b"notes: 1\n")
    head = repo.commit("a file from another system")
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    assert_fails_below_threshold(run, github)
    assert "internal error" not in run.stderr


def test_a_name_that_cannot_be_shown_is_shown_escaped_in_the_problems_it_has(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, _ = make_pr(repo, github)
    name = b"evals/caf\xe9\n" + "\u202e.yaml".encode()
    with open(os.fsencode(repo.path) + b"/" + name, "wb") as stream:
        stream.write(b"apiVersion: evalward.dev/v1\nkind: [\n")
    repo.write({"evals/a\nb.yaml": WEAK_GREETING})  # defines `greeting` a second time
    head = repo.commit("a broken file of an odd name")
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    assert '"evals/caf\\xe9\\n\\u202e.yaml":' in run.stderr
    assert "duplicate EvalFixture 'greeting': also defined at \"evals/a\\nb.yaml\":4" in run.stderr
    body = comment(github)
    assert "this pull request's resources do not load" in body
    assert "caf\\\\xe9" in body and "\u202e" not in body
