"""An agent whose Eval's playground runs a service reads, as the agent user, only what its
own runs read: the service's files are its own copy's, never a reason to give the agent the
whole pull request. An agent that reads `shared/config.json` if it is there, and watches
only its own folder, does not find it on either side, though its playground's service (the
base branch's, naming no `watch`) may read every file of its tree; so a pull request that
edits that file cannot change the agent while its cache key stays the same and the base's
cached pass answers its head. The agent users need root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from support.agentenv import PYTHON, needs_root, open_pr, run_gate, workspace
from support.documents import by_label, documents, eval_for
from support.jsonserver import json_server

pytestmark = pytest.mark.hostile

__all__ = ["workspace"]  # fixture

AGENT = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: agent-a }}
spec:
  runtime: {{ command: {{ run: [{PYTHON}, agent_a/main.py] }} }}
  watch: [agent_a/**]
"""

PROGRAM = """\
import json, os, sys
sys.stdin.read()
answer = "GOOD"
if os.path.exists("shared/config.json"):
    with open("shared/config.json") as config:
        answer = json.load(config)["answer"]
print(json.dumps({"type": "final", "content": answer}))
"""
"""The agent: its answer is the shared configuration's, where it finds one, else GOOD."""

SERVICE = json_server(
    """\
    def do_GET(self):
        self.reply({"open": True})
"""
)

FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}, labels: {{ agent: agent-a }} }}
spec:
  targetAgent: agent-a
  input: {{ type: prompt, payload: {{ prompt: {name} }} }}
  assertions:
    - {{ type: contains, value: GOOD }}
"""


def _gate(workspace: Path, github: FakeGitHub) -> dict[str, Any]:
    """The pull request edits `shared/config.json` to say BAD and adds a fixture to the
    agent's Eval, whose playground runs the base branch's service; the gate's results."""
    playground = f'playground: {{ service: {{ start: [{PYTHON}, crm/server.py, "{{port}}"] }} }}'
    suite = documents(
        eval_for("agent-a", by_label("agent-a"), playground), FIXTURE.format(name="answers")
    )
    base = {
        "agents/agent-a.yaml": AGENT,
        "agent_a/main.py": PROGRAM,
        "crm/server.py": SERVICE,
        "shared/config.json": '{"answer": "GOOD (read)"}\n',
    }
    head = {
        "shared/config.json": '{"answer": "BAD"}\n',
        "evals/extra.yaml": FIXTURE.format(name="extra"),
    }
    event = open_pr(workspace, github, base, head, suite={"evals/agent-a.yaml": suite})
    run = run_gate(workspace, github, event)
    results = run.results()
    results["returncode"] = run.returncode
    results["log"] = run.stdout + run.stderr
    return results


@needs_root
def test_a_service_in_its_playground_does_not_give_the_agent_the_whole_tree(
    workspace: Path, github: FakeGitHub
) -> None:
    """The agent's key hashes `agent_a/**` and its playground's service's tree (the base
    branch's); its copy of the head holds what it reads, and no `shared/config.json`: it
    behaves on the head as its base and its key say."""
    results = _gate(workspace, github)

    log = results["log"]
    assert "agent-a" not in results["changedAgents"], log
    answers = {
        (f["fixture"], f["side"]): f["output"]
        for f in results["fixtures"]
        if f["fixture"] in ("answers", "extra")
    }
    assert answers == {
        ("answers", "base"): "GOOD",
        ("answers", "head"): "GOOD",
        ("extra", "head"): "GOOD",
    }, log
    assert results["returncode"] == 0, log
