"""What an install leaves behind, and what a kept cache entry holds, is read as hostile: a
FIFO where evalward reads a file is that side's clear error (or a rebuild), never a job that
waits on it for good. The environment has a Python part (an empty requirements file: nothing
to download) and a Node.js part whose `postinstall` script, run as the agent user after the
Python install, is the pull request's code. Needs root (the user switch) and Node.js."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agentenv import HONEST, errors, finals, open_pr, run_gate, scripted_project, workspace
from fakes.github_api import FakeGitHub

__all__ = ["workspace"]  # a fixture

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="running agents as a second user needs root (as in the image)"
)
needs_node = pytest.mark.skipif(shutil.which("npm") is None, reason="no npm on PATH")

FIFO_IN_SITE_PACKAGES = """\
const fs = require("node:fs");
const path = require("node:path");
const { execFileSync } = require("node:child_process");
fs.mkdirSync("node_modules", { recursive: true });
const lib = path.join("..", "..", "venv", "lib");
const python = fs.readdirSync(lib).find((name) => name.startsWith("python"));
const info = path.join(lib, python, "site-packages", "planted-1.0.dist-info");
fs.mkdirSync(info, { recursive: true });
execFileSync("mkfifo", [path.join(info, "direct_url.json")]);
"""


@needs_root
@needs_node
def test_a_fifo_left_where_evalward_reads_is_that_sides_error(
    workspace: Path, github: FakeGitHub
) -> None:
    base, head = scripted_project(HONEST), scripted_project(FIFO_IN_SITE_PACKAGES)
    event = open_pr(workspace, github, base, head)
    run = run_gate(workspace, github, event)  # returns: nothing waits on the FIFO
    assert run.returncode == 1, run.stdout + run.stderr
    sides = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert sides == {"base": "pass", "head": "error"}, sides
    message = errors(run)["head"]
    assert "planted-1.0.dist-info/direct_url.json" in message, message
    assert "is a FIFO, not a regular file" in message, message
    assert "Traceback" not in run.stdout + run.stderr


@needs_root
@needs_node
def test_a_kept_environment_whose_record_is_a_fifo_is_built_again(
    workspace: Path, github: FakeGitHub
) -> None:
    base, head = scripted_project(HONEST), scripted_project(HONEST + "// the head's\n")
    event = open_pr(workspace, github, base, head)
    first = run_gate(workspace, github, event)
    assert first.returncode == 0, first.stdout + first.stderr
    kept = workspace / ".evalward" / "cache" / "environments"
    for entry in kept.iterdir():
        (entry / "environment.json").unlink()
        os.mkfifo(entry / "environment.json")
    shutil.rmtree(workspace / ".evalward" / "cache" / "results")

    second = run_gate(workspace, github, event)
    assert second.returncode == 0, second.stdout + second.stderr
    for side in ("base", "head"):
        assert (
            f"environment of dep-agent ({side}): not restored (its environment.json is a "
            "FIFO, not a regular file)" in second.stdout
        ), second.stdout
        assert f"environment of dep-agent ({side}): built in" in second.stdout
    assert set(finals(second, "ran")) == {"base", "head"}
