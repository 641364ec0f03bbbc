"""The action's entry point with the cgroup file system writable (a privileged runner: a
cgroup per run) or read-only (as a GitHub Docker action sees it: no cgroup, the uid sweep
alone). Read-only is a mount namespace of its own where the cgroup2 mount is remounted
read-only, as `unshare` makes one; the action runs in it as it runs anywhere else."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from support.actionrun import ActionRun, forked, prepare, under_test

MODES = ("writable", "read-only")


def cgroup2_mount() -> str | None:
    """Where the cgroup v2 file system is mounted here (None: nowhere)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.startswith("cgroup2 "):
            return left.split()[4]
    return None


def entry_point(mode: str) -> list[str]:
    """The action's argv in `mode`; skips the test where the mode cannot be made here."""
    argv = under_test()
    if mode == "writable":
        return argv
    point = cgroup2_mount()
    if point is None or shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("no cgroup2 mount, or no unshare as root, to make it read-only")
    remount = f'mount -o remount,bind,ro {point} && exec "$@"'
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", remount, "sh", *argv]


def run_gate_in(
    mode: str,
    workspace: Path,
    github: FakeGitHub,
    event: dict[str, Any],
    inputs: dict[str, str] | None = None,
    **env: str,
) -> ActionRun:
    """`agentenv.run_gate`, with the cgroup file system as `mode` says."""
    launch = prepare(
        workspace,
        github,
        event,
        inputs={"output-dir": ".evalward/out", **(inputs or {})},
        env={
            "OPENAI_API_KEY": "sk-environment-secret-0123456789",
            **{k: os.environ[k] for k in ("SSL_CERT_FILE",) if k in os.environ},
            **env,
        },
    )
    if mode == "writable":  # started as every other gate is: forked from the tests' server
        done = forked(workspace, launch.env, 120)
    else:
        done = subprocess.run(
            entry_point(mode),
            cwd=workspace,
            env=launch.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    run = launch.finish(done.returncode, done.stdout, done.stderr)
    run.output_dir = workspace / ".evalward" / "out"
    return run
