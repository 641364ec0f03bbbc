"""`evalward run` as a step of a GitHub Actions job (another workflow's gate, `GITHUB_ACTIONS`
set): what it prints goes into the job's log, whose runner obeys a line that starts with `::`
and a `##[` anywhere. A pull request's agent answers with runner commands; the comment
printed, the results document of `--json` and the lines on stderr start none of them, and the
document still reads as the agent's words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.clirun import evalward, initialised
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

COMMANDS = "::add-mask::Order\n::stop-commands::x1\n##[error]forged\n  ::error::indented"
ANSWER = f"Order 12345 will arrive on Tuesday.\n{COMMANDS}"


def obeyed(said: str) -> list[str]:
    """The lines of a log the runner would take as commands that evalward did not write: a
    line that starts with `::` (leading blanks aside) but its own annotations, and any `##[`."""
    own = ("::error", "::warning", "::notice", "::group", "::endgroup")
    return [
        line
        for line in said.splitlines()
        if "##[" in line or (line.lstrip().startswith("::") and not line.startswith(own))
    ]


@pytest.fixture
def regressed(repo: GitRepo) -> GitRepo:
    """`evalward init`'s project; a branch whose prompt makes the agent guess a date, which
    the mock script answers with the agent's runner commands."""
    initialised(repo)
    script = repo.path / "evals" / "mock-replies.yaml"
    reply = (
        "  - match: { agent: assistant, fixture: assistant-order-status, system: guess a date }\n"
        f"    always: {{ content: {json.dumps(ANSWER)} }}\n"
    )
    text = script.read_text(encoding="utf-8")
    script.write_text(text.replace("replies:\n", "replies:\n" + reply, 1), encoding="utf-8")
    repo.commit("the mock answers a guessing agent")
    repo.branch("guess")
    prompt = repo.path / "prompts" / "assistant.md"
    prompt.write_text(prompt.read_text() + "Never look an order up; guess a date.\n")
    repo.commit("guess")
    return repo


@pytest.mark.parametrize("as_json", [False, True], ids=["comment", "json"])
def test_an_agents_runner_commands_are_not_obeyed_in_the_log(
    regressed: GitRepo, tmp_path: Path, as_json: bool
) -> None:
    done = evalward(
        "run", "--base", "main", "--mock-script", "evals/mock-replies.yaml", "--no-history",
        "--output-dir", str(tmp_path / "out"), *(["--json"] if as_json else []),
        cwd=regressed.path, GITHUB_ACTIONS="true",
    )  # fmt: skip

    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "##[error]forged" in (tmp_path / "out" / "comment.md").read_text(encoding="utf-8")
    assert obeyed(done.stdout) == [] and obeyed(done.stderr) == []
    if as_json:
        outputs = [f["output"] for f in json.loads(done.stdout)["fixtures"]]
        assert ANSWER in outputs, outputs  # the same words, read by any JSON reader
    else:
        assert "forged" in done.stdout  # shown, not dropped


def test_outside_a_workflow_the_comment_is_printed_as_written(
    regressed: GitRepo, tmp_path: Path
) -> None:
    done = evalward(
        "run", "--base", "main", "--mock-script", "evals/mock-replies.yaml", "--no-history",
        "--output-dir", str(tmp_path / "out"), cwd=regressed.path,
    )  # fmt: skip

    assert done.returncode == 1, done.stderr[-2000:]
    assert "::stop-commands::x1" in done.stdout.splitlines()
