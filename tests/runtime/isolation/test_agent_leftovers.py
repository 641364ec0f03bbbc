"""The pull request whose agent leaves behind what evalward cannot clean up: folders nested
past any recursion limit, folders it may not enter or write, FIFOs, sockets, links to `/`,
in its playground's folder and in its private HOME and TMPDIR. Through the action, as GitHub
runs it: nothing of it crashes the gate or outlives the job; a playground whose state cannot
be read within its bounds makes its own run an error that says where, and every other run
goes on and is written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalward.runtime.isolation.sandbox import AGENTS_PLACE
from fakes.github_api import FakeGitHub
from support.actionrun import execute as execute_action
from support.actionrun import prepare, pull_request_event
from support.agentenv import (
    HONEST,
    PYTHON,
    errors,
    needs_root,
    open_pr,
    run_gate,
    scripted_project,
    workspace,
)
from support.agentuser import AGENT_UID
from support.byoagent import pr_tuning
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

__all__ = ["workspace"]  # a fixture

LEAVER = r"""
import json, os, socket, sys

fixture = json.load(sys.stdin)["fixture"]
desk = os.environ["EVALWARD_PLAYGROUND_DIR"]


def nest(top, depth, name="d"):
    os.chdir(top)
    for _ in range(depth):
        os.mkdir(name)
        os.chdir(name)
    open("bottom.txt", "w").write("deep")
    os.chdir("/")


def litter(top):
    top = os.path.join(top, "litter")
    os.mkdir(top)
    closed = os.path.join(top, "closed")
    os.makedirs(os.path.join(closed, "inner"))
    open(os.path.join(closed, "inner", "f"), "w").write("x")
    os.chmod(os.path.join(closed, "inner"), 0)
    os.chmod(closed, 0)
    kept = os.path.join(top, "kept")
    os.mkdir(kept)
    open(os.path.join(kept, "f"), "w").write("x")
    os.chmod(kept, 0o500)
    os.mkfifo(os.path.join(top, "fifo"))
    server = socket.socket(socket.AF_UNIX)
    server.bind(os.path.join(top, "socket"))
    os.symlink("/", os.path.join(top, "root"))
    os.symlink("/etc", os.path.join(top, "etc"))
    os.symlink("loop", os.path.join(top, "loop"))
    with open(os.path.join(top.encode(), b"caf\xe9"), "w") as latin:  # a name not UTF-8
        latin.write("x")


if fixture == "deep-desk":
    nest(desk, 1200)
elif fixture == "deep-home":
    nest(os.environ["TMPDIR"], 1200)
    nest(os.environ["HOME"], 1300, "h")  # the same folder as TMPDIR
elif fixture == "litter":
    litter(os.environ["TMPDIR"])
    litter(desk)
print(json.dumps({"type": "final", "content": f"done {fixture} in {os.environ['TMPDIR']}"}))
"""

SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: leaver }}
spec:
  runtime:
    command: {{ run: [{PYTHON}, agent/leaver.py] }}
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: leaver-eval }}
spec:
  targetAgent: leaver
  fixtureSelector: {{ matchLabels: {{ agent: leaver }} }}
  playground: {{ name: desk, files: {{ seed: world }} }}
"""
FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}, labels: {{ agent: leaver }} }}
spec:
  targetAgent: leaver
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  assertions:
    - {{ type: contains, value: "done {name}" }}
"""
FIXTURES = ("deep-desk", "deep-home", "litter", "tidy")


@pytest.fixture
def scratch() -> Iterator[Path]:
    """The action's TMPDIR (agents' homes, copies and playgrounds are kept in
    `AGENTS_PLACE`, never here: every user may write TMPDIR)."""
    folder = Path(tempfile.mkdtemp(prefix="evalward-leftovers-"))
    folder.chmod(0o755)
    yield folder
    subprocess.run(["rm", "-rf", str(folder)], check=False)  # whatever a failed run left


def agent_owned(folder: Path) -> list[str]:
    """Every path under `folder` that an agent user owns (neither side's is left)."""
    found = []
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(top) / name
            if path.lstat().st_uid in (AGENT_UID, AGENT_UID + 1):
                found.append(str(path.relative_to(folder)))
    return found


@needs_root
def test_what_an_agent_leaves_neither_crashes_the_gate_nor_outlives_it(
    workspace: Path, github: FakeGitHub, scratch: Path
) -> None:
    files = {
        "evals/leaver.yaml": SUITE + "".join(FIXTURE.format(name=name) for name in FIXTURES),
        "agent/leaver.py": LEAVER,
        "world/notes.txt": "a seeded note\n",
    }
    repo = GitRepo(workspace)
    base, head = pr_tuning(repo, github, 3, files, "agent/leaver.py")
    for path in [workspace, *workspace.rglob("*")]:  # the runner's user owns the checkout
        os.lchown(path, 1001, 1001)
    event = pull_request_event(github.repository, 3, base, head)
    launch = prepare(
        workspace,
        github,
        event,
        inputs={"output-dir": ".evalward/out", "cache": "off"},
        env={"TMPDIR": str(scratch)},
    )
    run = execute_action(workspace, launch)

    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 1, run.stdout + run.stderr
    results = (workspace / ".evalward" / "out" / "results.json").read_text()
    fixtures = json.loads(results)["fixtures"]
    by_run = {(f["side"], f["fixture"]): f for f in fixtures}
    assert set(by_run) == {(side, name) for side in ("base", "head") for name in FIXTURES}
    for side in ("base", "head"):
        deep = by_run[(side, "deep-desk")]
        assert deep["status"] == "error", deep
        assert "playground 'desk': its folder nests deeper than" in deep["message"]
        assert "d/d/d/" in deep["message"]
        for name in ("deep-home", "litter", "tidy"):
            assert by_run[(side, name)]["status"] == "pass", by_run[(side, name)]["message"]
        state = json.loads(by_run[(side, "litter")]["playground"]["final"])["files"]
        assert state["litter/root"] == {"link": "/"}
        assert state["litter/fifo"] == {"special": True}
        assert state["litter/kept/f"] == "x"
        assert state['"litter/caf\\xe9"'] == "x"  # shown escaped: the record still writes
        home = by_run[(side, "litter")]["output"].split(" in ")[-1]
        assert Path(home).is_relative_to(AGENTS_PLACE) and not Path(home).exists()
    assert agent_owned(scratch) == []


NESTS_INSTALL = HONEST + (
    'let at = "node_modules";\nfor (let i = 0; i < 1200; i++) { at += "/d"; fs.mkdirSync(at); }\n'
)
"""An install script (run as the agent user) that nests 1,200 folders in what it leaves."""


@needs_root
@pytest.mark.skipif(shutil.which("npm") is None, reason="no npm on PATH")
def test_an_install_that_nests_folders_past_any_recursion_limit_is_that_sides_error(
    workspace: Path, github: FakeGitHub
) -> None:
    base = scripted_project(HONEST, python=False)
    head = scripted_project(NESTS_INSTALL, python=False)
    run = run_gate(workspace, github, open_pr(workspace, github, base, head))

    assert "Traceback" not in run.stderr, run.stderr
    sides = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert sides == {"base": "pass", "head": "error"}, run.stdout + run.stderr
    assert "the installer nested folders more than 256 deep" in errors(run)["head"]
    assert run.returncode == 1
