"""Each agent's runs read only what that agent's own reach covers: its working copy holds the
files it names and watches, never one only another agent of the plan brings. An agent that
reads `shared/config.json` if it is there, and watches only its own folder, does not find
it, on either side, though another agent of the same plan watches `shared/**`; so a pull
request that edits that file cannot change the agent while its cache key stays the same
and the base's cached pass answers its head. The agent users need root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from support.agentenv import PYTHON, needs_root, open_pr, run_gate, workspace
from support.documents import documents, labelled_suite

pytestmark = pytest.mark.hostile

__all__ = ["workspace"]  # fixture

READER_WATCHING = "[agent_a/**]"

PROGRAM = """\
import json, os, sys
sys.stdin.read()
answer = "GOOD"
if os.path.exists("shared/config.json"):
    with open("shared/config.json") as config:
        answer = json.load(config)["answer"]
print(json.dumps({"type": "final", "content": answer}))
"""
"""Agent A: its answer is the shared configuration's, where it finds one, else GOOD."""

SHARED = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: agent-b }}
spec:
  runtime: {{ command: {{ run: [{PYTHON}, shared/b.py] }} }}
  watch: [shared/**]
"""
"""Agent B, which watches (and so brings) every file under `shared/`."""

B_PROGRAM = """\
import json, sys
sys.stdin.read()
print(json.dumps({"type": "final", "content": "ok"}))
"""

EXTRA = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: extra, labels: { agent: agent-a } }
spec:
  targetAgent: agent-a
  input: { type: prompt, payload: { prompt: again } }
  assertions:
    - { type: contains, value: GOOD }
"""


def _reader(watch: str) -> str:
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: agent-a }}
spec:
  runtime: {{ command: {{ run: [{PYTHON}, agent_a/main.py] }} }}
  watch: {watch}
"""


def _gate(workspace: Path, github: FakeGitHub, watch: str, *, with_b: bool) -> dict[str, Any]:
    """The pull request edits `shared/config.json` to say BAD and adds a fixture to A's
    Eval; the gate's results."""
    base = {
        "agents/agent-a.yaml": _reader(watch),
        "agent_a/main.py": PROGRAM,
        "shared/config.json": '{"answer": "GOOD (read)"}\n',
    }
    checks = labelled_suite("agent-a", "answers", "hi", "{ type: contains, value: GOOD }")
    suite = {"evals/agent-a.yaml": checks}
    if with_b:
        base |= {"agents/agent-b.yaml": SHARED, "shared/b.py": B_PROGRAM}
        suite["evals/agent-b.yaml"] = labelled_suite(
            "agent-b", "replies", "hi", "{ type: contains, value: ok }"
        )
    head = {"shared/config.json": '{"answer": "BAD"}\n', "evals/extra.yaml": documents(EXTRA)}
    event = open_pr(workspace, github, base, head, suite=suite)
    run = run_gate(workspace, github, event)
    results = run.results()
    results["returncode"] = run.returncode
    results["log"] = run.stdout + run.stderr
    return results


def _answers(results: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {
        (f["fixture"], f["side"]): f["output"]
        for f in results["fixtures"]
        if f["fixture"] in ("answers", "extra")
    }


@needs_root
def test_an_agent_does_not_read_a_file_only_another_agent_watches(
    workspace: Path, github: FakeGitHub
) -> None:
    """Agent B watches `shared/**`; A's key hashes `agent_a/**` only, and its copy on each
    side holds only what A reads: A finds `shared/config.json` on neither side, and its head
    behaves as its base and its key say. (A copy of what every agent reads gave A the pull
    request's BAD while the base's cached pass answered its old fixture, and the gate
    passed.)"""
    results = _gate(workspace, github, READER_WATCHING, with_b=True)

    log = results["log"]
    assert "agent-b" in results["changedAgents"], log
    assert "agent-a" not in results["changedAgents"], log
    assert _answers(results) == {
        ("answers", "base"): "GOOD",
        ("answers", "head"): "GOOD",
        ("extra", "head"): "GOOD",
    }, log
    assert results["returncode"] == 0, log


@needs_root
def test_an_agent_that_watches_the_file_reads_it_and_changes_with_it(
    workspace: Path, github: FakeGitHub
) -> None:
    """Control: where A's own `watch` covers `shared/**`, A reads the file on both sides,
    A changed, its head runs are its own and the edit blocks."""
    results = _gate(workspace, github, "[agent_a/**, shared/**]", with_b=False)

    log = results["log"]
    assert "agent-a" in results["changedAgents"], log
    assert _answers(results) == {
        ("answers", "base"): "GOOD (read)",
        ("answers", "head"): "BAD",
        ("extra", "head"): "BAD",
    }, log
    assert results["returncode"] == 1, log
