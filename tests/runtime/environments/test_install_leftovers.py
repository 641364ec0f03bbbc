"""What an install leaves behind, and what a kept cache entry holds, is hostile: a FIFO where
evalward reads a file is that side's clear error (or a rebuild), never a job that waits on it
for good; a chain of links out of the environment is refused however it hops; a process the
install left running is gone before the environment is sealed. The environment has a Python
part (an empty requirements file: nothing to download) and a Node.js part whose `postinstall`
script, run as the agent user after the Python install, is the pull request's code. Needs
root (the user switch) and Node.js."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from support.actionrun import prepare, start_action
from support.agentenv import HONEST, errors, finals, open_pr, run_gate, scripted_project, workspace

pytestmark = pytest.mark.hostile

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


LINK_CHAIN = """\
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
fs.mkdirSync("node_modules", { recursive: true });
const planted = fs.mkdtempSync("/tmp/planted-");  // the agent user's, after the seal too
fs.writeFileSync(path.join(planted, "tool.js"), "module.exports = 'sealed';\\n");
fs.symlinkSync("/", "node_modules/hop");
fs.symlinkSync("hop" + planted + "/tool.js", "node_modules/tool.js");
"""

LEAVES_A_PROCESS = """\
const fs = require("node:fs");
const { spawn } = require("node:child_process");
fs.mkdirSync("node_modules", { recursive: true });
const child = spawn("sleep", ["600"], { detached: true, stdio: "ignore" });  // its own session
child.unref();
fs.writeFileSync("node_modules/stray.pid", String(child.pid));
"""

CHECKS_THE_PROCESS = """\
const fs = require("node:fs");
const path = require("node:path");
fs.readFileSync(0);
const pid = fs.readFileSync(path.join(process.env.NODE_PATH, "stray.pid"), "utf8");
let state = "gone";  // a zombie (killed, not yet reaped) runs no more
try { state = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1][0]; } catch {}
const alive = !["gone", "Z", "X"].includes(state);
const report = JSON.stringify({ uid: process.getuid(), alive });
console.log(JSON.stringify({ type: "final", content: "ran " + report }));
"""


@needs_root
@needs_node
def test_a_link_chain_out_through_a_link_to_the_root_is_refused(
    workspace: Path, github: FakeGitHub
) -> None:
    """`node_modules/hop -> /`, then `node_modules/tool.js -> hop/tmp/planted-…/tool.js`: by
    its text, inside the environment; hop by hop, in a folder the agent user keeps."""
    base = scripted_project(HONEST, python=False)
    head = scripted_project(LINK_CHAIN, python=False)
    run = run_gate(workspace, github, open_pr(workspace, github, base, head))
    sides = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert sides == {"base": "pass", "head": "error"}, run.stdout + run.stderr
    message = errors(run)["head"]
    assert "the installer left the link node_modules/tool.js -> hop/tmp/planted-" in message
    assert "leads out of the environment through /tmp, which an agent user can change" in message


@needs_root
@needs_node
def test_a_process_the_install_left_running_is_gone_before_the_agent_runs(
    workspace: Path, github: FakeGitHub
) -> None:
    """The install starts a process in a session of its own, which outlives its process
    group: by the time the agent runs from the sealed environment, it is gone."""
    base = scripted_project(HONEST, python=False)
    head = scripted_project(LEAVES_A_PROCESS, python=False, agent=CHECKS_THE_PROCESS)
    run = run_gate(workspace, github, open_pr(workspace, github, base, head))
    assert run.returncode == 0, run.stdout + run.stderr
    assert finals(run, "ran")["head"]["alive"] is False
    assert "process(es) the install left running were ended" in run.stdout


@needs_root
@needs_node
def test_sigterm_during_an_install_ends_the_run_with_what_finished_written(
    workspace: Path, github: FakeGitHub
) -> None:
    """GitHub cancels the job while the head's install never ends: the action ends (130),
    the install's processes with it, and results.json says the run was cancelled."""
    marks = workspace.parent / "marks"
    marks.mkdir(mode=0o777)
    marks.chmod(0o777)
    started = marks / "install-started"
    hangs = HONEST + f'fs.writeFileSync("{started}", "");\nsetInterval(() => {{}}, 1000);\n'
    event = open_pr(workspace, github, scripted_project(HONEST), scripted_project(hangs))
    launch = prepare(workspace, github, event, inputs={"output-dir": ".evalward/out"})
    process = start_action(workspace, launch)
    try:
        deadline = time.monotonic() + 120
        while not started.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "the install started"
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    run = launch.finish(process.returncode, stdout, stderr)
    run.output_dir = workspace / ".evalward" / "out"
    assert run.returncode == 130, stdout + stderr
    assert "Traceback" not in stdout + stderr
    assert run.results()["run"]["cancelled"] is True
