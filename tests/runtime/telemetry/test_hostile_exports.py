"""An agent's OpenTelemetry exports and trace events are its own data: through the action's
entry point, with the agent as the unprivileged user, malformed exports and events are that
run's located errors — the run's results are written, the job ends as a gate does, with no
traceback — and a well-formed export in the same run still becomes its steps."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub
from support.actionrun import pull_request_event, run_action
from support.byoagent import agent_python, pr_tuning
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e


def attribute(value: object) -> dict[str, object]:
    span = {"name": "execute_tool lookup", "attributes": [{"key": "k", "value": value}]}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


MALFORMED = [
    {"resourceSpans": [1]},
    {"resourceSpans": [{"scopeSpans": [{"spans": 5}]}]},
    attribute({"intValue": "zz"}),
    attribute({"arrayValue": [{"stringValue": "a"}]}),
    attribute({"kvlistValue": 3}),
    {"resourceSpans": [{"scopeSpans": "x"}]},
    {"resourceSpans": {"scopeSpans": []}},
]
GOOD = {
    "resourceSpans": [
        {
            "scopeSpans": [
                {
                    "spans": [
                        {
                            "name": "execute_tool search",
                            "startTimeUnixNano": "1",
                            "attributes": [
                                {"key": "gen_ai.tool.name", "value": {"stringValue": "search"}},
                                {"key": "gen_ai.tool.call.id", "value": {"stringValue": "c1"}},
                            ],
                        }
                    ]
                }
            ]
        }
    ]
}

EXPORTER = """\
import json, os, sys, urllib.error, urllib.request

sys.stdin.readline()
url = os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
statuses = []
for document in json.loads(open("agent/exports.json").read()):
    request = urllib.request.Request(url, data=json.dumps(document).encode(),
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            statuses.append(reply.status)
    except urllib.error.HTTPError as refused:
        statuses.append(refused.code)
huge = "1" + "0" * 400  # a number no float holds
print('{"type": "tool_call", "tool": "lookup", "duration_ms": %s}' % huge, flush=True)
print(json.dumps({"type": "final", "content": " ".join(map(str, statuses))}), flush=True)
"""
AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: exporter }}
spec:
  runtime:
    command: [{python}, agent/exporter.py]
  watch: [agent/*]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: exporter-eval }}
spec:
  targetAgent: exporter
  fixtures: [exports]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: exports }}
spec:
  targetAgent: exporter
  input: {{ type: prompt, payload: {{ prompt: "export" }} }}
  assertions:
    - {{ type: toolCalled, tool: lookup }}
"""


def test_malformed_exports_and_events_are_the_runs_located_errors_not_a_crash(
    repo: GitRepo, github: FakeGitHub
) -> None:
    python, isolation = agent_python()
    files = {
        "agents.yaml": AGENT.format(python=python),
        "agent/exporter.py": EXPORTER,
        "agent/exports.json": json.dumps([*MALFORMED, GOOD]),
    }
    base, head = pr_tuning(repo, github, 8, files, "agent/exporter.py")

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 8, base, head),
        env={"OPENAI_API_KEY": "sk-unused-0123456789"},
        inputs={"cache": "off", "agent-isolation": isolation},
    )

    assert run.returncode in (0, 1), run.stdout + run.stderr  # a gate's ending, not a crash
    assert "Traceback" not in run.stdout + run.stderr
    fixtures = run.results()["fixtures"]
    assert len(fixtures) == 2
    for fixture in fixtures:
        assert fixture["output"] == " ".join(["400"] * len(MALFORMED) + ["200"])
        steps = fixture["trace"]["steps"]
        errors = [s["content"] for s in steps if s["type"] == "error"]
        assert errors[0] == (
            "an OpenTelemetry export of this run is unreadable: "
            "resourceSpans[0] must be an object, got 1"
        )
        assert len(errors) == len(MALFORMED)
        assert any("intValue must be a 64-bit integer" in e for e in errors)
        assert any("arrayValue must be an object with a `values` list" in e for e in errors)
        # the well-formed export is read all the same, next to the agent's own event
        calls = [s for s in steps if s["type"] == "tool_call"]
        assert [(c["tool"], c["via"]) for c in calls] == [("lookup", None), ("search", "otel")]
        assert all(c.get("duration_ms", 0) == 0 for c in calls)  # 10**400 is no duration
        assert fixture["status"] == "error"
