"""An agent's `environment` is installed in the folder of the file it names, and the
installers read their settings from the folders above it too (uv a `uv.toml` or a
`pyproject.toml`'s `[tool.uv]`, the nearest; npm a workspace's root): a pull request that
adds one at the repository's root changes what the agent imports, so the agent counts as
changed, its Evals run and gate, and no result of the base answers for its head. The
packages are wheels the test makes, so nothing downloads; the agent users need root."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from support.agentenv import PYTHON, needs_root, open_pr, run_gate, workspace
from support.documents import documents, labelled_suite
from support.scorerpackages import package_folder, wheel
from support.suite import answered

pytestmark = pytest.mark.hostile

__all__ = ["package_folder", "workspace"]  # fixtures

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: dep-agent }
spec:
  runtime: { command: { run: [python, agent/agent.py] } }
  watch: [agent/**]
  environment: { python: agent/requirements.txt }
"""

PROGRAM = """\
import json, sys, agentlib
sys.stdin.read()
print(json.dumps({"type": "final", "content": agentlib.ANSWER}))
"""

ECHO = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: echo }}
spec:
  runtime: {{ command: {{ run: [{PYTHON}, echo/echo.py] }} }}
"""
"""Another agent, whose program names no `watch`: it reads every file of the checkout."""

ECHO_PROGRAM = """\
import json, sys
sys.stdin.read()
print(json.dumps({"type": "final", "content": "ok"}))
"""

EXTRA = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: extra, labels: { agent: dep-agent } }
spec:
  targetAgent: dep-agent
  input: { type: prompt, payload: { prompt: again } }
  assertions:
    - { type: contains, value: GOOD }
"""


@needs_root
def test_a_uv_setting_at_the_root_changes_an_agent_installed_below_it(
    workspace: Path, github: FakeGitHub, package_folder: Path
) -> None:
    """The base's requirements find `agentlib` 1.0 in one folder; the pull request adds a
    `uv.toml` at the root naming another, with 2.0, and a fixture, so the agent's Eval runs.
    The agent reads the root's `uv.toml`: it changed, and its head runs are its own."""
    good, bad = package_folder / "good", package_folder / "bad"
    for folder, version, answer in ((good, "1.0", "GOOD"), (bad, "2.0", "BAD")):
        folder.mkdir(mode=0o755)
        wheel(folder, "agentlib", version, f'ANSWER = "{answer}"\n')
    (workspace / "agent").mkdir(parents=True)
    base = {
        "agents/dep-agent.yaml": AGENT,
        "agent/requirements.txt": f"--find-links {good}\nagentlib\n",
        "agent/agent.py": PROGRAM,
        "agents/echo.yaml": ECHO,
        "echo/echo.py": ECHO_PROGRAM,
    }
    checks = labelled_suite("dep-agent", "answers", "hi", "{ type: contains, value: GOOD }")
    echoes = labelled_suite("echo", "echoes", "hi", "{ type: contains, value: ok }")
    suite = {"evals/dep-agent.yaml": checks, "evals/echo.yaml": echoes}
    head = {"uv.toml": f'find-links = ["{bad}"]\n', "evals/extra.yaml": documents(EXTRA)}
    event = open_pr(workspace, github, base, head, suite=suite)

    run = run_gate(workspace, github, event)

    results = run.results()
    assert "dep-agent" in results["changedAgents"], run.stdout + run.stderr
    sides = answered(results, "answers")
    assert sides == {"base": ("GOOD", False), "head": ("BAD", False)}, sides
    assert run.returncode == 1, run.stdout + run.stderr
