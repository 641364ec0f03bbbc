"""Containment that holds where the cgroup file system is read-only (a GitHub Docker action)
as where it is writable, through the action's entry point.

A pull request's tool leaves a process whose first thread ends while a second runs on: /proc
shows it as a zombie, yet it runs. Under adaptive reps the base runs in later rounds, after
such head runs: no base program meets it, and it does not outlive the job. A process of
another job's head user left on the machine (a job killed outright) is alive while this
job's base runs: their results are not kept in the result cache, so a rerun runs them again.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evalward.runtime.agent_users import claim_pair
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.agentenv import PYTHON, needs_root, open_pr, workspace
from support.agentuser import AGENT_UID
from support.cgroup_modes import MODES, run_gate_in

__all__ = ["workspace"]  # a fixture

SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: refunder }}
spec:
  models: [openai/gpt-4.1-mini]
  system: Refund what the customer asks for.
  tools:
    - name: create_refund
      description: Refund an order.
      command: [{PYTHON}, tools/refund.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: refunds }}
spec:
  targetAgent: refunder
  fixtures: [refund-a1]
  execution: {{ reps: {{ min: 1, max: 4 }} }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: refund-a1 }}
spec:
  targetAgent: refunder
  input: {{ type: prompt, payload: {{ prompt: "Refund order A-1 please" }} }}
  assertions: [{{ type: toolArgs, tool: create_refund, args: {{ amount: 25 }} }}]
"""
ROUNDED = SUITE.replace("customer asks for.", "customer asks for, rounded up.")

# Which processes of the other side's user run, by any thread (a first thread that ended
# alone shows as a zombie: the process runs on).
LOOK = """\
import json, os, subprocess, sys, time
json.load(sys.stdin)
other = os.getuid() + {offset}

def runs_as_other(pid):
    alive, theirs = False, False
    try:
        tasks = os.listdir(f"/proc/{{pid}}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            fields = dict(
                line.split(":", 1) for line in open(f"/proc/{{pid}}/task/{{task}}/status")
            )
        except OSError:
            continue
        theirs = theirs or other in [int(u) for u in fields["Uid"].split()[:3]]
        alive = alive or fields["State"].split()[0] not in "ZX"
    return alive and theirs

alive = [int(p) for p in os.listdir("/proc") if p.isdigit() and runs_as_other(p)]
"""
BASE_TOOL = LOOK.format(offset=-1) + 'print(json.dumps({"refunded": 25, "other_side": alive}))\n'
HALF_DEAD = (
    "import ctypes, threading, time\\n"
    "def on():\\n"
    "    while True:\\n"
    "        time.sleep(0.05)\\n"
    "threading.Thread(target=on).start()\\n"
    "ctypes.CDLL(None).syscall(60, 0)\\n"  # SYS_exit: the first thread alone
)
HEAD_TOOL = (
    LOOK.format(offset=+1)
    + f"""\
half = subprocess.Popen(  # its own session; its first thread ends, its second runs on
    [sys.executable, "-c", "{HALF_DEAD}"],
    start_new_session=True,
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
for _ in range(500):  # until /proc shows it as a zombie
    if open(f"/proc/{{half.pid}}/stat").read().rsplit(")", 1)[1].split()[0] == "Z":
        break
    time.sleep(0.01)
print(json.dumps({{"refunded": 30, "other_side": alive, "half_dead": half.pid}}))
"""
)


def _runs(pid: int) -> bool:
    """Whether any thread of `pid` runs."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            stat = Path(f"/proc/{pid}/task/{task}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rfind(")") + 2] not in "ZX":
            return True
    return False


def _reports(run: Any) -> dict[str, list[dict[str, Any]]]:
    seen: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
    for fixture in run.results()["fixtures"]:
        step = next(s for s in fixture["trace"]["steps"] if s["type"] == "tool_result")
        seen[fixture["side"]].append(json.loads(step["output"]))
    return seen


def _script(model: ScriptedModelServer) -> None:
    model.script(
        "rounded up", tool_call("create_refund", {"order_id": "A-1", "amount": 30}), text("Done.")
    )
    model.script(
        "Refund order A-1",
        tool_call("create_refund", {"order_id": "A-1", "amount": 25}),
        text("Done."),
    )


@needs_root
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="SYS_exit is 60 on x86_64 only")
@pytest.mark.parametrize("cgroups", MODES)
def test_a_head_process_whose_first_thread_ended_meets_no_base_run_and_ends_with_the_job(
    workspace: Path, github: FakeGitHub, model: ScriptedModelServer, cgroups: str
) -> None:
    files = {"evals.yaml": SUITE, "tools/refund.py": BASE_TOOL}
    head = {"evals.yaml": ROUNDED, "tools/refund.py": HEAD_TOOL}
    event = open_pr(workspace, github, files, head, suite={})
    _script(model)
    half_dead: list[int] = []
    try:
        run = run_gate_in(cgroups, workspace, github, event, OPENAI_BASE_URL=model.base_url)
        seen = _reports(run)
        half_dead = [report["half_dead"] for report in seen["head"]]
        still = [pid for pid in half_dead if _runs(pid)]
    finally:
        for pid in half_dead:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    assert run.returncode == 1, run.stdout + run.stderr  # blocked: the head is broken
    assert len(seen["head"]) >= 2 and seen["base"], seen  # base runs in later rounds
    for side, reports in seen.items():
        for report in reports:
            assert report["other_side"] == [], (side, report)
    assert still == []  # none outlived its job
    holds = "in a cgroup each" if cgroups == "writable" else "a uid sweep over every thread"
    assert holds in run.stdout


@needs_root
@pytest.mark.parametrize("cgroups", MODES)
def test_a_base_run_beside_another_job_s_head_process_is_not_kept_in_the_result_cache(
    workspace: Path, github: FakeGitHub, model: ScriptedModelServer, cgroups: str
) -> None:
    """A job killed outright left a process of its head user running; this job's base runs
    beside it. Their results are not kept: the rerun, once it is gone, runs the base again."""
    files = {"evals.yaml": SUITE, "tools/refund.py": BASE_TOOL}
    head = {"evals.yaml": ROUNDED, "tools/refund.py": BASE_TOOL}
    event = open_pr(workspace, github, files, head, suite={})
    _script(model)
    other = claim_pair({0, AGENT_UID, AGENT_UID + 1})  # another job's pair, held
    stray = subprocess.Popen(
        [PYTHON, "-c", "import time; time.sleep(600)"],
        user=other.user.uid,
        group=other.user.gid,
        extra_groups=[],
        start_new_session=True,
    )
    try:
        first = run_gate_in(cgroups, workspace, github, event, OPENAI_BASE_URL=model.base_url)
    finally:
        stray.kill()
        stray.wait()
        other.release()
    second = run_gate_in(cgroups, workspace, github, event, OPENAI_BASE_URL=model.base_url)

    for run in (first, second):
        assert run.returncode == 1, run.stdout + run.stderr
    assert "a head agent user's process was alive during the base run" in first.stdout
    assert str(stray.pid) in first.stdout
    bases = [f for f in second.results()["fixtures"] if f["side"] == "base"]
    assert bases and not any(f["cached"] for f in bases)  # run again: none was kept
    third = run_gate_in(cgroups, workspace, github, event, OPENAI_BASE_URL=model.base_url)
    if "a head agent user's process was alive" not in second.stdout:  # (tests beside this)
        assert all(f["cached"] for f in third.results()["fixtures"] if f["side"] == "base")
