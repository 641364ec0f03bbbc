"""Two jobs on one self-hosted machine, no container each: a pull request into main whose
head breaks a fixture (the victim), and a pull request into `evil`, a branch its author
pushed, whose base is therefore that author's code. The base turns of every job went
together, so the attacker's base tool ran beside the victim's base run and stopped its
playground's service over loopback: the victim's base failed the fixture its head breaks, no
regression, exit 0. Another branch's base now waits for the victim's base turn to end, as a
head does, and the victim's regression blocks."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import execute, prepare, start_action
from support.agentenv import PYTHON, needs_root, open_pr, workspace
from support.jsonserver import json_server

pytestmark = pytest.mark.hostile

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
      command: {{ run: [{PYTHON}, tools/refund.py], timeoutSeconds: 120 }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: refunds }}
spec:
  targetAgent: refunder
  fixtures: [refund-a1]
  scoring: {{ passThreshold: 0, gate: {{ failOnRegression: any }} }}
  execution: {{ timeoutSeconds: 120 }}
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

SERVICE = json_server(
    """\
    def do_GET(self):
        self.reply({"alive": STATE["alive"], "shop": "refund-desk-under-attack"})
    def do_POST(self):
        if self.rfile.read(int(self.headers.get("content-length") or 0)) == b"shutdown":
            STATE["alive"] = False
        self.reply({"ok": True})
""",
    preamble="import json, os, sys\nSTATE = {'alive': True}\n",
)

HONEST_TOOL = """\
import json, os, pathlib, sqlite3, sys, time
args = json.load(sys.stdin)
meeting = pathlib.Path({meeting!r})
(meeting / "victim-base-started").write_text("")
time.sleep({sleep})  # long enough for another job to start beside it, were it let
db = sqlite3.connect(os.environ["EVALWARD_SQLITE_PATH"])
db.execute("INSERT INTO refunds (order_id) VALUES (?)", ({order},))
db.commit()
print(json.dumps({{"done": True}}))
"""

ATTACK_TOOL = """\
import json, os, sys, time, urllib.parse, urllib.request
json.load(sys.stdin)
own = urllib.parse.urlsplit(os.environ["EVALWARD_SERVICE_URL"]).port
def others():
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        port = int(local.split(":")[1], 16)
        if state == "0A" and local.startswith("0100007F:") and port != own:
            yield port
stopped, looks = [], 0
while not stopped and looks < 20:  # another job's service, while it runs beside this one
    looks += 1
    for port in others():
        try:  # a shop's service alone: no other test's server on this machine
            url = f"http://127.0.0.1:{port}/"
            if b"refund-desk-under-attack" in urllib.request.urlopen(url, timeout=0.5).read():
                request = urllib.request.Request(url, data=b"shutdown")
                urllib.request.urlopen(request, timeout=0.5).read()
                stopped.append(port)
        except Exception:
            pass
    time.sleep(0.1)
print(json.dumps({"stopped": stopped}))
"""


@needs_root
def test_another_branch_s_base_cannot_stop_this_job_s_base_service(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    model.script(
        "Refund order A-1", tool_call("create_refund", {"order_id": "A-1"}), text("Refunded.")
    )
    meeting = Path(tempfile.mkdtemp(prefix="evalward-test-meeting-"))
    meeting.chmod(0o777)  # the victim's base agent user says there when its run starts
    roots = {name: tmp_path / name for name in ("victim", "attacker")}
    for root in (tmp_path, *roots.values()):
        root.mkdir(exist_ok=True)
        root.chmod(0o755)
    env = {"OPENAI_API_KEY": "sk-test-0123456789abcdef", "OPENAI_BASE_URL": model.base_url}
    victims, attackers = FakeGitHub(), FakeGitHub()
    common = {"evals.yaml": SUITE, "shop/seed.sql": "CREATE TABLE refunds (order_id TEXT);\n"}
    common["shop/service.py"] = SERVICE
    honest = HONEST_TOOL.format(meeting=str(meeting), sleep=8, order='args["order_id"]')
    breaks = HONEST_TOOL.format(meeting=str(meeting), sleep=0, order='"B-2"')
    inputs = {"output-dir": ".evalward/out", "agent-user": "auto", "cache": "off"}
    try:
        victim_event = open_pr(
            roots["victim"] / "workspace",
            victims,
            {**common, "tools/refund.py": honest},
            {"tools/refund.py": breaks},
            suite={},
        )
        attacker_event = open_pr(
            roots["attacker"] / "workspace",
            attackers,
            {**common, "tools/refund.py": ATTACK_TOOL},
            {"README.md": "a pull request into a branch of its author's\n"},
            suite={},
        )
        attacker_event["pull_request"]["base"]["ref"] = "evil"
        victim = prepare(
            roots["victim"] / "workspace", victims, victim_event, inputs=inputs, env=env
        )
        job = start_action(roots["victim"] / "workspace", victim)
        try:
            while not (meeting / "victim-base-started").exists():
                assert job.poll() is None, job.communicate()
                time.sleep(0.05)
            attacker = prepare(
                roots["attacker"] / "workspace", attackers, attacker_event, inputs=inputs, env=env
            )
            execute(roots["attacker"] / "workspace", attacker)
            out, err = job.communicate()
        finally:
            if job.poll() is None:
                job.kill()
                job.wait()
        run = victim.finish(job.returncode, out, err)
        run.output_dir = roots["victim"] / "workspace" / ".evalward" / "out"

        sides = {f["side"]: f for f in run.results()["fixtures"]}
        assert sides["base"]["status"] == "pass", sides["base"]
        assert sides["head"]["status"] == "fail", sides["head"]
        assert run.returncode == 1, run.stdout + run.stderr
    finally:
        victims.close()
        attackers.close()
        shutil.rmtree(meeting, ignore_errors=True)
