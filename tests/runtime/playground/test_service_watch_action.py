"""A playground service that names a `watch` runs, in the action, in a copy of the tree
holding what it names and what its `watch` matches, and nothing else: what its runs are
keyed on is all it can read. A module it imports from outside its `watch` is not there (its
start fails, and the Eval with it, never a pass read from the cache), and a pull request
cannot narrow the base branch's `watch`: the base's is the one its playground is made and
keyed by. The agent users need root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from support.agentenv import PYTHON, needs_root, open_pr, run_gate, workspace
from support.jsonserver import json_server

pytestmark = pytest.mark.hostile

__all__ = ["workspace"]  # a fixture

SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: clerk }}
spec:
  runtime: {{ command: {{ run: [{PYTHON}, agent/clerk.py] }} }}
  watch: [agent/**]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: crm-eval }}
spec:
  targetAgent: clerk
  fixtures: [ticket-open]
  playground:
    name: crm
    service:
      start: [{PYTHON}, shop/server.py, "{{port}}"]
      ready: /state
      watch: WATCH
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: ticket-open }}
spec:
  targetAgent: clerk
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  assertions:
    - {{ type: stateValue, at: service.status, equals: open }}
"""

AGENT = """\
import json, sys
json.load(sys.stdin)
print(json.dumps({"type": "final", "content": "done"}))
"""

SERVER = json_server(
    """\
    def do_GET(self):
        self.reply({"status": STATUS})
""",
    # a module of lib/, which a `watch` of shop/** does not match
    preamble='import json, sys\nsys.path.insert(0, "lib")\nfrom rules import STATUS\n',
)


def _gate(workspace: Path, github: FakeGitHub, watch: str, head_watch: str) -> dict[str, Any]:
    """The base branch's service watches `watch`; the pull request edits the agent and
    makes it `head_watch`. The gate's results, its exit code and its log."""
    base = {
        "agent/clerk.py": AGENT,
        "shop/server.py": SERVER,
        "lib/rules.py": 'STATUS = "open"\n',
    }
    head = {
        "agent/clerk.py": AGENT + "# reworded\n",
        "evals/crm.yaml": SUITE.replace("WATCH", head_watch),
    }
    event = open_pr(
        workspace, github, base, head, suite={"evals/crm.yaml": SUITE.replace("WATCH", watch)}
    )
    run = run_gate(workspace, github, event)
    results = run.results()
    results["returncode"] = run.returncode
    results["log"] = run.stdout + run.stderr
    return results


@needs_root
def test_a_service_does_not_import_a_module_its_watch_does_not_match(
    workspace: Path, github: FakeGitHub
) -> None:
    """The service imports `lib/rules.py`, which its `watch: [shop/**]` does not match: its
    copy does not hold it, so it exits before it is ready on both sides, and the Eval that
    cannot be decided blocks. (Read from the whole tree, a change to that module left the
    runs' key as it was, and a pass from before answered them.)"""
    results = _gate(workspace, github, "[shop/**]", "[shop/**]")

    log = results["log"]
    fixtures = {f["side"]: f for f in results["fixtures"]}
    assert set(fixtures) == {"base", "head"}, log
    for side, fixture in fixtures.items():
        assert fixture["status"] == "error", (side, fixture["message"])
        assert "No module named 'rules'" in fixture["message"], (side, fixture["message"])
    assert results["returncode"] == 1, log


@needs_root
def test_a_pull_request_cannot_narrow_the_base_branchs_watch(
    workspace: Path, github: FakeGitHub
) -> None:
    """The base branch's service watches `shop/**` and `lib/**`; the pull request's copy of
    the Eval watches `shop/server.py` alone. The playground is the base branch's, made and
    keyed by its `watch`: the module is there on both sides, and both pass."""
    results = _gate(workspace, github, "[shop/**, lib/**]", "[shop/server.py]")

    log = results["log"]
    fixtures = {f["side"]: f for f in results["fixtures"]}
    assert set(fixtures) == {"base", "head"}, log
    for side, fixture in fixtures.items():
        assert fixture["status"] == "pass", (side, fixture["message"])
    assert results["returncode"] == 0, log
