"""Agents with their own dependencies, run by the action as GitHub runs it: evalward builds
each side's environment from that side's files, as that side's agent user, keeps it read-only
and in the result cache's directory, and reports a failed install as that side's error.

The agents import a real package from the registry (six on PyPI, ms on npm): these tests need
PyPI and the npm registry (`registries` marker; EVALWARD_OFFLINE=1 skips them). Switching to
the agent users needs root, as in the action's image and in CI.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evalward.definitions.loader import load_resources
from evalward.plan.fingerprint import FileIndex, agent_fingerprint
from fakes.github_api import FakeGitHub
from support.agentenv import (
    PY_AGENT,
    SCRIPTED_AGENT,
    SUITE,
    agent_yaml,
    errors,
    finals,
    needs_root,
    node_package,
    open_pr,
    requirements,
    run_gate,
    uv_project,
    workspace,
)
from support.agentuser import AGENT_UID
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

__all__ = ["workspace"]  # a fixture


@pytest.mark.registries
@needs_root
def test_each_side_runs_with_its_own_locked_environment_built_once(
    workspace: Path, github: FakeGitHub
) -> None:
    """The base pins six 1.16.0 in a requirements file, the head 1.17.0 in a uv project: each
    side's agent, as that side's user, imports its own, and cannot change it, nor need to: its
    bytecode was compiled at install and is still valid sealed and restored (an SDK compiled
    at each start costs seconds). A second run that has to run the agents again restores both
    environments instead of installing."""
    (workspace / "agent").mkdir(parents=True)
    base = {**requirements("1.16.0"), "agent/agent.py": PY_AGENT}
    head = {**uv_project("1.17.0"), "agent/agent.py": PY_AGENT}
    event = open_pr(workspace, github, base, head, removed=("agent/requirements.txt",))

    first = run_gate(workspace, github, event)
    assert first.returncode == 0, first.stdout + first.stderr
    reports = finals(first, "six")
    assert reports["base"]["six"] == "1.16.0" and reports["head"]["six"] == "1.17.0", first.stdout
    assert reports["head"]["uid"] == AGENT_UID and reports["base"]["uid"] == AGENT_UID + 1
    for side in ("base", "head"):
        assert reports[side]["attempts"] == {
            "package": "PermissionError",
            "new file": "PermissionError",
        }
        assert reports[side]["compiled"], reports[side]
        assert f"environment of dep-agent ({side}): built in" in first.stdout
    assert "sk-environment-secret" not in first.stdout + first.stderr

    # A rerun whose results are not in the cache (here: removed) runs the agents again, with
    # the environments the first run built, restored from the cache directory.
    kept = workspace / ".evalward" / "cache" / "environments"
    assert len(list(kept.iterdir())) == 2
    shutil.rmtree(workspace / ".evalward" / "cache" / "results")
    second = run_gate(workspace, github, event)
    assert second.returncode == 0, second.stdout + second.stderr
    again = finals(second, "six")
    for side in ("base", "head"):
        assert f"environment of dep-agent ({side}): restored from the cache" in second.stdout
        assert again[side]["built"] == reports[side]["built"], "the same build, not a new one"
        assert again[side]["six"] == reports[side]["six"]
        assert again[side]["compiled"], again[side]
    assert "built in" not in second.stdout


@pytest.mark.registries
@needs_root
def test_a_requirement_that_does_not_install_is_that_sides_error(
    workspace: Path, github: FakeGitHub
) -> None:
    (workspace / "agent").mkdir(parents=True)
    base = {**requirements("1.16.0"), "agent/agent.py": PY_AGENT}
    head = {"agent/requirements.txt": "six==99.0.0\n"}
    event = open_pr(workspace, github, base, head)
    run = run_gate(workspace, github, event)

    assert run.returncode == 1, run.stdout + run.stderr
    sides = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert sides == {"base": "pass", "head": "error"}, sides
    message = errors(run)["head"]
    assert message.startswith("the agent's environment could not be built")
    assert "six==99.0.0" in message and "uv pip install" in message, message
    assert "Traceback" not in run.stdout + run.stderr
    (comment,) = github.comments_on(3)
    assert "six==99.0.0" in comment["body"], comment["body"]


@pytest.mark.registries
@needs_root
def test_a_node_agent_imports_its_own_locked_packages(workspace: Path, github: FakeGitHub) -> None:
    """ESM resolves `ms` from the agent's folder in its working copy: npm ci's node_modules,
    linked there; each side its own version."""
    event = open_pr(workspace, github, node_package("2.1.2"), node_package("2.1.3"))
    run = run_gate(workspace, github, event)
    assert run.returncode == 0, run.stdout + run.stderr
    reports = finals(run, "ms")
    assert {side: r["ms"] for side, r in reports.items()} == {"base": "2.1.2", "head": "2.1.3"}
    assert reports["head"]["twoHours"] == 7_200_000
    assert reports["head"]["uid"] == AGENT_UID and reports["base"]["uid"] == AGENT_UID + 1


@needs_root
def test_an_image_without_node_refuses_a_node_environment_naming_the_variant(
    workspace: Path, github: FakeGitHub, tmp_path: Path
) -> None:
    event = open_pr(workspace, github, node_package("2.1.2"), node_package("2.1.3"))
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    run = run_gate(workspace, github, event, PATH=str(tools))
    assert run.returncode == 2, run.stdout + run.stderr
    said = run.stdout + run.stderr
    assert "agent 'dep-agent'" in said and "environment.node" in said, said
    assert "evalward:<version>-node" in said, said
    assert "Traceback" not in said


def test_the_environment_files_decide_the_agents_fingerprint(repo: GitRepo) -> None:
    """A changed lock file changes the agent (its Evals run, its cached results are not
    reused), though the agent's definition did not change."""
    repo.commit("agent", {**uv_project("1.17.0"), "agent/agent.py": PY_AGENT, "e.yaml": SUITE})

    def fingerprint() -> dict[str, Any]:
        located = load_resources(repo.path).agents["dep-agent"]
        return agent_fingerprint(located, FileIndex(repo.path))

    before = fingerprint()
    assert {"agent/pyproject.toml", "agent/uv.lock", "agent/.python-version"} <= set(
        before["files"]
    )
    lock = (repo.path / "agent" / "uv.lock").read_text()
    repo.commit("relock", {"agent/uv.lock": lock.replace("revision = 3", "revision = 4")})
    assert fingerprint()["files"]["agent/uv.lock"] != before["files"]["agent/uv.lock"]


