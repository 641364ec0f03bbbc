"""A symbolic link's target is a blob, and a commit may hold any bytes in it: git neither
refuses nor warns about a NUL (`git fsck` is silent). Following a link in the commit's tree
handed the part with the NUL to `git ls-tree ... -- PART`, and exec refuses an argument with
a NUL byte (ValueError), so a pull request that committed one YAML file as such a link ended
the gate as an internal error with a traceback (exit 4). No tree path holds a NUL: such a
target leads nowhere."""

from __future__ import annotations

import subprocess

import pytest

from action.test_gate_evasion import gate
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.gitrepo import GitRepo
from support.suite import make_pr, script_model

pytestmark = pytest.mark.hostile


def test_a_link_whose_target_holds_a_nul_does_not_crash_the_gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, _ = make_pr(repo, github)
    target = (
        subprocess.run(
            ["git", "-C", str(repo.path), "hash-object", "-w", "--stdin"],
            input=b"greeting\0.yaml",
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    repo.git("update-index", "--add", "--cacheinfo", f"120000,{target},evals/fixtures/x.yaml")
    repo.git("commit", "-q", "-m", "a link")
    repo.git("reset", "-q", "--hard")  # the link on disk, cut at the NUL
    head = repo.head()
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    output = run.stdout + run.stderr
    assert "embedded null byte" not in output, output[-3000:]
    assert "internal error" not in output and "Traceback" not in output, output[-3000:]
    assert run.returncode in (1, 2), output[-3000:]
