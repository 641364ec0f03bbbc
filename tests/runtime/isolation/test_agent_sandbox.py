"""A pull request's agent attacks the action that runs it, and gets nothing.

The action runs as GitHub runs it: the image's ENTRYPOINT as root, the workspace and the
runner's files owned by the runner's user (uid 1001) with the runner's modes, in a directory
every user can enter, and GitHub's environment with secrets in it. The PR's program
(tests/agents/hostile_agent.py) runs as a `runtime.command` agent, a `runtime.http` agent and
a declarative agent's command tool; it reports to a loopback "attacker" server. Nothing
secret may reach that server or any output, it may write nothing of evalward's or the
runner's, and the gate's result is the honest one.

Running agents as a second user needs root, as in the action's image and in CI; elsewhere
these tests are skipped with that reason.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import evalward
from fakes.github_api import FakeGitHub, FakePull
from fakes.http import LoopbackServer, Request, Response
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import (
    ENTRYPOINT,
    ActionRun,
    parse_github_output,
    prepare,
    pull_request_event,
    run_action,
)
from support.agentuser import AGENT_UID
from support.documents import labelled_suite
from support.gitrepo import GitRepo
from support.suite import make_pr, provider_env, script_model

pytestmark = pytest.mark.hostile

needs_root = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="running agents as a second user needs root (the action's image and CI run as root)",
)
AGENT_PYTHON = "/usr/bin/python3"
"""The agents' interpreter: one every user may run (this interpreter may live in root's home).
The agent needs nothing but the standard library."""
needs_python = pytest.mark.skipif(
    not os.access(AGENT_PYTHON, os.X_OK), reason=f"no {AGENT_PYTHON} for the agent user to run"
)

RUNNER_UID = 1001
HOSTILE = Path(__file__).resolve().parents[2] / "agents" / "hostile_agent.py"
PACKAGE = Path(evalward.__file__).resolve().parent
SITE_PACKAGES = Path(next(p for p in sys.path if p.endswith("site-packages")))

BENIGN = """\
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.reply({"ok": True})
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        self.reply({"final": "hello"})
    def reply(self, body):
        payload = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

mode = sys.argv[1]
if mode == "http":
    HTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
sys.stdin.read()
print(json.dumps({"type": "final", "content": "hello"} if mode == "command" else {"ok": 1}))
"""

ASKED_FOR = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "DEPLOY_TOKEN",
    "GITHUB_TOKEN",
    "INPUT_GITHUB_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "SERVICE_URL",
    "GITHUB_OUTPUT",
    "RUNNER_TEMP",
    "HARMLESS_SETTING",
]
"""What the PR's agent lists in its `env:`: only HARMLESS_SETTING may arrive."""


def agent_yaml(kind: str, script: str, prompt: str) -> str:
    python = json.dumps(AGENT_PYTHON)
    listed = json.dumps(ASKED_FOR)
    if kind == "command":
        spec = f"runtime: {{ command: {{ run: [{python}, {script}, command], env: {listed} }} }}"
    elif kind == "http":
        spec = (
            f"runtime: {{ http: {{ start: [{python}, {script}, http, '{{port}}'], "
            "ready: 'http://127.0.0.1:{port}/healthz', url: 'http://127.0.0.1:{port}/run', "
            f"env: {listed} }} }}"
        )
    else:
        spec = (
            f"models: [openai/gpt-test]\n  system: {prompt}\n  tools:\n"
            "    - name: lookup\n      description: Look something up.\n"
            "      parameters: { type: object, properties: { q: { type: string } } }\n"
            f"      command: {{ run: [{python}, {script}, tool], env: {listed} }}"
        )
    header = "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: pr-agent }\n"
    return f"{header}spec:\n  {spec}\n"


SUITE = labelled_suite("pr-agent", "greets", "hi", "{ type: contains, value: hello }")


