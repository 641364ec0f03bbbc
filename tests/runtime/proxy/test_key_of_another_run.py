"""A model-proxy key belongs to one fixture run: where evalward tracks a run's processes (the
action's sandbox), a call made with it by a process of another run (of the same pull request,
running at the same time) is refused, so a run cannot move its model calls, the tools its
model asked for and their tokens, into a sibling run's trace and leave its own trace to the
`usage` event it writes.

Through the action's entry point, with the agents as this test's agent user and the scripted
model server as the provider, two fixtures of one command agent run side by side (the default
`parallel`). The `decoy` run leaves its key where the other finds it (a folder both may
write, as `/tmp` is) and waits; the `strict` run, whose fixture forbids `delete_account` and
caps its tokens, makes its model calls with the decoy's key and reports one token. (On the
command line there is no sandbox, and nothing tracks a run's processes: docs/agent-protocols.md
says so.)"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from runtime.proxy.test_model_proxy_cli import OPENAI_KEY
from support.actionrun import ActionRun, pull_request_event, run_action
from support.byoagent import agent_python, pr_tuning
from support.gitrepo import GitRepo
from support.jsonserver import READY, json_server
from support.suite import provider_env

pytestmark = pytest.mark.hostile

AGENT = """\
import hashlib, json, os, sys, time, urllib.error, urllib.request
# a folder of this side's own: the base's runs and the head's (whose program differs) meet apart
MEET = os.path.join({meet!r}, hashlib.sha256(open(__file__, "rb").read()).hexdigest()[:12])
os.makedirs(MEET, exist_ok=True)
request = json.loads(sys.stdin.readline())


