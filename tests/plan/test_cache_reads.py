"""Result-cache keys hash exactly what a run reads, and change detection reads it the same
way: a submodule is the commit it points at, and a symbolic link to a folder inside a watched
folder is followed. Each pull request below breaks its agent only through such a path; a
cached pass of the earlier head (or of main) must not answer for it, and it must not be
skipped as "no Eval is affected"."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from action.test_gate_evasion import gate
from fakes.github_api import FakeGitHub, FakePull
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: reader }}
spec:
  runtime:
    command: [{python}, agent/reader.py]
  watch: ["agent/**", "vendor/**"]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: reader-eval }}
spec:
  targetAgent: reader
  fixtures: [reads]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: reads }}
spec:
  targetAgent: reader
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  assertions:
    - {{ type: contains, value: GOOD }}
"""
READER = """\
import json, pathlib, sys
sys.stdin.readline()
said = pathlib.Path({path!r}).read_text().strip()
print(json.dumps({{"type": "final", "content": said}}), flush=True)
"""
ISOLATION = {"agent-isolation": "off"}  # the reader runs this interpreter


@pytest.fixture
def env() -> dict[str, str]:
    return {}


def _reader(path: str) -> dict[str, str]:
    return {
        "agents.yaml": AGENT.format(python=json.dumps(sys.executable)),
        "agent/reader.py": READER.format(path=path),
        ".gitignore": ".evalward/\n",
    }


def _cached_pass_then(repo: GitRepo, github: FakeGitHub, base: str, env: dict[str, str]) -> None:
    """A first head that changes nothing the reader reads passes, and fills the cache."""
    repo.branch("feature")
    github.add_pull(FakePull(number=7, head_sha=base, base_sha=base))
    first = repo.commit(
        "touch", {"agent/reader.py": (repo.path / "agent/reader.py").read_text() + "# 1\n"}
    )
    github.pulls[7].head_sha = first
    passed = gate(repo, github, base, first, env, **ISOLATION)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "result cache not used" not in passed.stdout


def test_a_submodule_bump_is_run_not_served_from_the_cache(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str], tmp_path: Path
) -> None:
    library = GitRepo(tmp_path / "library")
    good = library.commit("good", {"answer.txt": "GOOD\n"})
    bad = library.commit("bad", {"answer.txt": "BAD\n"})
    library.git("checkout", "-q", good)
    repo.write(_reader("vendor/lib/answer.txt"))
    allow = ("-c", "protocol.file.allow=always")
    repo.git(*allow, "submodule", "add", "-q", str(library.path), "vendor/lib")
    repo.git("-C", "vendor/lib", "checkout", "-q", good)
    base = repo.commit("a reader of a submodule")
    _cached_pass_then(repo, github, base, env)

    repo.git("-C", "vendor/lib", "checkout", "-q", bad)
    head = repo.commit("bump the library")
    github.pulls[7].head_sha = head

    run = gate(repo, github, base, head, env, **ISOLATION)

    assert run.returncode == 1, run.stdout + run.stderr
    assert "result cache not used" not in run.stdout
    head_run = next(f for f in run.results()["fixtures"] if f["side"] == "head")
    assert not head_run["cached"] and head_run["output"] == "BAD"
    assert "watched path vendor/lib changed" in run.results()["changedAgents"]["reader"]


def test_an_edit_behind_a_linked_folder_inside_a_watched_folder_changes_the_agent(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    repo.write({**_reader("agent/lib/answer.txt"), "shared/botlib/answer.txt": "GOOD\n"})
    os.symlink("../shared/botlib", repo.path / "agent" / "lib")
    base = repo.commit("a reader of a shared folder, linked in")
    _cached_pass_then(repo, github, base, env)

    head = repo.commit("the shared folder changes", {"shared/botlib/answer.txt": "BAD\n"})
    github.pulls[7].head_sha = head

    run = gate(repo, github, base, head, env, **ISOLATION)

    assert run.returncode == 1, run.stdout + run.stderr
    head_run = next(f for f in run.results()["fixtures"] if f["side"] == "head")
    assert not head_run["cached"] and head_run["output"] == "BAD"
    assert (
        "watched path agent/lib/answer.txt changed (shared/botlib/answer.txt, through a "
        "symbolic link)"
    ) in run.results()["changedAgents"]["reader"]
