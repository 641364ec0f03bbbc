"""The files an environment is built from are the pull request's: a lock nested past any
parser, a lock that is a link to a device that never ends, a requirements file that is
not text. Each is that side's error naming the file and what is wrong with it, before any
installer reads it (which would crash, or read until its time limit); the base still
passes. Needs root (the user switch) and Node.js. The readers themselves take any shape
(tests/runtime/telemetry/test_agent_data_properties.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from evalward.errors import AgentRunError
from evalward.resources.agents.agent import AgentEnvironment
from evalward.runtime.environments.environment_inputs import MAX_INPUT_BYTES, check_inputs
from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import pull_request_event
from support.agentenv import (
    HONEST,
    RUNNER_UID,
    SUITE,
    errors,
    run_gate,
    scripted_project,
    workspace,
)
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

__all__ = ["workspace"]  # a fixture

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="running agents as a second user needs root (as in the image)"
)
needs_node = pytest.mark.skipif(shutil.which("npm") is None, reason="no npm on PATH")

DEEP = 100_000


def nested_lock(head: Path) -> None:
    lock = '{"lockfileVersion": 3, "packages": ' + "[" * DEEP + "]" * DEEP + "}"
    (head / "agent" / "package-lock.json").write_text(lock)


def lock_linked_to_a_device(head: Path) -> None:
    (head / "agent" / "package-lock.json").unlink()
    (head / "agent" / "package-lock.json").symlink_to("/dev/zero")


def requirements_not_text(head: Path) -> None:
    (head / "agent" / "requirements.txt").write_bytes(b"six==1.17.0\n\xff\xfe\n")


def open_pr(workspace: Path, github: FakeGitHub, shape: Callable[[Path], None]) -> dict[str, str]:
    """A pull request whose head changes an honest agent's environment files by `shape`."""
    repo = GitRepo(workspace)
    files = {
        **scripted_project(HONEST),
        "evals/dep-agent.yaml": SUITE,
        ".gitignore": ".evalward/\n",
    }
    base_sha = repo.commit("an agent with dependencies", files)
    repo.branch("feature")
    shape(workspace)
    head_sha = repo.commit("its environment files changed")
    github.add_pull(FakePull(number=3, head_sha=head_sha, base_sha=base_sha))
    for path in [workspace, *workspace.rglob("*")]:
        os.lchown(path, RUNNER_UID, RUNNER_UID)
    return pull_request_event(github.repository, 3, base_sha, head_sha)


@needs_root
@needs_node
@pytest.mark.parametrize(
    ("shape", "said"),
    [
        (nested_lock, "agent/package-lock.json: not valid JSON (JSON nested too deeply)"),
        (lock_linked_to_a_device, "agent/package-lock.json is a symbolic link, not a regular"),
        (requirements_not_text, "agent/requirements.txt: not UTF-8 text (byte 12 is 0xff)"),
    ],
    ids=["nested-lock", "link-to-device", "not-utf8"],
)
def test_a_malformed_environment_file_is_that_sides_located_error(
    workspace: Path, github: FakeGitHub, shape: Callable[[Path], None], said: str
) -> None:
    run = run_gate(workspace, github, open_pr(workspace, github, shape))
    assert run.returncode == 1, run.stdout + run.stderr
    sides = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert sides == {"base": "pass", "head": "error"}, run.stdout + run.stderr
    message = errors(run)["head"]
    assert message.startswith("the agent's environment could not be built: " + said), message
    assert "Traceback" not in run.stdout + run.stderr


def test_a_fifo_or_a_huge_lock_is_refused_without_reading_it(tmp_path: Path) -> None:
    """What git cannot hold but a local checkout can: a FIFO (opening it would wait for a
    writer for ever) and a lock larger than the bound (sparse: no disk used)."""
    spec = AgentEnvironment.model_validate({"python": "pyproject.toml"})
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "a"\n')
    os.mkfifo(tmp_path / "uv.lock")
    with pytest.raises(AgentRunError, match=r"^uv\.lock is a FIFO, not a regular file"):
        check_inputs(tmp_path, spec)
    (tmp_path / "uv.lock").unlink()
    with (tmp_path / "uv.lock").open("wb") as lock:
        lock.truncate(MAX_INPUT_BYTES + 1)
    with pytest.raises(AgentRunError, match=r"^uv\.lock is larger than \d+ bytes"):
        check_inputs(tmp_path, spec)
    (tmp_path / "uv.lock").write_text("version = 1\n" + "a = " + "[" * 200 + "]" * 200 + "\n")
    with pytest.raises(AgentRunError, match=r"^uv\.lock: nested more than 64 deep"):
        check_inputs(tmp_path, spec)