def nothing_to_install(*, locked: bool) -> dict[str, str]:
    """An honest agent with no dependency: a uv project with an empty lock and a
    package-lock.json (`locked`), or an empty requirements file and a bare package.json."""
    package = {"name": "agent", "version": "1.0.0", "private": True}
    project = '[project]\nname = "agent"\nversion = "0.1.0"\nrequires-python = ">=3.10"\n'
    python = "agent/pyproject.toml" if locked else "agent/requirements.txt"
    files = {
        "agents/dep-agent.yaml": agent_yaml(
            ["node", "agent/agent.cjs"], {"python": python, "node": "agent/package.json"}
        ),
        "agent/package.json": json.dumps(package),
        "agent/agent.cjs": SCRIPTED_AGENT,
    }
    if locked:
        lock = {
            **package,
            "lockfileVersion": 3,
            "requires": True,
            "packages": {"": {"name": "agent", "version": "1.0.0"}},
        }
        files["agent/package-lock.json"] = json.dumps(lock)
        files["agent/pyproject.toml"] = project + "dependencies = []\n"
        files["agent/uv.lock"] = (
            'version = 1\nrevision = 3\nrequires-python = ">=3.10"\n\n[[package]]\n'
            'name = "agent"\nversion = "0.1.0"\nsource = { virtual = "." }\n'
        )
    else:
        files["agent/requirements.txt"] = ""
    return files


@needs_root
@pytest.mark.skipif(shutil.which("npm") is None, reason="no npm on PATH")
def test_agents_with_nothing_to_install_build_on_both_sides(
    workspace: Path, github: FakeGitHub
) -> None:
    """npm leaves no node_modules and uv installs nothing: each side still gets its (empty)
    environment, sealed, and its agent runs from it."""
    base = nothing_to_install(locked=True)
    head = nothing_to_install(locked=False)
    event = open_pr(
        workspace,
        github,
        base,
        head,
        removed=("agent/package-lock.json", "agent/pyproject.toml", "agent/uv.lock"),
    )
    run = run_gate(workspace, github, event)
    assert run.returncode == 0, run.stdout + run.stderr
    reports = finals(run, "ran")
    assert reports["head"]["uid"] == AGENT_UID and reports["base"]["uid"] == AGENT_UID + 1
    for side in ("base", "head"):
        assert f"environment of dep-agent ({side}): built in" in run.stdout