class Attacker:
    """A loopback server that keeps whatever arrives."""

    def __init__(self) -> None:
        self.received: list[Request] = []
        self._lock = threading.Lock()
        self.server = LoopbackServer(self._keep)

    def _keep(self, request: Request) -> Response:
        with self._lock:
            self.received.append(request)
        return Response(200, {"thanks": True})

    def everything(self) -> str:
        return "\n".join(
            f"{r.method} {r.path} {json.dumps(r.headers)} {r.body.decode(errors='replace')}"
            for r in self.received
        )

    def report(self, run: ActionRun) -> dict[str, Any]:
        traces = run.output_dir / "results.json"
        shown = traces.read_text()[-3000:] if traces.exists() else run.stdout + run.stderr
        assert self.received, f"the hostile agent never reported: it did not run\n{shown}"
        return dict(json.loads(self.received[0].body))


@dataclass
class World:
    """A runner's disk: the workspace and the runner's files, as GitHub lays them out."""

    root: Path
    workspace: Path
    runner: Path


@pytest.fixture
def world() -> Iterator[World]:
    # Not under pytest's tmp_path (mode 0700): GitHub's workspace is open to every user, and
    # the test must show that the sandbox holds without hiding anything.
    root = Path(tempfile.mkdtemp(prefix="evalward-hostile-"))
    root.chmod(0o755)
    yield World(root, root / "workspace", root / "runner")
    shutil.rmtree(root, ignore_errors=True)


def package_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path).encode() + path.read_bytes())
    return digest.hexdigest()


def secrets(github: FakeGitHub) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": "sk-hostile-0123456789abcdef",
        "ANTHROPIC_API_KEY": "sk-ant-hostile-9876543210",
        "DEPLOY_TOKEN": "dpl-0a1b2c3d4e5f6a7b",
        "ACTIONS_RUNTIME_TOKEN": "actions-runtime-abcdef1234",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc-request-654321fedcba",
        "GITHUB_TOKEN": github.token,
    }


