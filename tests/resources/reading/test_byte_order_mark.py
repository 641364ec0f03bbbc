"""A resource file saved "UTF-8 with BOM" (a byte-order mark, U+FEFF, before its first
character, as some editors write it) reads as the same file without it, as YAML allows and
the mock script always did: it was `unknown field '\\ufeff# The agent under test'`, or
`found no apiVersion` and a knock-on problem at every Eval and fixture of the agent."""

from __future__ import annotations

import pytest

from support.clirun import evalward, initialised
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

BOM = "\ufeff"


def with_bom(repo: GitRepo, name: str, strip_comments: bool = False) -> None:
    """Rewrite the file `name` of `repo` with a byte-order mark before its first character
    (`strip_comments`: and its leading comment lines dropped, so its first line is a key)."""
    path = repo.path / name
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    while strip_comments and lines[0].startswith("#"):
        lines.pop(0)
    path.write_text(BOM + "".join(lines), encoding="utf-8")


@pytest.mark.parametrize("strip_comments", [False, True], ids=["then a comment", "then a key"])
def test_a_resource_file_starting_with_a_byte_order_mark_validates_and_runs(
    repo: GitRepo, strip_comments: bool
) -> None:
    initialised(repo)
    for name in ("agents/assistant.yaml", "evals/assistant.yaml", "evalward.yaml"):
        with_bom(repo, name, strip_comments)
    repo.commit("saved with a BOM")
    assert (repo.path / "agents/assistant.yaml").read_bytes().startswith(b"\xef\xbb\xbf")

    validated = evalward("validate", ".", cwd=repo.path)
    assert validated.returncode == 0, validated.stderr
    assert validated.stdout == "1 agents, 2 fixtures, 1 evals OK\n"
    script = "evals/mock-replies.yaml"
    run = evalward("run", ".", "--mock-script", script, "--no-history", "--no-cache", cwd=repo.path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 runs planned" in run.stderr


def test_a_problem_in_a_file_with_a_byte_order_mark_is_at_its_own_line_and_column(
    repo: GitRepo,
) -> None:
    initialised(repo)
    agent = repo.path / "agents/assistant.yaml"
    agent.write_text(BOM + "kindz: 1\n" + agent.read_text(encoding="utf-8"), encoding="utf-8")
    repo.commit("a typo in a file with a BOM")

    done = evalward("validate", ".", cwd=repo.path)

    assert done.returncode == 2
    first = done.stderr.splitlines()[1]
    assert first.startswith("evalward:   agents/assistant.yaml:1:1: kindz: unknown field 'kindz'")
    assert "\ufeff" not in done.stderr
