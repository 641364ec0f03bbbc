"""Jobs that share a machine never touch each other's processes (`agent-user: auto`).

A job stops every process of its agent users when it ends. Two jobs with default inputs on
one self-hosted machine (or a job beside a test run) each take a pair of users of their own,
so one job's end leaves the other's agents and playground services running, and a process
of someone else's that happens to run as the image's agent uid is never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.test_github_events import real_payload
from evalward.runtime.agent_users import claim_pair
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import ActionRun, prepare, start_action
from support.actionrun import execute as execute_action
from support.agentenv import PYTHON, RUNNER_UID, needs_root, open_pr, run_gate, workspace
from support.jsonserver import json_server

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
      command: {{ run: [{PYTHON}, tools/refund.py], timeoutSeconds: 280 }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: refunds }}
spec:
  targetAgent: refunder
  fixtures: [refund-a1]
  playground:
    name: shop
    sqlite: {{ seed: shop/seed.sql }}
    service: {{ start: [{PYTHON}, shop/service.py, "{{port}}"], ready: /health }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: refund-a1 }}
spec:
  targetAgent: refunder
  input: {{ type: prompt, payload: {{ prompt: "Refund order A-1 please" }} }}
  assertions:
    - {{ type: sql, query: "SELECT order_id FROM refunds", rows: [[A-1]] }}
    - {{ type: stateValue, at: service.alive, equals: true }}
"""

SEED = """\
CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id TEXT);
"""

SERVICE = json_server(
    """\
    def do_GET(self):
        self.reply({"alive": True, "uid": os.getuid()})
""",
    preamble="import json, os, sys\n",
)

TOOL = """\
import json, os, pathlib, sqlite3, subprocess, sys, time
args = json.load(sys.stdin)
meeting = pathlib.Path({meeting!r})
# a process that leaves the run's session, as a careless or hostile tool's would
escaped = subprocess.Popen(
    ["sleep", "600"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
)
if {hold!r}:
    try:  # the first head tool to take the hold waits, mid-run, till the test lets it go
        os.rename(meeting / "hold", meeting / f"held-{{os.getuid()}}")
    except FileNotFoundError:
        pass
    else:
        for _ in range(2400):
            if (meeting / "a-ended").exists():
                break
            time.sleep(0.1)
        else:
            sys.exit("the other job never ended")
db = sqlite3.connect(os.environ["EVALWARD_SQLITE_PATH"])
db.execute("INSERT INTO refunds (order_id) VALUES (?)", (args["order_id"],))
db.commit()
print(json.dumps({{"uid": os.getuid(), "escaped": escaped.pid}}))
"""


@pytest.fixture
def meeting() -> Iterator[Path]:
    """A folder both jobs' tools can read, where the test lets a job go on."""
    folder = Path(tempfile.mkdtemp(prefix="evalward-meeting-"))
    folder.chmod(0o777)  # not sticky: an agent user may rename the test's hold
    yield folder
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


def _repo(workspace: Path, github: FakeGitHub, meeting: Path) -> dict[str, object]:
    """A pull request whose head's tool holds the first head run that takes the hold."""
    files = {"evals.yaml": SUITE, "shop/seed.sql": SEED, "shop/service.py": SERVICE}
    files["tools/refund.py"] = TOOL.format(meeting=str(meeting), hold=False)
    head = {
        "evals.yaml": SUITE.replace("system: Refund what", "system: Always refund what"),
        "tools/refund.py": TOOL.format(meeting=str(meeting), hold=True),
    }
    return open_pr(workspace, github, files, head, suite={})


def _push_of(workspace: Path, source: Path, commit: str) -> dict[str, Any]:
    """A push of `commit`, the checkout at `source` (its copy, in `workspace`)."""
    shutil.copytree(source, workspace, symlinks=True, ignore=shutil.ignore_patterns(".evalward"))
    for path in [workspace, *workspace.rglob("*")]:  # the runner's user owns the checkout
        os.lchown(path, RUNNER_UID, RUNNER_UID)
    payload = real_payload("push", after=commit)  # merged as it is
    payload["ref"] = f"refs/heads/{payload['repository']['default_branch']}"
    return payload


