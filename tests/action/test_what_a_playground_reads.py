"""An agent whose Eval has a playground reads, as the agent user, only what its own runs
read: what its playground is made from is never a reason to give the agent a file. An agent
that reads a file if it is there, and watches only its own folder, does not find it on
either side, where its playground (the base branch's) reads it: a service that names no
`watch` and may read every file, a service that watches the file's folder, a `files` seed
of it. So a pull request that edits that file cannot change the agent while its cache key
stays the same and the base's cached pass answers its head. The agent users need root."""

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
if os.path.exists("CONFIG"):
    with open("CONFIG") as config:
        answer = json.load(config)["answer"]
print(json.dumps({"type": "final", "content": answer}))
"""
"""The agent: its answer is CONFIG's, where it finds the file, else GOOD."""

PLAYGROUNDS = {
    # a service that names no `watch`: it may read every file
    "shared/config.json": f'{{ service: {{ start: [{PYTHON}, crm/server.py, "{{port}}"] }} }}',
    # a service that watches its folder, the file in it
    "crm/config.json": (
        f'{{ service: {{ start: [{PYTHON}, crm/server.py, "{{port}}"], watch: [crm/**] }} }}'
    ),
    # a folder the playground is seeded from, the file in it
    "desk/config.json": "{ files: { seed: desk } }",
}
"""By the file the agent reads, a playground that reads it (and the agent does not watch)."""

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


def _gate(workspace: Path, github: FakeGitHub, read: str) -> dict[str, Any]:
    """The pull request edits `read` to say BAD and adds a fixture to the agent's Eval,
    whose playground (the base branch's) reads it; the gate's results."""
    playground = f"playground: {PLAYGROUNDS[read]}"
    suite = documents(
        eval_for("agent-a", by_label("agent-a"), playground), FIXTURE.format(name="answers")
    )
    base = {
        "agents/agent-a.yaml": AGENT,
        "agent_a/main.py": PROGRAM.replace("CONFIG", read),
        "crm/server.py": SERVICE,
        "desk/readme.md": "the desk\n",
        read: '{"answer": "GOOD (read)"}\n',
    }
    head = {
        read: '{"answer": "BAD"}\n',
        "evals/extra.yaml": FIXTURE.format(name="extra"),
    }
    event = open_pr(workspace, github, base, head, suite={"evals/agent-a.yaml": suite})
    run = run_gate(workspace, github, event)
    results = run.results()
    results["returncode"] = run.returncode
    results["log"] = run.stdout + run.stderr
    return results


@needs_root
@pytest.mark.parametrize("read", list(PLAYGROUNDS))
def test_what_its_playground_reads_is_not_the_agents_to_read(
    workspace: Path, github: FakeGitHub, read: str
) -> None:
    """The agent's key hashes `agent_a/**` and what its playground is made from of the base
    branch's tree; its copy of either side holds what the agent reads, and not the file its
    playground reads there: it behaves on the head as its base and its key say."""
    results = _gate(workspace, github, read)

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
