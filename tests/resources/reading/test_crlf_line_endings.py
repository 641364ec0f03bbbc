"""A repository checked out with CR LF line endings (Git for Windows' default,
`core.autocrlf=true`) reads as the same repository with LF: a resource file of several
documents (`---`) was read as one document whose data was the list of them, and every
resource in it was dropped without a word (`validate` counted fewer fixtures, `run` passed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from support.clirun import evalward, initialised
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


def crlf_clone(repo: GitRepo, tmp_path: Path) -> GitRepo:
    """A clone of `repo` checked out as Git for Windows does by default."""
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "-c", "core.autocrlf=true", f"file://{repo.path}", str(clone)],
        check=True,
    )
    return GitRepo(clone)  # (re-initialising a clone keeps it as it is)


def test_a_repository_checked_out_with_crlf_validates_and_runs_every_resource(
    repo: GitRepo, tmp_path: Path
) -> None:
    clone = crlf_clone(initialised(repo), tmp_path)
    assert b"\r\n---\r\n" in (clone.path / "evals/assistant.yaml").read_bytes()

    validated = evalward("validate", ".", cwd=clone.path)
    assert validated.returncode == 0, validated.stderr
    assert validated.stdout == "1 agents, 2 fixtures, 1 evals OK\n"
    script = "evals/mock-replies.yaml"
    run = evalward(
        "run", ".", "--mock-script", script, "--no-history", "--no-cache", cwd=clone.path
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 runs planned" in run.stderr


def test_a_problem_in_a_later_document_of_a_crlf_file_is_at_its_own_line(
    repo: GitRepo, tmp_path: Path
) -> None:
    initialised(repo)
    evals = repo.path / "evals/assistant.yaml"
    text = evals.read_text(encoding="utf-8")
    lines = text.splitlines()
    second = lines.index("---") + 1  # the second fixture's first line, 0-based
    evals.write_text(text.replace("kind: edge\n", "kind: edgy\n"), encoding="utf-8")
    repo.commit("a typo in the second fixture")
    at = lines.index("  kind: edge") + 1
    assert at > second
    clone = crlf_clone(repo, tmp_path)

    done = evalward("validate", ".", cwd=clone.path)

    assert done.returncode == 2, done.stdout + done.stderr
    assert f"evals/assistant.yaml:{at}:" in done.stderr, done.stderr
    assert "spec.kind" in done.stderr and "\r" not in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("mark", ["\x85", "\u2028", "\u2029"], ids=["NEL", "LS", "PS"])
def test_a_document_joined_by_another_line_break_after_a_comment_is_read(
    repo: GitRepo, mark: str
) -> None:
    """PyYAML reads a NEL, a line separator or a paragraph separator as a line break, and
    yaml-rs as text: a fixture joined by them after a comment was one comment line to the
    fast reader, and dropped without a word. Such a file is read by PyYAML alone."""
    initialised(repo)
    evals = repo.path / "evals/assistant.yaml"
    first, second, rest = evals.read_text(encoding="utf-8").split("\n---\n", 2)
    joined = f"{first}\n# the next fixture{mark}---{mark}" + second.replace("\n", mark)
    evals.write_text(f"{joined}\n---\n{rest}", encoding="utf-8")
    repo.commit("a fixture joined by another line break")

    validated = evalward("validate", ".", cwd=repo.path)

    assert validated.returncode == 0, validated.stderr
    assert validated.stdout == "1 agents, 2 fixtures, 1 evals OK\n"
