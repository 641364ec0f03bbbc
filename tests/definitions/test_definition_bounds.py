"""One side's definitions are read within a total bound (`MAX_DEFINITION_FILES` files,
`MAX_DEFINITION_BYTES` bytes), told before any file is parsed: a pull request that names one
large blob under many paths (git stores it once, the load would parse every copy) is refused
with one message naming the bound, what was found and what to do, through `evalward validate`
and through the action, whose check fails closed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalward.definitions.loader import MAX_DEFINITION_BYTES, MAX_DEFINITION_FILES
from evalward.resources.reading.yamlsource import MAX_FILE_BYTES
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.greeter import greeter_agent
from support.suite import make_pr

pytestmark = pytest.mark.hostile

LARGE_COPIES = MAX_DEFINITION_BYTES // MAX_FILE_BYTES + 3
"""Copies of one file just under the per-file bound that are over the total bound."""


def copies(folder: Path, text: str, count: int) -> None:
    """`count` paths under `folder` naming one file (hard links: written once on disk, as git
    stores the blob once)."""
    folder.mkdir(parents=True, exist_ok=True)
    first = folder / "copy-00000.yaml"
    first.write_text(text)
    for index in range(1, count):
        os.link(first, folder / f"copy-{index:05d}.yaml")


def large_agent() -> str:
    """An Agent just under the per-file bound: its system prompt is nearly all of it."""
    agent = greeter_agent("openai/gpt-4.1-mini", system="PROMPT")
    return agent.replace("PROMPT", "x" * (MAX_FILE_BYTES - len(agent) - 1024))


def refusal(stderr: str) -> str:
    """The one problem line of evalward's message, which is no traceback."""
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    head, *lines = [line.removeprefix("evalward:").strip() for line in stderr.splitlines()]
    assert head == "1 problem in evalward resources:", stderr
    (line,) = lines
    return line


@pytest.mark.parametrize(
    ("text", "count", "found"),
    [
        (large_agent(), LARGE_COPIES, f"{LARGE_COPIES:,} files and "),
        ("# not a definition\n", MAX_DEFINITION_FILES + 1, f"{MAX_DEFINITION_FILES + 1:,} files"),
    ],
    ids=["bytes", "files"],
)
def test_validate_refuses_definitions_beyond_the_total_bound_before_parsing_them(
    repo: GitRepo, text: str, count: int, found: str
) -> None:
    copies(repo.path / "agents", text, count)
    repo.commit("many copies of one file")

    done = evalward("validate", ".", cwd=repo.path)

    assert done.returncode == 2, done.stdout + done.stderr
    line = refusal(done.stderr)
    assert line.startswith(
        "evalward.yaml: roots: the YAML files searched in the working tree (the whole "
        f"repository) are {found}"
    ), line
    assert "over the 20,000 files and 64 MiB evalward reads" in line
    assert "under `roots`, or the other YAML files under `exclude`" in line


def test_the_gate_fails_closed_on_a_pull_request_of_many_copies_of_one_large_file(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, _ = make_pr(repo, github)
    copies(repo.path / "agents" / "bulk", large_agent(), LARGE_COPIES)
    head = repo.commit("many copies of one agent")
    github.pulls[7].head_sha = head

    event = pull_request_event(github.repository, 7, base, head)
    run = run_action(repo.path, github, event, env=env, inputs={"check-run": "true"})

    assert run.returncode == 2, run.stdout + run.stderr
    why = f"the YAML files searched in commit {head[:12]} (the whole repository) are"
    assert why in run.stderr and "over the 20,000 files and 64 MiB" in run.stderr
    assert "Traceback" not in run.stderr
    assert run.outputs["result"] == "fail"
    (comment,) = github.comments_on(7)
    assert "this pull request's resources do not load" in comment["body"]
    assert why in comment["body"]
    (check,) = github.check_runs  # nothing ran: no pass, and the job's own check fails
    assert check["conclusion"] == "cancelled" and why in check["output"]["summary"]
    assert [status["state"] for status in github.statuses] == ["failure"]
    assert why in run.summary
    assert not model.requests
