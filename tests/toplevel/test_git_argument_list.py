"""A pull request's file names reach git's command line: a side's load looks its paths up in
`git ls-tree -t -z COMMIT -- PATH...`. A pull request that adds a few hundred YAML files
under deep folders (each name well within what git and the file system allow) made that
command line longer than the kernel takes (2 MiB), exec failed with E2BIG, and the gate
ended as an internal error with a traceback (exit 4). Paths are given to git in parts."""

from __future__ import annotations

from pathlib import Path

import pytest

from action.test_gate_evasion import gate, hostile_pr
from evalward.git import Git
from evalward.plan.fingerprint import FileIndex
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.gitrepo import GitRepo
from support.suite import HEAD_PROMPT, SUPPORT_BOT, script_model

pytestmark = pytest.mark.hostile

_PART = "d" * 250
_DEPTH = 15  # 15 folders of 250 bytes: a path of ~3.8 KB, under PATH_MAX
_FILES = 600  # ~2.3 MB of paths in all


def _deep_files() -> dict[str, str]:
    folder = "/".join(["evals", *([_PART] * _DEPTH)])
    return {f"{folder}/notes-{n:04}.yaml": "x: 1\n" for n in range(_FILES)}


def test_many_deep_yaml_files_do_not_crash_the_gate_with_a_traceback(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = hostile_pr(repo, github, _deep_files())
    script_model(model, head_greets_well=False)

    run = gate(repo, github, base, head, env)

    output = run.stdout + run.stderr
    assert "Argument list too long" not in output, output[-3000:]
    assert "internal error" not in output and "Traceback" not in output, output[-3000:]
    assert run.returncode in (1, 2), output[-3000:]


def test_an_agent_watching_more_folders_than_a_command_line_holds_is_gated(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """git lists the folders an agent's `watch` names, and a pull request's agent may name
    more than one command line holds: git could not start, and the gate ended with a
    traceback (exit 4). The folders are listed in parts, the last of them too (the file
    there is one the agent reads), and the gate decides; a glob of a few KiB is compiled
    only for the paths that begin with its literal start (each took fnmatch 16 ms)."""
    deep = "/".join([_PART] * _DEPTH)
    globs = [f"w/{n:03}/{deep}/*" for n in range(560)]  # 2.1 MB of folders
    last = f"w/559/{deep}/tool.py"
    agent = SUPPORT_BOT.format(prompt=HEAD_PROMPT).replace(
        "  tools:\n", "  watch: [" + ", ".join(globs) + "]\n  tools:\n"
    )
    base, head = hostile_pr(repo, github, {"agents/support-bot.yaml": agent, last: "1\n"})
    script_model(model, head_greets_well=False)

    index = FileIndex(repo.path)
    index.prefetch(globs)
    assert index.matching(globs) == [last]

    run = gate(repo, github, base, head, env)

    output = run.stdout + run.stderr
    assert "Argument list too long" not in output, output[-3000:]
    assert "internal error" not in output and "Traceback" not in output, output[-3000:]
    assert run.returncode == 1, output[-3000:]
    assert run.outputs["result"] == "fail"


def test_a_working_tree_of_many_long_paths_is_asked_of_git_in_parts(tmp_path: Path) -> None:
    """The command line's questions of a working tree (what git would commit of it, what
    changed since HEAD) are asked of 600 paths of 3.8 KB each, over what one command line
    holds: in as many calls as it needs, with every path answered."""
    repo = GitRepo(tmp_path / "repo")
    repo.commit("start", {"README.md": "hello\n"})
    deep = "/".join([_PART] * 15)
    names = [f"evals/{deep}/f{n}.yaml" for n in range(600)]
    repo.write({name: "x: 1\n" for name in names})
    git = Git(repo.path)
    assert git.committable(names) == set(names)
    assert git.dirty_paths(names) == set(names)
