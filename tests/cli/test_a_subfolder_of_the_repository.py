"""The commands that read a repository, run from a folder inside it, as git is: each reads the
whole repository from the top of its working tree. From `prompts/`, `run` passed as a
repository that defines no Eval; from `agents/`, every command said the `systemFile` it names
did not exist; with `--base`, that the base branch defines no Eval."""

from __future__ import annotations

import json

import pytest

from support.clirun import evalward, initialised
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

MOCK = "../evals/mock-replies.yaml"
"""The mock script `evalward init` writes, as named from one of its sibling folders."""


@pytest.fixture
def started(repo: GitRepo) -> GitRepo:
    return initialised(repo)


def test_run_in_a_folder_that_holds_no_definition_runs_the_repository_s_evals(
    started: GitRepo,
) -> None:
    prompts = started.path / "prompts"

    done = evalward("run", "--mock-script", MOCK, "--output-dir", "out", cwd=prompts)

    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((prompts / "out" / "results.json").read_text(encoding="utf-8"))
    assert results["result"] == "pass"
    assert {e["eval"] for e in results["evals"]} == {"assistant-eval"}
    assert (started.path / ".evalward" / "status" / "assistant-eval.json").is_file()
    assert not (prompts / ".evalward").exists()  # kept at the top, where the next run looks


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (("validate", "--mock-script", MOCK), "1 agents, 2 fixtures, 1 evals OK"),
        (("plan",), "assistant-eval"),
        (("status",), "assistant-eval"),
    ],
)
def test_each_command_in_a_folder_of_definitions_reads_the_paths_they_name_from_the_top(
    started: GitRepo, command: tuple[str, ...], shown: str
) -> None:
    done = evalward(*command, cwd=started.path / "agents")

    assert done.returncode == 0, done.stdout + done.stderr
    assert shown in done.stdout
    assert "does not exist" not in done.stderr


def test_run_with_a_base_in_a_folder_compares_the_repository_with_the_base(
    started: GitRepo,
) -> None:
    started.branch("warmer")
    prompt = started.path / "prompts" / "assistant.md"
    started.commit("A warmer prompt", {"prompts/assistant.md": prompt.read_text() + "Be warm.\n"})
    prompts = started.path / "prompts"

    done = evalward(
        "run", "--base", "main", "--mock-script", MOCK, "--output-dir", "out", cwd=prompts
    )

    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((prompts / "out" / "results.json").read_text(encoding="utf-8"))
    assert list(results["affectedEvals"]) == ["assistant-eval"]
    assert {e["side"] for e in results["evals"]} >= {"head"}
    assert "defines no Eval" not in done.stdout


def test_a_folder_named_from_the_top_is_the_repository_too(started: GitRepo) -> None:
    done = evalward(
        "validate", "agents", "--mock-script", "evals/mock-replies.yaml", cwd=started.path
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 agents, 2 fixtures, 1 evals OK" in done.stdout
