"""A path an agent's program names is read whole: a folder named on its command line (the
package `npm --prefix` runs) is the agent's code, so a pull request that edits a file in it
changes the agent, and its Evals run and gate."""

from __future__ import annotations

import json
import shutil

import pytest

from action.test_gate_evasion import gate
from fakes.github_api import FakeGitHub, FakePull
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: web }
spec:
  runtime:
    command: [npm, --silent, --prefix, agents/web, start]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: web-eval }
spec:
  targetAgent: web
  fixtures: [answers]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: answers }
spec:
  targetAgent: web
  input: { type: prompt, payload: { prompt: go } }
  assertions:
    - { type: contains, value: GOOD }
"""
PACKAGE = json.dumps(
    {"name": "web", "version": "1.0.0", "private": True, "scripts": {"start": "node index.js"}}
)
INDEX = """\
process.stdin.resume();
process.stdin.on("end", () => {
  console.log(JSON.stringify({ type: "final", content: "%s" }));
});
"""


@pytest.fixture
def env() -> dict[str, str]:
    return {}


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm")
def test_an_edit_in_a_folder_the_program_names_changes_the_agent(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    base = repo.commit(
        "a node agent npm starts from its folder",
        {
            "agents.yaml": AGENT,
            "agents/web/package.json": PACKAGE,
            "agents/web/index.js": INDEX % "GOOD",
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("feature")
    head = repo.commit("the agent's code changes", {"agents/web/index.js": INDEX % "BAD"})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = gate(repo, github, base, head, env, **{"agent-isolation": "off"})

    assert "web" in run.results()["changedAgents"], run.stdout + run.stderr
    head_run = next(f for f in run.results()["fixtures"] if f["side"] == "head")
    assert not head_run["cached"] and head_run["output"] == "BAD", head_run
    assert run.returncode == 1, run.stdout + run.stderr