def run_hostile_pr(
    kind: str, world: World, github: FakeGitHub, model: ScriptedModelServer, attacker: Attacker
) -> ActionRun:
    repo = GitRepo(world.workspace)
    base = repo.commit(
        "an agent and its eval",
        {
            "agents/pr-agent.yaml": agent_yaml(kind, "agent/benign.py", "BASE-PROMPT"),
            "agent/benign.py": BENIGN,
            "evals/pr-agent.yaml": SUITE,
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("feature")
    runner = world.runner
    target = {
        "attacker": attacker.server.url + "/loot",
        "read": {
            "event": str(runner / "event.json"),
            "github_output": str(runner / "github_output"),
            "step_summary": str(runner / "step_summary"),
            "github_env": str(runner / "github_env"),
            "git_config": str(world.workspace / ".git" / "config"),
        },
        "append": {
            "GITHUB_OUTPUT": str(runner / "github_output"),
            "GITHUB_STEP_SUMMARY": str(runner / "step_summary"),
            "GITHUB_ENV": str(runner / "github_env"),
            "GITHUB_PATH": str(runner / "github_path"),
            "GITHUB_STATE": str(runner / "github_state"),
            "event": str(runner / "event.json"),
        },
        "open": {  # opened for writing, nothing written: modules evalward imports lazily
            "evalward module": str(PACKAGE / "report" / "files.py"),
            "evalward entry": str(PACKAGE / "__main__.py"),
        },
        "create": {
            "output dir": str(world.workspace / ".evalward" / "out" / "pwned.txt"),
            "cache dir": str(world.workspace / ".evalward" / "cache" / "pwned.json"),
            "workspace": str(world.workspace / "pwned.txt"),
            "evalward package": str(PACKAGE / "pwned.py"),
            "evalward bytecode": str(PACKAGE / "__pycache__" / "pwned.cpython.pyc"),
            "site-packages": str(SITE_PACKAGES / "zz-pwned.pth"),
        },
    }
    head = repo.commit(
        "a better agent",
        {
            "agents/pr-agent.yaml": agent_yaml(kind, "agent/hostile.py", "HEAD-PROMPT"),
            "agent/hostile.py": HOSTILE.read_text(),
            "agent/target.json": json.dumps(target),
        },
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script("HEAD-PROMPT", tool_call("lookup", {"q": "x"}), text("no greeting from me"))
    model.script("BASE-PROMPT", tool_call("lookup", {"q": "x"}), text("hello"))

    env = {
        "OPENAI_BASE_URL": model.base_url,
        **secrets(github),
        "SERVICE_URL": "https://deploy:dpl-0a1b2c3d4e5f6a7b@deploy.example",
        "HARMLESS_SETTING": "visible-value",
        "RUNNER_TEMP": str(runner),
    }
    launch = prepare(
        world.workspace,
        github,
        pull_request_event(github.repository, 7, base, head),
        inputs={"output-dir": ".evalward/out"},
        env=env,
        run_dir=runner,
    )
    for name in ("github_env", "github_path", "github_state"):
        (runner / name).write_text("")
    launch.env |= {
        "GITHUB_ENV": str(runner / "github_env"),
        "GITHUB_PATH": str(runner / "github_path"),
        "GITHUB_STATE": str(runner / "github_state"),
    }
    # actions/checkout's default: the token stays in the checkout's git configuration.
    token_header = "AUTHORIZATION: basic " + base64.b64encode(f"x:{github.token}".encode()).decode()
    repo.git("config", "http.https://github.com/.extraheader", token_header)
    # The runner's user owns the checkout and its files, with the runner's modes.
    for path in [world.workspace, *world.workspace.rglob("*"), runner, *runner.iterdir()]:
        os.lchown(path, RUNNER_UID, RUNNER_UID)
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)

    done = subprocess.run(
        ENTRYPOINT,
        cwd=world.workspace,
        env=launch.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return ActionRun(
        done.returncode,
        done.stdout,
        done.stderr,
        {},
        launch.summary_file.read_text(),
        world.workspace / ".evalward" / "out",
    )


@needs_root
@needs_python
@pytest.mark.parametrize("kind", ["command", "http", "tool"])
def test_a_hostile_pr_agent_gets_nothing_and_the_gate_stays_honest(
    kind: str, world: World, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    attacker = Attacker()
    before = package_digest()
    try:
        run = run_hostile_pr(kind, world, github, model, attacker)
    finally:
        attacker.server.close()
    report = attacker.report(run)
    runner = world.runner

    # It ran, as the agent user, in a copy of the checkout, with only what was allowed.
    assert (report["uid"], report["gid"]) == (AGENT_UID, AGENT_UID), report["uid"]
    assert 0 not in report["groups"] and RUNNER_UID not in report["groups"]
    assert not report["cwd"].startswith(str(world.workspace))
    own = report["own_env"]
    assert own["HARMLESS_SETTING"] == "visible-value"
    assert own["HOME"] == own["TMPDIR"] and not Path(own["HOME"]).exists(), "home removed"
    assert not Path(report["cwd"]).exists(), "the working copy is removed after the run"
    # Provider keys it asked for are the model proxy's own, never the real ones.
    proxied = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"}
    assert set(ASKED_FOR) & set(own) - proxied == {"HARMLESS_SETTING"}, sorted(own)
    assert all(own[name].startswith("evalward-proxy-") for name in proxied & set(own))
    plumbing = ("GITHUB_", "INPUT_", "ACTIONS_", "RUNNER_")
    assert not [name for name in own if name.startswith(plumbing)]
    assert "PYTHONSAFEPATH" not in own, "evalward's own -I is not passed on"

    # It could read no other process's environment, nor signal evalward.
    assert not report["parent_env"]["ok"], report["parent_env"]
    assert not report["signal_parent"]["ok"]
    readable = [pid for pid, found in report["all_env"].items() if found["ok"]]
    assert str(os.getpid()) not in readable

    # The runner's files: closed to it; and it wrote nothing anywhere.
    for name in ("event", "github_output", "step_summary", "github_env", "git_config"):
        assert not report["read"][name]["ok"], f"{name} was readable"
    assert stat.S_IMODE(world.workspace.stat().st_mode) == 0o755, "the workspace's mode is back"
    assert {name: found["ok"] for name, found in report["write"].items()} == dict.fromkeys(
        report["write"], False
    )
    output_text = (runner / "github_output").read_text()
    assert "PWNED" not in output_text and "result=pass" not in output_text.splitlines()
    for name in ("github_env", "github_path", "github_state"):
        assert (runner / name).read_text() == "", name
    assert "PWNED" not in run.summary
    assert json.loads((runner / "event.json").read_text())["number"] == 7
    for name in ("github_output", "step_summary", "event.json", "github_env"):
        assert (runner / name).stat().st_uid == RUNNER_UID, "the runner still owns its files"
        assert stat.S_IMODE((runner / name).stat().st_mode) == 0o644, f"{name}'s mode is back"
    assert not (run.output_dir / "pwned.txt").exists()
    assert not (world.workspace / ".evalward" / "cache" / "pwned.json").exists()
    assert not (world.workspace / "pwned.txt").exists()
    assert not (PACKAGE / "pwned.py").exists()
    assert not (SITE_PACKAGES / "zz-pwned.pth").exists()
    assert package_digest() == before, "evalward's installation changed"

    # The gate is the honest one: the head's agent fails its Eval, and says so.
    assert run.returncode == 1, run.stdout + run.stderr
    assert parse_github_output(output_text)["result"] == "fail"
    (comment,) = github.comments_on(7)
    assert "pr-agent-eval" in comment["body"]
    sides = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert sides == {"base": "pass", "head": "fail"}, sides

    # No secret, in any form, reached the attacker or any output.
    loot = attacker.everything()
    # the head's runs each report once more, in plain JSON, where attribution runs the
    # head's variants as the head (each held to the same sandbox): the rest is base64
    loot += "\n".join(
        r.body.decode(errors="replace")
        if r.body.startswith(b"{")
        else base64.b64decode(r.body).decode(errors="replace")
        for r in attacker.received[1:]
    )
    written = {p.name: p.read_text() for p in run.output_dir.iterdir() if p.is_file()}
    written |= {
        "attacker": loot,
        "summary": run.summary,
        "GITHUB_OUTPUT": output_text,
        "stdout": run.stdout,
        "stderr": run.stderr,
        "comment": comment["body"],
    }
    for name, content in written.items():
        for secret in secrets(github).values():
            assert secret not in content, f"{secret!r} reached {name}"
            assert secret[4:16] not in content, f"part of {secret!r} reached {name}"


@needs_root
def test_a_pr_cannot_point_evalwards_output_at_a_place_its_agent_can_write(
    world: World, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """A committed `.evalward` link to a world-writable directory would let the agent plant
    files (or links) where evalward, as root, writes its results."""
    trap = world.root / "trap"
    trap.mkdir(mode=0o777)
    trap.chmod(0o1777)
    repo = GitRepo(world.workspace)
    base = repo.commit("an agent", {"evals/pr-agent.yaml": SUITE, "agent/benign.py": BENIGN})
    repo.branch("feature")
    (world.workspace / ".evalward").symlink_to(trap)
    head = repo.commit(
        "an agent that runs", {"agents/pr-agent.yaml": agent_yaml("command", "agent/benign.py", "")}
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    launch = prepare(
        world.workspace,
        github,
        pull_request_event(github.repository, 7, base, head),
        inputs={"output-dir": ".evalward/out"},
        env={"OPENAI_BASE_URL": model.base_url},
        run_dir=world.runner,
    )

    done = subprocess.run(
        ENTRYPOINT, cwd=world.workspace, env=launch.env, capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 2, done.stdout + done.stderr
    assert "::error::action input `output-dir`: .evalward is a symbolic link in the checkout" in (
        done.stderr
    )
    assert list(trap.iterdir()) == []


def test_a_credential_the_checkout_kept_in_git_config_is_named_not_shown(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """actions/checkout's default leaves the token in .git/config. With the user switch the
    workspace is closed to the agent user while agents run; without it (`agent-isolation:
    off`) the pull request's programs could read it, and the action says so, without
    printing it."""
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)
    header = "AUTHORIZATION: basic " + base64.b64encode(f"x:{github.token}".encode()).decode()
    repo.git("config", "http.https://github.com/.extraheader", header)
    env = provider_env(model)

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=env,
        inputs={"agent-isolation": "off"},
    )

    assert run.returncode == 0, run.stderr
    warning = next(line for line in run.stdout.splitlines() if "keeps a credential" in line)
    assert warning.startswith("::warning::") and "persist-credentials: false" in warning
    assert "http.https://github.com/.extraheader" in warning
    assert header.split()[-1] not in run.stdout + run.stderr


SIDE_BY_SIDE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: bot }}
spec:
  runtime: {{ command: {{ run: [{python}, agent/bot.py] }} }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: bot-eval }}
spec:
  targetAgent: bot
  fixtures: [fa, fb]
  scoring: {{ passThreshold: 0.5 }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: fa }}
spec:
  targetAgent: bot
  input: {{ type: prompt, payload: {{ prompt: question-a }} }}
  assertions: [ {{ type: contains, value: GOOD }} ]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: fb }}
