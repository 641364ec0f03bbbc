"""Under `max-cost-usd` a call that the budget holds beside what was spent, but not beside
what the calls in flight hold at their worst, waits for them to settle instead of being
refused: holds are worst cases (a call naming no output limit holds 128,000 output tokens,
$0.2048 at gpt-4.1-mini's price), so two runs in flight at once near the end of a budget
refused a call that fit once the other's tiny reply was counted, and a gate whose job spent
less than $0.0001 failed."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import gate_pull_request
from support.byoagent import agent_python
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

PROGRAM = """\
import http.client, json, os, sys, urllib.parse, urllib.request

prompt = json.loads(sys.stdin.readline())["messages"][-1]["content"]
URL = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])
PATH = URL.path.rstrip("/") + "/chat/completions"
HEADERS = {
    "content-type": "application/json",
    "authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
}


def body(content, **extra):
    return json.dumps({
        "model": "gpt-4.1-mini", "messages": [{"role": "user", "content": content}], **extra,
    })


def ask(content, **extra):
    connection = http.client.HTTPConnection(URL.hostname, URL.port, timeout=120)
    connection.request("POST", PATH, body(content, **extra), HEADERS)
    return connection


def read(connection):
    reply = connection.getresponse()
    return reply.status, reply.read().decode()


if "one" in prompt:
    # held by the model until the other run's poke: in flight while the other run asks
    status, said = read(ask("ONE", stream=True))
else:
    read(ask("is ONE in flight", stream=True, max_tokens=1))  # answered once it is
    two = ask("TWO")  # sent whole, no output limit: the budget holds it at its worst
    read(ask("poke", max_tokens=1))  # lets ONE's reply go
    status, said = read(two)
print(json.dumps({"type": "final", "content": "the answer %d VERSION" % status}), flush=True)
"""
"""The agent: the run of fixture `one` makes one streamed call; the run of fixture `two` makes
its call while `one`'s is in flight, then pokes the model to let `one`'s reply go. Neither
call names an output limit, and each reply is a few tokens."""


def suite(python: str) -> str:
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: desk }}
spec:
  runtime:
    command: [{python}, agent/desk.py]
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: desk-eval }}
spec:
  targetAgent: desk
  fixtures: [one, two]
  scoring: {{ passThreshold: 1 }}
  execution: {{ parallel: 2 }}  # both runs at once
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: one }}
spec:
  targetAgent: desk
  input: {{ type: prompt, payload: {{ prompt: "question one" }} }}
  assertions:
    - {{ type: contains, value: the answer 200 }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: two }}
spec:
  targetAgent: desk
  input: {{ type: prompt, payload: {{ prompt: "question two" }} }}
  assertions:
    - {{ type: contains, value: the answer 200 }}
"""


BUDGET = 0.30
"""One call at its worst (about $0.2056), not two; both runs' replies cost $0.0001."""


def test_a_call_that_fits_once_the_calls_in_flight_settle_waits_for_them(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Two runs of each side at once: `two`'s call reaches the budget while `one`'s holds
    $0.2056, and $0.30 cannot hold both at their worst. It was refused: each side's run of
    `two` was budget_refused (the base's no baseline) and the gate failed, where the job
    spent less than $0.0001. It now waits until `one`'s reply is counted, is sent, and the
    gate passes within its budget."""
    python, _ = agent_python()
    base = repo.commit(
        "the agent",
        {
            "agents.yaml": suite(python),
            "agent/desk.py": PROGRAM.replace("VERSION", "v1"),
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("change")
    head = repo.commit("v2", {"agent/desk.py": PROGRAM.replace("VERSION", "v2")})
    in_flight, poked = threading.Event(), threading.Event()

    def one(body: dict[str, Any]) -> bool:
        if '"ONE"' not in json.dumps(body):
            return False
        poked.clear()  # each side's ONE waits for its own poke
        in_flight.set()
        return True

    def poke(body: dict[str, Any]) -> bool:
        if "poke" not in json.dumps(body):
            return False
        in_flight.clear()
        poked.set()
        return True

    model.script(one, text("one", hold=poked))
    model.script("is ONE in flight", text("yes", hold=in_flight))
    model.script(poke, text("poked"))
    model.script("TWO", text("two"))

    run = gate_pull_request(
        repo,
        github,
        base,
        head,
        env,
        {"max-cost-usd": str(BUDGET), "cache": "off", "agent-isolation": agent_python()[1]},
    )

    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    runs = {(f["fixture"], f["side"]): f for f in document["fixtures"]}
    for key, fixture in runs.items():
        assert fixture["status"] == "pass", (key, fixture.get("message"))
    assert document["run"]["spent"]["cost_usd"] <= BUDGET, document["run"]["spent"]
    assert sum('"TWO"' in json.dumps(body) for body in model.requests) == 2
    assert (run.returncode, run.outputs["result"]) == (0, "pass"), run.stdout + run.stderr
