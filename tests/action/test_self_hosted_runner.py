"""On a self-hosted runner the workspace outlives the job: what the action (root, in its
container) wrote there goes back to the workspace's owner, so the next job's checkout can
clean it; and the `results-json` output is a path later steps can open.

Needs root, as the action's container has; elsewhere these tests are skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import execute, prepare, pull_request_event
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.e2e

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")

RUNNER_UID = 1001

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: greeter }
spec:
  models: [openai/gpt-test]
  systemFile: ../prompts/greeter.md
"""
SUITE = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: greeter-eval }
spec:
  targetAgent: greeter
  fixtureSelector: { matchLabels: { agent: greeter } }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: greets, labels: { agent: greeter } }
spec:
  targetAgent: greeter
  input: { type: prompt, payload: { prompt: hi } }
  assertions:
    - { type: contains, value: hello }
"""


@pytest.fixture
def disk() -> Iterator[Path]:
    # Not under pytest's tmp_path (mode 0700): the runner's user must reach its workspace.
    root = Path(tempfile.mkdtemp(prefix="evalward-self-hosted-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def as_runner(workspace: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """A command of the next job: the runner's user, in the workspace."""
    return subprocess.run(
        command,
        cwd=workspace,
        user=RUNNER_UID,
        group=RUNNER_UID,
        extra_groups=[],
        env={"PATH": os.environ["PATH"], "HOME": str(workspace.parent), "GIT_CONFIG_NOSYSTEM": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def owners(workspace: Path) -> dict[str, int]:
    found = {".": workspace.lstat().st_uid}
    for folder, folders, names in os.walk(workspace):
        for name in folders + names:
            path = Path(folder) / name
            found[path.relative_to(workspace).as_posix()] = path.lstat().st_uid
    return found


@needs_root
def test_what_root_wrote_goes_back_to_the_workspace_owner_and_the_next_job_can_clean(
    disk: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    workspace = disk / "workspace"
    repo = GitRepo(workspace)
    base = repo.commit(
        "a greeter",
        {"agents/greeter.yaml": AGENT, "prompts/greeter.md": "Greet. BASE", "evals/s.yaml": SUITE},
    )
    repo.branch("feature")
    # the base side reads its prompt file, so it runs in a git worktree of the base commit
    head = repo.commit("warmer", {"prompts/greeter.md": "Greet warmly. HEAD"})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script("BASE", text("hello"))
    model.script("HEAD", text("hello there"))
    # Outside the workspace, root's: a file and a folder that links from inside point at.
    secret = disk / "root-only.txt"
    secret.write_text("root's")
    secret.chmod(0o600)
    private = disk / "root-folder"
    private.mkdir(mode=0o700)
    (private / "inside.txt").write_text("root's")
    # The checkout is the runner's user's, as actions/checkout leaves it.
    for path in [workspace, *workspace.rglob("*")]:
        os.lchown(path, RUNNER_UID, RUNNER_UID)
    # Names a hostile earlier step could have left where evalward writes.
    planted = workspace / ".evalward" / "cache"
    planted.mkdir(parents=True)
    os.chown(workspace / ".evalward", RUNNER_UID, RUNNER_UID)
    os.chown(planted, RUNNER_UID, RUNNER_UID)
    os.link(secret, planted / "hard-link")
    (planted / "soft-link").symlink_to(private)
    launch = prepare(
        workspace,
        github,
        pull_request_event(github.repository, 7, base, head),
        inputs={"output-dir": ".evalward/out"},
        env=provider_env(model, "sk-test"),
        run_dir=disk / "runner",
    )

    run = execute(workspace, launch)

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["results-json"] == ".evalward/out/results.json"
    assert (workspace / run.outputs["results-json"]).is_file()
    assert "given back to uid 1001" in run.stdout
    left = {path: uid for path, uid in owners(workspace).items() if uid != RUNNER_UID}
    # only the planted links stay root's: the hard link's file and the link itself
    assert left == {".evalward/cache/hard-link": 0, ".evalward/cache/soft-link": 0}, left
    assert secret.stat().st_uid == 0 and private.stat().st_uid == 0
    assert (private / "inside.txt").stat().st_uid == 0
    assert (workspace / ".evalward/out/results.json").stat().st_uid == RUNNER_UID
    assert (workspace / ".git/index").stat().st_uid == RUNNER_UID

    # The next job, as the runner's user: checkout's clean, and a worktree of its own.
    cleaned = as_runner(workspace, "git", "clean", "-ffdx")
    assert cleaned.returncode == 0, cleaned.stderr
    assert not (workspace / ".evalward").exists()
    scratch = disk / "runner-temp"
    scratch.mkdir()
    os.chown(scratch, RUNNER_UID, RUNNER_UID)
    added = as_runner(workspace, "git", "worktree", "add", "--detach", str(scratch / "wt"), base)
    assert added.returncode == 0, added.stderr
    assert as_runner(workspace, "git", "status", "--porcelain").returncode == 0


@needs_root
def test_a_failed_run_gives_back_what_it_wrote_too(
    disk: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    workspace = disk / "workspace"
    repo = GitRepo(workspace)
    base = repo.commit("a greeter", {"agents/greeter.yaml": AGENT, "evals/s.yaml": SUITE})
    repo.branch("feature")
    head = repo.commit("broken", {"evals/s.yaml": SUITE.replace("targetAgent: greeter\n  f", "f")})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    for path in [workspace, *workspace.rglob("*")]:
        os.lchown(path, RUNNER_UID, RUNNER_UID)
    launch = prepare(
        workspace,
        github,
        pull_request_event(github.repository, 7, base, head),
        inputs={"output-dir": ".evalward/out"},
        env=provider_env(model, "sk-test"),
        run_dir=disk / "runner",
    )

    run = execute(workspace, launch)

    assert run.returncode == 2, run.stdout + run.stderr  # the head's Eval does not load
    left = {path: uid for path, uid in owners(workspace).items() if uid != RUNNER_UID}
    assert left == {}, left
    assert as_runner(workspace, "git", "clean", "-ffdx").returncode == 0
