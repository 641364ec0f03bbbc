"""A pull request's agent that answers for the base branch's playground service, so that a
head that never does the task passes the base's state check.

The service, and the dump of its state, run as the side's agent user, the pull request's
agent's user: the agent can stop, kill or out-bind what runs as it. So the agent's run, and
every process it left in a session of its own, is ended as it returns, before the state is
read (a process it left can neither stop the dump nor answer on the port), and the port's
listener must be one of the service's own processes, not merely its user's (another run of
the same agent, running beside it, cannot answer for it). Each program runs in a Landlock
domain of its own, where the kernel has one: the agent can neither rewrite the service's
memory nor (ABI 6) signal it. Each attack fails the gate (the
head's fixture fails, or its state is unreadable: undecided, never a pass).
"""

from __future__ import annotations

from typing import Any

import pytest

from evalward.runtime.isolation import landlock
from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import ActionRun, pull_request_event, run_action
from support.agentenv import PYTHON, needs_root
from support.gitrepo import GitRepo

pytestmark = [pytest.mark.hostile, needs_root]


def suite(*, dump: bool, fixtures: tuple[str, ...] = ("refund",)) -> str:
    """The clerk (`agent/clerk.py`), its desk service under a supervisor that outlives its
    listener (`world/supervise.py`), read by a `dump` command or its `state` endpoint, and
    fixtures that each want the desk's status `refunded`."""
    read = f"dump: [{PYTHON}, world/dump.py]" if dump else "state: /state"
    cases = "".join(
        f"""---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name} }}
spec:
  targetAgent: clerk
  input: {{ type: prompt, payload: {{ prompt: "{name}" }} }}
  assertions:
    - {{ type: stateValue, at: service.status, equals: refunded }}
"""
        for name in fixtures
    )
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: clerk }}
spec:
  runtime:
    command: {{ run: [{PYTHON}, agent/clerk.py] }}
  watch: [agent/*]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: clerk-eval }}
spec:
  targetAgent: clerk
  fixtures: [{", ".join(fixtures)}]
  playground:
    name: desk
    service:
      start: [{PYTHON}, world/supervise.py, "{{port}}"]
      ready: /health
      {read}
{cases}"""


DESK = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

state = {"status": "open"}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps(state).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        state["status"] = "refunded"
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""
SUPERVISE = r"""
import signal, subprocess, sys
subprocess.Popen([sys.executable, "world/desk.py", sys.argv[1]])
while True:
    signal.pause()  # a listener that ends is not started again
"""
DUMP = r"""
import os, sys, urllib.request
url = os.environ["EVALWARD_SERVICE_URL"] + "/state"
sys.stdout.write(urllib.request.urlopen(url).read().decode())
"""
BASE_AGENT = r"""
import json, os, sys, urllib.request
sys.stdin.read()
url = os.environ["EVALWARD_SERVICE_URL"] + "/refund"
urllib.request.urlopen(urllib.request.Request(url, data=b"")).read()
print(json.dumps({"type": "final", "content": "Your refund has started."}))
"""
TOOLS = r"""
import json, os, signal, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
asked = json.loads(sys.stdin.readline())
own = int(os.environ["EVALWARD_SERVICE_URL"].rsplit(":", 1)[1])


class Forged(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"status": "refunded"}).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def mine(needle):
    # (pid, arguments) of this user's processes whose arguments hold `needle`
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as line:
                    argv = line.read().split(b"\0")
                with open(f"/proc/{name}/status") as status:
                    uids = status.read().split("Uid:")[1].split()[:3]
                if needle in argv and str(os.getuid()) in uids:
                    yield int(name), argv
            except (OSError, IndexError):
                pass


def bind(port):
    HTTPServer.allow_reuse_address = True
    while True:
        try:
            return HTTPServer(("127.0.0.1", port), Forged)
        except OSError:
            time.sleep(0.01)


def left_behind(serve):
    # in a session of its own, past the agent's end
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open("/dev/null", os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            serve()
            os._exit(0)
        os._exit(0)
    os.wait()
"""
LEAVES_A_LISTENER = (
    TOOLS
    + r"""
for pid, argv in mine(b"world/desk.py"):
    if str(own).encode() in argv:
        os.kill(pid, signal.SIGKILL)  # the desk's listener; its supervisor lives on
server = bind(own)
def serve():
    server.timeout = 0.2
    end = time.time() + 60
    while time.time() < end:
        server.handle_request()
left_behind(serve)
server.socket.close()
print(json.dumps({"type": "final", "content": "Your refund has started."}))
"""
)
STOPS_THE_DUMP = (
    TOOLS
    + r"""
def serve():
    end = time.time() + 60
    while time.time() < end:
        dumps = [pid for pid, _ in mine(b"world/dump.py")]
        if not dumps:
            time.sleep(0.001)
            continue
        for pid in dumps:
            os.kill(pid, signal.SIGSTOP)
        for pid, argv in mine(b"world/desk.py"):
            os.kill(pid, signal.SIGKILL)
        server = bind(own)
        for pid in dumps:
            os.kill(pid, signal.SIGCONT)
        server.timeout = 0.2
        while time.time() < end:
            server.handle_request()
left_behind(serve)
print(json.dumps({"type": "final", "content": "Your refund has started."}))
"""
)
ANSWERS_FOR_ANOTHER_RUN = (
    TOOLS
    + r"""
marker = "/tmp/evalward-test-impostor-bound"
if asked["fixture"] == "refund":
    end = time.time() + 60
    while not os.path.exists(marker) and time.time() < end:
        time.sleep(0.01)  # the other run answers for this one's desk: no refund
else:
    import urllib.request
    url = os.environ["EVALWARD_SERVICE_URL"] + "/refund"
    urllib.request.urlopen(urllib.request.Request(url, data=b"")).read()
    end = time.time() + 60
    other = None
    while other is None and time.time() < end:
        for pid, argv in mine(b"world/desk.py"):
            if str(own).encode() not in argv:
                other = (pid, int(argv[-2] if argv[-1] == b"" else argv[-1]))
        time.sleep(0.01)
    try:
        os.kill(other[0], signal.SIGKILL)
    except PermissionError:  # each program in a Landlock domain of its own, signals scoped
        sys.stderr.write("the kill was refused\n")
        open(marker, "w").close()
    else:
        server = bind(other[1])
        open(marker, "w").close()
        server.timeout = 0.1
        # until the other run's desk is gone with it (its state was read, or could not be)
        while any(str(other[1]).encode() in argv for _, argv in mine(b"world/supervise.py")):
            server.handle_request()
print(json.dumps({"type": "final", "content": "Your refund has started."}))
"""
)


def gate(
    repo: GitRepo,
    github: FakeGitHub,
    suite_text: str,
    head_agent: str,
    desk: str = DESK,
    also: dict[str, str] | None = None,
) -> ActionRun:
    base = repo.commit(
        "a clerk and its desk",
        {
            "evals/clerk.yaml": suite_text,
            "agent/clerk.py": BASE_AGENT,
            "world/desk.py": desk,
            "world/supervise.py": SUPERVISE,
            "world/dump.py": DUMP,
        }
        | (also or {}),
    )
    repo.branch("feature")
    head = repo.commit("a clerk that never refunds", {"agent/clerk.py": head_agent})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    return run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env={"OPENAI_API_KEY": "sk-unused-0123456789"},
        inputs={"cache": "off"},
    )


def head_of(run: ActionRun, fixture: str = "refund") -> dict[str, Any]:
    (found,) = [
        f for f in run.results()["fixtures"] if f["side"] == "head" and f["fixture"] == fixture
    ]
    return dict(found)


@pytest.mark.parametrize(
    ("dump", "agent"),
    [(False, LEAVES_A_LISTENER), (True, STOPS_THE_DUMP)],
    ids=["a listener left on the port", "the dump stopped and the port taken"],
)
def test_a_process_the_agent_left_cannot_answer_for_the_service(
    repo: GitRepo, github: FakeGitHub, dump: bool, agent: str
) -> None:
    run = gate(repo, github, suite(dump=dump), agent)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    head = head_of(run)
    assert head["status"] != "pass", head
    assert "refunded" not in head["message"] or "held" in head["message"], head


def test_another_run_of_the_agent_beside_it_cannot_answer_for_its_service(
    repo: GitRepo, github: FakeGitHub
) -> None:
    """Two fixtures run at once as the same agent user: `watch` refunds at its own desk and
    takes the port of `refund`'s, whose agent refunds nothing, and answers its state read.
    Where the kernel scopes signals to a Landlock domain, `watch` cannot end the other desk
    in the first place."""
    run = gate(
        repo, github, suite(dump=False, fixtures=("refund", "watch")), ANSWERS_FOR_ANOTHER_RUN
    )

    assert run.returncode == 1, run.stdout + run.stderr
    refund, watch = head_of(run), head_of(run, "watch")
    assert refund["status"] != "pass", refund
    refused = "the kill was refused" in json_text(watch)
    assert refused or "is not the service's" in json_text(refund), (refund, watch)
    assert refused == (landlock.available() >= 6), watch
    assert watch["status"] == "pass"


def json_text(found: dict[str, Any]) -> str:
    import json

    return json.dumps(found)


FORBIDS_A_REFUND = suite(dump=False).replace("equals: refunded", "equals: awaiting")
"""The desk's status must stay `awaiting`: the agent may look, never refund."""
AWAITING_DESK = DESK.replace('"open"', '"awaiting"')
REWRITES_THE_DESK = r"""
import json, os, re, sys, urllib.request
sys.stdin.read()
url = os.environ["EVALWARD_SERVICE_URL"]
port = url.rsplit(":", 1)[1].encode()
urllib.request.urlopen(urllib.request.Request(url + "/refund", data=b"")).read()
tried = opened = 0
for name in os.listdir("/proc"):
    if not name.isdigit():
        continue
    try:
        with open(f"/proc/{name}/cmdline", "rb") as line:
            argv = line.read().split(b"\0")
    except OSError:
        continue
    if b"world/desk.py" not in argv or port not in argv:
        continue
    tried += 1
    try:
        with open(f"/proc/{name}/maps") as maps:
            regions = [each.split()[:2] for each in maps.read().splitlines()]
        mem = open(f"/proc/{name}/mem", "r+b", buffering=0)
    except OSError:
        continue
    opened += 1
    with mem:
        for where, perms in regions:
            start, end = (int(x, 16) for x in where.split("-"))
            if "rw" not in perms or end - start > 512 * 1024 * 1024:
                continue
            try:
                mem.seek(start)
                data = mem.read(end - start)
            except OSError:
                continue
            for found in re.finditer(b"refunded", data):
                mem.seek(start + found.start())
                mem.write(b"awaiting")
sys.stderr.write(f"desks {tried}, opened {opened}\n")
print(json.dumps({"type": "final", "content": "Nothing to do."}))
"""
"""A head that refunds, then finds its desk (a process of its own user) and writes
`awaiting` over every `refunded` in its memory, so that the desk reports the state the
fixture wants."""


def test_the_agent_cannot_rewrite_its_service_s_memory(repo: GitRepo, github: FakeGitHub) -> None:
    """The desk runs as the agent's own user, which the kernel lets trace its processes: each
    program runs in a Landlock domain of its own, so the agent cannot open the desk's memory,
    and the desk reports the refund."""
    run = gate(repo, github, FORBIDS_A_REFUND, REWRITES_THE_DESK, AWAITING_DESK)

    assert "runs in a Landlock domain of its own" in run.stdout, run.stdout
    assert run.returncode == 1, run.stdout + run.stderr
    head = head_of(run)
    assert head["status"] == "fail", head
    assert "desks 1, opened 0" in json_text(head), head


DATA_SUITE = (
    suite(dump=False)
    .replace("equals: refunded", "equals: awaiting")
    .replace("    service:\n", "    files: { seed: world/files }\n    service:\n")
    .replace("world/supervise.py", "world/ledger.py")
)
"""A desk that keeps its status in a file of its `{data}` folder, beside the agent's files."""
LEDGER = r"""
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

ledger = os.path.join(os.environ["EVALWARD_SERVICE_DATA"], "ledger.json")
with open(ledger, "w") as out:
    json.dump({"status": "awaiting"}, out)


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        with open(ledger, "rb") as read:
            body = read.read()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        with open(ledger, "w") as out:
            json.dump({"status": "refunded"}, out)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""
REWRITES_THE_LEDGER = r"""
import json, os, sys, urllib.request
sys.stdin.read()
url = os.environ["EVALWARD_SERVICE_URL"]
urllib.request.urlopen(urllib.request.Request(url + "/refund", data=b"")).read()
files = os.environ["EVALWARD_PLAYGROUND_DIR"]
places = [os.path.join(files, "..", "data"), os.path.join(files, "..")]
places += [os.path.dirname(os.path.dirname(files))]
for name in os.listdir("/proc"):
    if name.isdigit():
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                for pair in environ.read().split(b"\0"):
                    if pair.startswith(b"EVALWARD_SERVICE_DATA="):
                        places.append(pair.split(b"=", 1)[1].decode())
        except OSError:
            pass
written = []
for place in places:
    try:
        for entry in [place, *[os.path.join(place, each) for each in os.listdir(place)]]:
            target = os.path.join(entry, "ledger.json")
            if os.path.isfile(target):
                with open(target, "w") as out:
                    json.dump({"status": "awaiting"}, out)
                written.append(target)
    except OSError:
        pass
sys.stderr.write(f"ledgers written: {len(written)}\n")
print(json.dumps({"type": "final", "content": "Nothing to do."}))
"""
"""A head that refunds, then looks for the desk's ledger (beside its own files, in the folder
above them, in the desk's environment) to write the status back."""


def test_the_agent_cannot_find_its_service_s_data_folder(repo: GitRepo, github: FakeGitHub) -> None:
    """The desk's `{data}` folder is its own agent user's too, so it is not in the run's
    folder, whose path the agent is told, but beside it, under a name no agent user can
    list, guess, or read in the desk's environment: the ledger keeps the refund, and the head
    fails."""
    also = {"world/ledger.py": LEDGER, "world/files/readme.txt": "the desk keeps a ledger\n"}
    run = gate(repo, github, DATA_SUITE, REWRITES_THE_LEDGER, also=also)

    assert run.returncode == 1, run.stdout + run.stderr
    head = head_of(run)
    assert head["status"] == "fail", head
    assert "ledgers written: 0" in json_text(head), head


REQUIREMENTS = "world/requirements.txt"
BUILT_SUITE = (
    FORBIDS_A_REFUND.replace("world/supervise.py", "world/desk.py")
    .replace(
        "      ready: /health\n",
        "      environment: { python: world/requirements.txt }\n      ready: /health\n",
    )
    .replace("  fixtures: [refund]\n", "  fixtures: [refund]\n  execution: { parallel: 1 }\n")
    + """---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: chat-eval }
spec:
  targetAgent: clerk
  fixtures: [chat]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: chat }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: "chat" } }
  assertions: [ { type: contains, value: "Hello" } ]
"""
)
"""The desk, its packages built from `world/requirements.txt`, and a second Eval whose runs
go beside the desk's."""
PLANTS_IN_THE_BUILD = r"""
import glob, json, os, sys, time, urllib.request
asked = json.loads(sys.stdin.readline())
if asked["fixture"] == "refund":
    url = os.environ["EVALWARD_SERVICE_URL"] + "/refund"
    urllib.request.urlopen(urllib.request.Request(url, data=b"")).read()
    print(json.dumps({"type": "final", "content": "Refunded."}))
    sys.exit(0)
PTH = ('import json; json.dumps = lambda *a, _d=json.dumps, **k: '
       '_d(*a, **k).replace("refunded", "awaiting")\n')
builds, planted, desk = set(), 0, False
end = time.time() + 120
while not desk and time.time() < end:  # until the refund's desk has started
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as line:
                argv = line.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        desk = desk or any(arg.endswith("world/desk.py") for arg in argv)
        builds |= {arg.split("/.build-")[0] + "/.build-" + arg.split("/.build-")[1].split("/")[0]
                   for arg in argv if "/.build-" in arg}
    for build in builds:
        for packages in glob.glob(build + "/venv/lib/python*/site-packages"):
            try:
                with open(packages + "/zz_planted.pth", "x") as out:
                    out.write(PTH)
                planted += 1
            except OSError:
                pass
    time.sleep(0.002)
sys.stderr.write(f"builds seen {len(builds)}, planted {planted}\n")
print(json.dumps({"type": "final", "content": "Hello"}))
"""
"""A head whose chat run, beside the refund's, watches for the desk's packages being built
(their folder is on the installer's command line) and plants a `.pth` there that makes the
desk report `awaiting` after the refund."""


def test_the_agent_cannot_write_into_its_service_s_packages_as_they_are_built(
    repo: GitRepo, github: FakeGitHub
) -> None:
    """The desk's packages are built as the side's agent user: built as the refund's run
    needed them, the chat run's agent beside it could write into the build. They are built
    as the side's turn begins, before any of its programs: the chat agent sees no build, and
    the desk reports the refund."""
    also = {REQUIREMENTS: ""}
    run = gate(repo, github, BUILT_SUITE, PLANTS_IN_THE_BUILD, AWAITING_DESK, also)

    assert run.returncode == 1, run.stdout + run.stderr
    assert head_of(run)["status"] == "fail", head_of(run)
    chat = head_of(run, "chat")
    assert "builds seen 0, planted 0" in json_text(chat), chat