spec:
  targetAgent: bot
  input: {{ type: prompt, payload: {{ prompt: question-b }} }}
  assertions: [ {{ type: contains, value: GOOD }} ]
"""

SLOW_AND_GOOD = """\
import json, sys, time
sys.stdin.readline()
time.sleep(2)
print(json.dumps({"type": "final", "content": "GOOD"}), flush=True)
"""

SABOTEUR = r"""
import json, os, signal, sys, time
line = sys.stdin.readline()
root = os.path.dirname(os.path.dirname(os.getcwd()))  # this run's folder of working copies
if os.fork() == 0:
    os.setsid()  # out of the process group evalward kills at the end of the run
    if os.fork() == 0:
        end = time.time() + 20
        while time.time() < end:
            for pid in os.listdir("/proc"):
                if pid.isdigit() and int(pid) != os.getpid():
                    try:  # every program of this run it may signal, the base's included
                        if os.readlink(f"/proc/{pid}/cwd").startswith(root):
                            os.kill(int(pid), signal.SIGKILL)
                    except Exception:
                        pass
            time.sleep(0.02)
        os._exit(0)
    os._exit(0)
answer = "BAD" if "question-b" in line else "GOOD"
print(json.dumps({"type": "final", "content": answer}), flush=True)
"""


@needs_root
@needs_python
def test_a_head_program_cannot_kill_the_base_runs_beside_it_nor_outlive_the_job(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The head's agent regresses on one fixture and leaves a process behind (setsid) that
    kills every process it may signal: were the base runs its to kill, they would end in
    `error` and the regression would vanish. Base programs run as another user."""
    base = repo.commit(
        "a slow, good agent",
        {
            "agents/bot.yaml": SIDE_BY_SIDE.format(python=AGENT_PYTHON),
            "agent/bot.py": SLOW_AND_GOOD,
        },
    )
    repo.branch("feature")
    head = repo.commit("a saboteur", {"agent/bot.py": SABOTEUR})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    env = provider_env(model)

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=env,
        inputs={"fail-on-regression": "any", "cache": "off"},
    )

    sides = {(f["side"], f["fixture"]): f["status"] for f in run.results()["fixtures"]}
    assert sides[("base", "fa")] == sides[("base", "fb")] == "pass", sides
    assert sides[("head", "fb")] in ("fail", "error")  # it may kill its own side
    assert run.returncode == 1, run.stdout + run.stderr
    leftovers = [
        pid
        for pid in os.listdir("/proc")
        if pid.isdigit() and _uid_of(pid) in (AGENT_UID, AGENT_UID + 1)
    ]
    assert leftovers == [], "an agent's process outlived the job"


def _uid_of(pid: str) -> int | None:
    """The uid of a live process (a zombie is dead: it waits only for its reaper)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    if "\nState:\tZ" in status:
        return None
    return Path(f"/proc/{pid}").stat().st_uid