def _script(model: ScriptedModelServer) -> None:
    model.script(
        "Refund order A-1", tool_call("create_refund", {"order_id": "A-1"}), text("Refunded.")
    )


def _tool_reports(run: ActionRun) -> dict[str, dict[str, int]]:
    found = {}
    for fixture in run.results()["fixtures"]:
        assert fixture["status"] == "pass", (fixture["side"], fixture["message"])
        step = next(s for s in fixture["trace"]["steps"] if s["type"] == "tool_result")
        found[fixture["side"]] = json.loads(step["output"])
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


@needs_root
def test_two_jobs_with_default_inputs_at_once_leave_each_other_running(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer, meeting: Path
) -> None:
    """Job B gates a pull request; its head's tool waits, mid-run, with its playground service
    up, until job A, a push of the same commit (the pull request fast-forwarded into main),
    has run and ended, stopping every process of its agent users. A's runs may go beside B's
    head: sides take turns on a machine, and the runs of one commit are one turn. Then B's
    runs go on and pass."""
    _script(model)
    first, second = tmp_path / "a", tmp_path / "b"
    for root in (first, second):
        root.mkdir()
        root.chmod(0o755)
    (meeting / "hold").write_text("")
    waiting = _repo(second / "workspace", github, meeting)
    env = {"OPENAI_API_KEY": "sk-environment-secret-0123456789", "OPENAI_BASE_URL": model.base_url}
    launch = prepare(
        second / "workspace",
        github,
        waiting,
        inputs={"output-dir": ".evalward/out", "agent-user": "auto"},
        env=env,
    )
    job_b = start_action(second / "workspace", launch)
    try:
        while not list(meeting.glob("held-*")):  # B's head is mid-run, its service up
            assert job_b.poll() is None, job_b.communicate()
            time.sleep(0.1)
        head = waiting["pull_request"]["head"]["sha"]  # type: ignore[index]
        pushed = _push_of(first / "workspace", second / "workspace", head)
        a = prepare(
            first / "workspace",
            github,
            pushed,
            inputs={"output-dir": ".evalward/out", "agent-user": "auto"},
            env=env,
            event_name="push",
        )
        job_a = execute_action(first / "workspace", a)
        job_a.output_dir = first / "workspace" / ".evalward" / "out"
        (meeting / "a-ended").write_text("")
        out, err = job_b.communicate(timeout=600)
    finally:
        if job_b.poll() is None:
            job_b.kill()
            job_b.wait()
    run_b = launch.finish(job_b.returncode, out, err)
    run_b.output_dir = second / "workspace" / ".evalward" / "out"

    assert job_a.returncode == 0, job_a.stdout + job_a.stderr
    assert run_b.returncode == 0, run_b.stdout + run_b.stderr
    users_a = {report["uid"] for report in _tool_reports(job_a).values()}
    users_b = {report["uid"] for report in _tool_reports(run_b).values()}
    assert len(users_a) == 1 and len(users_b) == 2  # a push runs the head; a gate both sides
    assert not users_a & users_b


@needs_root
def test_a_job_s_end_leaves_a_foreign_process_of_the_default_uid_alive(
    workspace: Path, github: FakeGitHub, model: ScriptedModelServer, meeting: Path
) -> None:
    """Someone else's process runs as the uid a job would have taken: the job takes the next
    pair, ends its own escaped processes, and leaves the foreign one running."""
    _script(model)
    free = claim_pair({0, os.geteuid(), RUNNER_UID})
    free.release()
    foreign = subprocess.Popen(
        ["sleep", "600"], user=free.user.uid, group=free.user.uid, start_new_session=True
    )
    try:
        event = _repo(workspace, github, meeting)
        run = run_gate(
            workspace, github, event, {"agent-user": "auto"}, OPENAI_BASE_URL=model.base_url
        )
        assert run.returncode == 0, run.stdout + run.stderr
        reports = _tool_reports(run)
        assert free.user.uid not in {report["uid"] for report in reports.values()}
        for report in reports.values():  # the job's own escaped processes are gone
            assert not _alive(report["escaped"]), report
        assert _alive(foreign.pid)
    finally:
        os.killpg(foreign.pid, signal.SIGKILL)
        foreign.wait()
