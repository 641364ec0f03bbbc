"""An agent's result-cache key covers how each file it depends on is checked out, not only
its bytes: a pull request that changes only the mode of a program the agent starts (drops
the executable bit of a helper in its watched folder) changes the agent, its head runs, and
no result of the base (the same bytes, executable) answers for it."""

from __future__ import annotations

import json
import os
import sys

import pytest

from action.test_gate_evasion import gate
from fakes.github_api import FakeGitHub, FakePull
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: runner }}
spec:
  runtime:
    command: [{python}, agent/main.py]
  watch: ["agent/**"]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: runner-eval }}
spec:
  targetAgent: runner
  fixtures: [answers]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: answers }}
spec:
  targetAgent: runner
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  assertions:
    - {{ type: contains, value: GOOD }}
"""
MAIN = """\
import json, subprocess, sys
sys.stdin.readline()
try:
    said = subprocess.run(["agent/helper"], capture_output=True, text=True).stdout.strip()
except OSError as exc:
    said = f"BROKEN: {exc.strerror}"
print(json.dumps({"type": "final", "content": said}), flush=True)
"""
HELPER = """\
#!/bin/sh
echo GOOD
"""


@pytest.fixture
def env() -> dict[str, str]:
    return {}


def test_a_helper_that_is_no_longer_executable_is_run_not_served_the_base_s_pass(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    repo.write(
        {
            "agents.yaml": AGENT.format(python=json.dumps(sys.executable)),
            "agent/main.py": MAIN,
            "agent/helper": HELPER,
            ".gitignore": ".evalward/\n",
        }
    )
    os.chmod(repo.path / "agent/helper", 0o755)
    base = repo.commit("an agent that starts its helper")
    repo.branch("feature")
    os.chmod(repo.path / "agent/helper", 0o644)
    repo.git("add", "agent/helper")
    head = repo.commit("only the helper's mode changes")
    assert repo.git("diff", "--name-status", base, head).split() == ["M", "agent/helper"]
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = gate(repo, github, base, head, env, **{"agent-isolation": "off"})

    assert "changed" in json.dumps(run.results()["changedAgents"].get("runner", []))
    head_run = next(f for f in run.results()["fixtures"] if f["side"] == "head")
    assert not head_run["cached"], head_run
    assert head_run["output"].startswith("BROKEN"), head_run
    assert run.returncode == 1, run.stdout + run.stderr