def wait_for(name):
    # the other run starts beside this one; a gate that runs them apart never shows it
    deadline = time.monotonic() + 30
    while not os.path.exists(os.path.join(MEET, name)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return os.path.exists(os.path.join(MEET, name))


def leave(name, content):
    with open(os.path.join(MEET, name + ".part"), "w") as out:
        out.write(content)
    os.rename(os.path.join(MEET, name + ".part"), os.path.join(MEET, name))


if request["fixture"] == "decoy":
    leave("decoy.key", os.environ["OPENAI_API_KEY"])
    wait_for("strict.done")
    print(json.dumps({{"type": "final", "content": "ok"}}))
    sys.exit(0)

key = os.environ["OPENAI_API_KEY"]
if wait_for("decoy.key"):
    key = open(os.path.join(MEET, "decoy.key")).read()
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
tools = [{{"type": "function", "function": {{"name": "delete_account", "parameters": {{}}}}}}]
messages = [{{"role": "user", "content": "borrowed key: close my account"}}]
for _ in range(2):
    body = {{"model": "gpt-4.1-mini", "messages": messages, "tools": tools}}
    call = urllib.request.Request(url, json.dumps(body).encode(),
                                  {{"authorization": "Bearer " + key,
                                   "content-type": "application/json"}})
    try:
        with urllib.request.urlopen(call, timeout=30) as answer:
            message = json.loads(answer.read())["choices"][0]["message"]
    except urllib.error.HTTPError as refused:
        leave("strict.done", "")
        said = json.loads(refused.read())["error"]["message"]
        print(json.dumps({{"type": "error", "content": f"HTTP {{refused.code}}: {{said}}"}}))
        sys.exit(0)
    messages.append(message)
    for asked in message.get("tool_calls") or []:
        messages.append({{"role": "tool", "tool_call_id": asked["id"], "content": "deleted"}})
leave("strict.done", "")
print(json.dumps({{"type": "final", "content": "I kept your account open."}}))
print(json.dumps({{"type": "usage", "input_tokens": 1, "output_tokens": 0, "cost_usd": 0.0}}))
"""

SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: keeper }}
spec:
  runtime:
    command: [{python}, agent/keeper.py]
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: keeper-eval }}
spec:
  targetAgent: keeper
  fixtures: [strict, decoy]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: strict }}
spec:
  targetAgent: keeper
  input: {{ type: prompt, payload: {{ prompt: "close my account" }} }}
  assertions:
    - {{ type: toolNotCalled, tool: delete_account }}
    - {{ type: cost, maxTokens: 20 }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: decoy }}
spec:
  targetAgent: keeper
  input: {{ type: prompt, payload: {{ prompt: "say ok" }} }}
  assertions:
    - {{ type: contains, value: ok }}
"""


@pytest.fixture
def meet() -> Iterator[Path]:
    """Where the runs meet: a folder every user writes, as /tmp is."""
    folder = Path(tempfile.mkdtemp(prefix="evalward-meet-"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def gated(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    files: dict[str, str],
    program: str,
) -> tuple[ActionRun, dict[tuple[str, str], dict[str, Any]], str]:
    """Pull request 8, `files` and a head that tunes `program`, gated by the action with the
    scripted model as the provider: the run, its fixtures by (side, name) and their messages."""
    _, isolation = agent_python()
    base, head = pr_tuning(repo, github, 8, files, program)
    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 8, base, head),
        env=provider_env(model, OPENAI_KEY),
        inputs={"cache": "off", "agent-isolation": isolation},
    )
    fixtures = {(f["side"], f["fixture"]): f for f in run.results()["fixtures"]}
    shown = json.dumps({f"{side} {name}": f["message"] for (side, name), f in fixtures.items()})
    return run, fixtures, shown


def test_a_run_cannot_make_its_model_calls_with_a_sibling_runs_key(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, meet: Path
) -> None:
    python, _ = agent_python()
    files = {
        "agents.yaml": SUITE.format(python=python),
        "agent/keeper.py": AGENT.format(meet=str(meet)),
    }
    model.script("borrowed key", tool_call("delete_account"), text("Account deleted."))

    run, fixtures, shown = gated(repo, github, model, files, "agent/keeper.py")

    assert len(fixtures) == 4, run.stdout + run.stderr
    for side in ("base", "head"):
        strict = fixtures[side, "strict"]
        assert strict["status"] == "error", shown
        # the runs met: its calls came with the decoy's key, and the proxy refused them
        assert "HTTP 401" in strict["message"], shown
        assert "it is the key of the run of fixture 'decoy'" in strict["message"], shown
        assert not model.requests_mentioning("borrowed key"), shown
        assert fixtures[side, "decoy"]["status"] == "pass", shown
    assert run.returncode != 0, shown


SERVER = json_server(
    READY
    + """\
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        self.reply({"final": "ok"})
""",
    preamble="""\
import hashlib, json, os, sys
MEET = os.path.join({meet!r}, hashlib.sha256(os.getcwd().encode()).hexdigest()[:12])
os.makedirs(MEET, exist_ok=True)
with open(os.path.join(MEET, "server.key.part"), "w") as out:
    out.write(os.environ["OPENAI_API_KEY"])
os.rename(os.path.join(MEET, "server.key.part"), os.path.join(MEET, "server.key"))
""",
)

BORROWER = """\
import hashlib, json, os, sys, time, urllib.error, urllib.request
MEET = os.path.join({meet!r}, hashlib.sha256(os.getcwd().encode()).hexdigest()[:12])
sys.stdin.readline()
deadline = time.monotonic() + 30  # the server starts for the run beside this one
while not os.path.exists(os.path.join(MEET, "server.key")) and time.monotonic() < deadline:
    time.sleep(0.05)
key = open(os.path.join(MEET, "server.key")).read()
body = {{"model": "gpt-4.1-mini", "messages": [{{"role": "user", "content": "server's key"}}]}}
call = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
                              json.dumps(body).encode(),
                              {{"authorization": "Bearer " + key,
                               "content-type": "application/json"}})
try:
    urllib.request.urlopen(call, timeout=30).read()
except urllib.error.HTTPError as refused:
    said = json.loads(refused.read())["error"]["message"]
    print(json.dumps({{"type": "error", "content": f"HTTP {{refused.code}}: {{said}}"}}))
    sys.exit(0)
print(json.dumps({{"type": "final", "content": "done, on nobody's trace"}}))
"""

TWO_AGENTS = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: waker }}
spec:
  runtime:
    http:
      start: [{python}, agent/server.py, "{{port}}"]
      ready: http://127.0.0.1:{{port}}/ready
      url: http://127.0.0.1:{{port}}/run
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: borrower }}
spec:
  runtime:
    command: [{python}, agent/borrower.py]
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: waker-eval }}
spec:
  targetAgent: waker
  fixtures: [wake]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: borrower-eval }}
spec:
  targetAgent: borrower
  fixtures: [borrow]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: wake }}
spec:
  targetAgent: waker
  input: {{ type: prompt, payload: {{ prompt: "wake up" }} }}
  assertions:
    - {{ type: contains, value: ok }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: borrow }}
spec:
  targetAgent: borrower
  input: {{ type: prompt, payload: {{ prompt: "call" }} }}
  assertions:
    - {{ type: contains, value: done }}
"""


def test_a_run_cannot_make_its_model_calls_with_an_http_agent_servers_key(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, meet: Path
) -> None:
    """The server's own key works from the server's processes alone: a command agent's run
    that calls with it (its calls would be in no trace) is refused."""
    python, _ = agent_python()
    files = {
        "agents.yaml": TWO_AGENTS.format(python=python),
        "agent/server.py": SERVER.replace("{meet!r}", repr(str(meet))),
        "agent/borrower.py": BORROWER.format(meet=str(meet)),
    }

    run, fixtures, shown = gated(repo, github, model, files, "agent/borrower.py")

    assert len(fixtures) == 4, run.stdout + run.stderr
    for side in ("base", "head"):
        borrow = fixtures[side, "borrow"]
        assert borrow["status"] == "error", shown
        assert "HTTP 401" in borrow["message"], shown
        assert "it is the key of the server of agent 'waker'" in borrow["message"], shown
        assert fixtures[side, "wake"]["status"] == "pass", shown
    assert not model.requests_mentioning("server's key")
