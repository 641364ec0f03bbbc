"""An agent's `environment` is built from its requirements file and every file that file
reads (`-r`, `-c`): a pull request that changes only an included requirements file (pinning
another package) changes what the agent imports, so the agent counts as changed and its
Evals run and gate, and no result of the base answers for its head. The packages are wheels
the test makes, so nothing downloads; switching to the agent users needs root."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from support.agentenv import agent_yaml, needs_root, open_pr, run_gate, workspace
from support.documents import labelled_suite
from support.scorerpackages import package_folder, wheel

pytestmark = pytest.mark.hostile

__all__ = ["package_folder", "workspace"]  # fixtures

AGENT = """\
import json, sys, agentlib
sys.stdin.read()
print(json.dumps({"type": "final", "content": agentlib.ANSWER}))
"""


@needs_root
def test_a_pin_changed_in_an_included_requirements_file_changes_the_agent(
    workspace: Path, github: FakeGitHub, package_folder: Path
) -> None:
    good = wheel(package_folder, "agentlib", "1.0", 'ANSWER = "GOOD"\n')
    bad = wheel(package_folder, "agentlib", "2.0", 'ANSWER = "BAD"\n')
    (workspace / "agent").mkdir(parents=True)
    base = {
        "agents/dep-agent.yaml": agent_yaml(
            ["python", "agent/agent.py"], {"python": "agent/requirements.txt"}
        ),
        "agent/requirements.txt": "-r pins.txt\n",
        "agent/pins.txt": f"{good}\n",
        "agent/agent.py": AGENT,
    }
    checks = labelled_suite("dep-agent", "answers", "hi", "{ type: contains, value: GOOD }")
    suite = {"evals/dep-agent.yaml": checks}
    event = open_pr(workspace, github, base, {"agent/pins.txt": f"{bad}\n"}, suite=suite)

    run = run_gate(workspace, github, event)

    assert "dep-agent" in run.results()["changedAgents"], run.stdout + run.stderr
    sides = {f["side"]: (f["output"], f["cached"]) for f in run.results()["fixtures"]}
    assert sides == {"base": ("GOOD", False), "head": ("BAD", False)}, sides
    assert run.returncode == 1, run.stdout + run.stderr


@needs_root
def test_a_python_version_beside_a_requirements_file_changes_the_agent(
    workspace: Path, github: FakeGitHub, package_folder: Path
) -> None:
    """A `.python-version` beside a requirements file chooses the interpreter its virtualenv
    is built on: adding one changes the agent (here to a Python the machine lacks, so the
    head's environment does not build)."""
    good = wheel(package_folder, "agentlib", "1.0", 'ANSWER = "GOOD"\n')
    (workspace / "agent").mkdir(parents=True)
    base = {
        "agents/dep-agent.yaml": agent_yaml(
            ["python", "agent/agent.py"], {"python": "agent/requirements.txt"}
        ),
        "agent/requirements.txt": f"{good}\n",
        "agent/agent.py": AGENT,
    }
    checks = labelled_suite("dep-agent", "answers", "hi", "{ type: contains, value: GOOD }")
    suite = {"evals/dep-agent.yaml": checks}
    event = open_pr(workspace, github, base, {"agent/.python-version": "3.8\n"}, suite=suite)

    run = run_gate(workspace, github, event)

    assert "dep-agent" in run.results()["changedAgents"], run.stdout + run.stderr
    sides = {f["side"]: (f["status"], f["cached"]) for f in run.results()["fixtures"]}
    assert sides == {"base": ("pass", False), "head": ("error", False)}, sides
    assert run.returncode == 1, run.stdout + run.stderr
