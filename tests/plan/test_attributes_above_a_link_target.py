"""A `.gitattributes` changes every agent that reads a file below its folder, also through a
symbolic link: the file a link the agent watches leads to is checked out as that folder's
attributes say, so a pull request that only adds them there changes the agent."""

from __future__ import annotations

import json
import os
import sys

import pytest

from action.test_gate_evasion import ANSWER_READER, WATCHING, gate
from fakes.github_api import FakeGitHub, FakePull
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile


@pytest.fixture
def env() -> dict[str, str]:
    return {}


def test_a_gitattributes_above_the_file_a_watched_link_leads_to_changes_the_agent(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    repo.write(
        {
            "agents.yaml": WATCHING.format(python=json.dumps(sys.executable)),
            "agent/reader.py": ANSWER_READER,
            "data/answer.txt": "GOOD\n",
        }
    )
    os.symlink("../data/answer.txt", repo.path / "agent" / "answer.txt")
    base = repo.commit("a reader of a file it links to")
    repo.branch("feature")
    attributes = "answer.txt working-tree-encoding=UTF-16LE-BOM\n"
    repo.write({"data/.gitattributes": attributes})
    repo.git("add", "data/.gitattributes")  # `add -A` would read answer.txt as UTF-16
    repo.git("commit", "-q", "-m", "how the linked file is checked out")
    head = repo.head()
    (repo.path / "data" / "answer.txt").unlink()
    repo.git("checkout", "--", "data/answer.txt")  # as actions/checkout writes it
    assert (repo.path / "data" / "answer.txt").read_bytes().startswith(b"\xff\xfe")
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = gate(repo, github, base, head, env, **{"agent-isolation": "off"})

    assert "reader" in run.results()["changedAgents"], run.stdout + run.stderr
    head_run = next(f for f in run.results()["fixtures"] if f["side"] == "head")
    assert head_run["status"] != "pass"
    assert run.returncode == 1, run.stdout + run.stderr
