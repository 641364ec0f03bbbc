"""An agent's result-cache key covers where each symbolic link it depends on leads, also
when it leads out of the repository: a pull request that only points such a link (in the
agent's watched folder) at another file changes the agent, its head runs, and no result of
the base (the link to the first file) answers for it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from action.test_gate_evasion import ANSWER_READER, WATCHING, gate
from fakes.github_api import FakeGitHub, FakePull
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

ISOLATION = {"agent-isolation": "off"}  # the reader runs this interpreter


@pytest.fixture
def env() -> dict[str, str]:
    return {}


def test_a_link_out_of_the_repository_pointed_elsewhere_is_run_not_served_the_base_s_pass(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str], tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "good.txt").write_text("GOOD\n")
    (outside / "bad.txt").write_text("BAD\n")
    repo.write(
        {
            "agents.yaml": WATCHING.format(python=json.dumps(sys.executable)),
            "agent/reader.py": ANSWER_READER,
            ".gitignore": ".evalward/\n",
        }
    )
    os.symlink(outside / "good.txt", repo.path / "agent" / "answer.txt")
    base = repo.commit("a reader of a file its link leads to")
    repo.branch("feature")
    os.unlink(repo.path / "agent" / "answer.txt")
    os.symlink(outside / "bad.txt", repo.path / "agent" / "answer.txt")
    head = repo.commit("the link leads to another file")
    assert repo.git("diff", "--name-status", base, head).split() == ["M", "agent/answer.txt"]
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = gate(repo, github, base, head, env, **ISOLATION)

    assert "reader" in run.results()["changedAgents"], run.stdout + run.stderr
    head_run = next(f for f in run.results()["fixtures"] if f["side"] == "head")
    assert not head_run["cached"], head_run
    assert head_run["output"] == "BAD", head_run
    assert run.returncode == 1, run.stdout + run.stderr
