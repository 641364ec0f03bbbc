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

from action.test_github_events import real_payload
from evalward.runtime.isolation.agent_users import CLAIMS, claim_pair
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import SHARD_KEY, ActionRun, Launch, prepare, start_action
from support.actionrun import execute as execute_action
from support.agentenv import PYTHON, RUNNER_UID, needs_root, open_pr, run_gate, workspace
from support.jsonserver import json_server

pytestmark = pytest.mark.e2e

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
started = time.time()
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
print(json.dumps({{"uid": os.getuid(), "escaped": escaped.pid, "started": started,
                  "ended": time.time()}}))
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


def _tool_reports(run: ActionRun) -> dict[str, dict[str, float]]:
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
def test_the_shards_of_a_matrix_on_one_machine_take_the_sides_turns(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer, meeting: Path
) -> None:
    """Two shards of one pull request run at once on one machine, sharing its loopback and
    its /tmp: part 1 has the head's run, part 2 the base's. While part 1's head is mid-run,
    part 2 says it waits and runs nothing of the base; its base starts once part 1's head
    has ended."""
    _script(model)
    (meeting / "hold").write_text("")
    workspace = tmp_path / "workspace"
    tmp_path.chmod(0o755)
    event = _repo(workspace, github, meeting)
    env = {"OPENAI_API_KEY": "sk-environment-secret-0123456789", "OPENAI_BASE_URL": model.base_url}

    def part(index: int) -> tuple[Launch, subprocess.Popen[str]]:
        launch = prepare(
            workspace,
            github,
            event,
            inputs={
                "output-dir": str(tmp_path / f"part-{index}"),
                "agent-user": "auto",
                "shard": f"{index}/2",
                "shard-key": SHARD_KEY,
                "cache": "off",
            },
            env=env,
            run_dir=tmp_path / f"runner-{index}",
        )
        return launch, start_action(workspace, launch)

    first, job_1 = part(1)
    jobs = [job_1]
    try:
        while not list(meeting.glob("held-*")):  # part 1's head is mid-run
            assert job_1.poll() is None, job_1.communicate()
            time.sleep(0.1)
        second, job_2 = part(2)
        jobs.append(job_2)
        assert job_2.stdout is not None
        said = []
        while (line := job_2.stdout.readline()) and "waiting for another job" not in line:
            said.append(line)
        assert line == (
            "evalward: waiting for another job on this machine (head runs) before this job's "
            "base runs start\n"
        ), "".join(said)
        assert job_2.poll() is None
        (meeting / "a-ended").write_text("")
        out_1, err_1 = job_1.communicate(timeout=600)
        out_2, err_2 = job_2.communicate(timeout=600)
    finally:
        for job in jobs:
            if job.poll() is None:
                job.kill()
                job.wait()
    run_1 = first.finish(job_1.returncode, out_1, err_1)
    run_2 = second.finish(job_2.returncode, line + out_2, err_2)
    assert run_1.returncode == 0, run_1.stdout + run_1.stderr
    assert run_2.returncode == 0, run_2.stdout + run_2.stderr
    head = _part_report(tmp_path / "part-1" / "shard-1-of-2.json", "head")
    base = _part_report(tmp_path / "part-2" / "shard-2-of-2.json", "base")
    assert base["started"] > head["ended"]


def _part_report(path: Path, side: str) -> dict[str, float]:
    (fixture,) = json.loads(path.read_text())["fixtures"]
    assert fixture["side"] == side and fixture["status"] == "pass", fixture["message"]
    step = next(s for s in fixture["trace"]["steps"] if s["type"] == "tool_result")
    return dict(json.loads(step["output"]))


@needs_root
@pytest.mark.usefixtures("head_strays_made")
def test_a_job_s_end_leaves_a_foreign_process_of_the_default_uid_alive(
    workspace: Path, github: FakeGitHub, model: ScriptedModelServer, meeting: Path
) -> None:
    """Someone else's process runs as the uid a job would have taken, one no job claimed here
    (a job that claimed and released it, and left it a process, would be a gone job whose
    leftovers a base run ends: tests/runtime/isolation/test_agent_claims.py): the job takes the next
    pair, ends its own escaped processes, and leaves the foreign one running."""
    _script(model)
    free = claim_pair({0, os.geteuid(), RUNNER_UID})
    # started while the claim holds the pair, so no other job on the machine takes it, and
    # its file removed before the claim lets go: another job's claim file is never touched
    foreign = subprocess.Popen(
        ["sleep", "600"], user=free.user.uid, group=free.user.uid, start_new_session=True
    )
    (CLAIMS / str(free.user.uid)).unlink()  # never claimed here, as far as jobs can tell
    free.release()
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
