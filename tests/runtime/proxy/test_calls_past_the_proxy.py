"""In the action, an agent that calls a model provider by an address of its own is stopped in
its sandbox, and its run is an error that names the host and the variable: the agent user's
Python imports evalward's start-up guard from the PYTHONPATH evalward gives it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.agentenv import PYTHON, needs_root, open_pr, run_gate, workspace

pytestmark = pytest.mark.e2e

__all__ = ["workspace"]  # a fixture

AGENT = """\
import sys, urllib.request

# {version}: the address is in the code, not read from ANTHROPIC_BASE_URL
request = urllib.request.Request(
    "https://api.anthropic.com/v1/messages", b"{{}}", {{"content-type": "application/json"}}
)
try:
    urllib.request.urlopen(request, timeout=20)
    print("answered")
except OSError as exc:
    print(f"could not call: {{exc}}")
"""

SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: direct }}
spec:
  runtime: {{ command: {{ run: [{PYTHON}, agent.py], stdin: none }} }}
  watch: [agent.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: direct-eval }}
spec: {{ targetAgent: direct, fixtures: [ask] }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: ask }}
spec:
  targetAgent: direct
  input: {{ type: prompt, payload: {{ prompt: hi }} }}
  assertions: [{{ type: contains, value: could }}]
"""


@needs_root
def test_a_sandboxed_agent_that_calls_a_provider_directly_is_an_error_naming_it(
    workspace: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base = {"agent.py": AGENT.format(version="v1"), "evals.yaml": SUITE}
    event = open_pr(workspace, github, base, {"agent.py": AGENT.format(version="v2")}, suite={})

    run = run_gate(workspace, github, event, OPENAI_BASE_URL=model.base_url)

    assert run.returncode == 1, run.stdout + run.stderr
    fixtures = run.results()["fixtures"]
    assert {f["side"] for f in fixtures} == {"base", "head"}
    for fixture in fixtures:
        # the agent caught the failure and answered, and still the run is an error
        assert fixture["status"] == "error", fixture
        assert fixture["message"].startswith(
            "the run failed: the agent called api.anthropic.com (Anthropic) past evalward's "
            "model proxy"
        ), fixture["message"]
        assert "ANTHROPIC_BASE_URL or ANTHROPIC_API_BASE" in fixture["message"]
        assert fixture["trace"]["proxy_calls"] == []
    assert model.calls == []
    assert "api.anthropic.com" in github.comments_on(3)[0]["body"]
