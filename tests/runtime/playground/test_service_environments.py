"""A playground service's `environment` in the action: built from the gate's side as the run
side's agent user, sealed, and on the service's PATH, so a service that imports a package the
runner's Python lacks starts; without it, the same service cannot import it. Needs root (the
user switch) and the package index (uv installs `iniconfig`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from support.agentenv import needs_root, open_pr, run_gate, workspace

pytestmark = pytest.mark.e2e

__all__ = ["workspace"]  # a fixture

SERVER = """\
import http.server, json, os, sys
import iniconfig

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"iniconfig": iniconfig.__file__, "uid": os.getuid(),
                           "venv": os.environ.get("VIRTUAL_ENV", "")}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body)

http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""

AGENT = """\
import json, sys
sys.stdin.read()
print(json.dumps({"type": "final", "content": "done"}))
"""


def suite(environment: bool, watch: str = "") -> dict[str, str]:
    built = "      environment: { python: crm/requirements.txt }\n" if environment else ""
    built += f"      watch: {watch}\n" if watch else ""
    return {
        "agents/svc-agent.yaml": (
            "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: svc-agent }\n"
            "spec:\n  runtime: { command: { run: [python3, agent/agent.py] } }\n"
        ),
        "agent/agent.py": AGENT,
        "crm/server.py": SERVER,
        "crm/requirements.txt": "iniconfig==2.1.0\n",
        "evals/svc.yaml": (
            "apiVersion: evalward.dev/v1\nkind: Eval\nmetadata: { name: svc-eval }\n"
            "spec:\n  targetAgent: svc-agent\n  fixtures: [svc-fixture]\n"
            "  playground:\n    service:\n"
            "      start: [python3, crm/server.py, '{port}']\n"
            "      ready: /health\n"
            f"{built}"
            "---\napiVersion: evalward.dev/v1\nkind: EvalFixture\n"
            "metadata: { name: svc-fixture }\nspec:\n  targetAgent: svc-agent\n"
            "  input: { type: prompt, payload: { prompt: hi } }\n"
            "  assertions:\n    - { type: stateValue, at: service.uid, exists: true }\n"
        ),
    }


def states(run: Any) -> dict[str, Any]:
    return {f["side"]: f for f in run.results()["fixtures"]}


@needs_root
@pytest.mark.parametrize("watch", ["", "[crm/server.py]"])
def test_a_service_runs_with_the_packages_its_environment_names(
    workspace: Path, github: FakeGitHub, watch: str
) -> None:
    """With a `watch` of its program alone too: its copy holds the folder its installer is
    given (crm/, its requirements file's), as the files it names."""
    files = suite(environment=True, watch=watch)
    head = {"agent/agent.py": AGENT + "# changed\n"}
    run = run_gate(workspace, github, open_pr(workspace, github, files, head, suite={}))
    fixtures = states(run)
    assert {side: f["status"] for side, f in fixtures.items()} == {
        "base": "pass",
        "head": "pass",
    }, run.stdout + run.stderr
    for fixture in fixtures.values():
        served = json.loads(fixture["playground"]["final"])["service"]
        assert served["venv"] and served["iniconfig"].startswith(served["venv"]), served
        assert served["uid"] != 0, served
    assert "environment of playground 'svc-eval''s service (base): built" in run.stdout


@needs_root
def test_without_its_environment_the_service_cannot_import_its_package(
    workspace: Path, github: FakeGitHub
) -> None:
    files = suite(environment=False)
    head = {"agent/agent.py": AGENT + "# changed\n"}
    run = run_gate(workspace, github, open_pr(workspace, github, files, head, suite={}))
    fixture = states(run)["base"]
    assert fixture["status"] == "error", run.stdout + run.stderr
    assert "No module named 'iniconfig'" in json.dumps(fixture), fixture
