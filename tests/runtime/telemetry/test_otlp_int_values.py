"""OTLP/JSON exports whose `intValue` strings pass the receiver's digit check but that `int()`
refuses: a superscript digit (`"²".isdigit()` is true), 5,000 digits (past Python's 4,300),
a sign given twice (`"+-5"`). An agent run by `evalward run` on a real repository sends each
to the run's OTLP endpoint: each must be answered 400 with a reason, and the run's trace say
the export was unreadable, not fail inside evalward's receiver (a traceback on its stderr, a
bare 500, and the export dropped without a word)."""

from __future__ import annotations

import json
import sys

import pytest

from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = """\
import json, os, sys, urllib.error, urllib.request
sys.stdin.readline()
url = os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
statuses = []
for number in ["\\u00b2", "9" * 5000, "+-5"]:
    span = {
        "traceId": "ab", "spanId": "cd", "name": "execute_tool lookup",
        "startTimeUnixNano": "1",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "lookup"}},
            {"key": "retries", "value": {"intValue": number}},
        ],
    }
    document = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    request = urllib.request.Request(
        url, data=json.dumps(document).encode(), method="POST",
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            statuses.append(reply.status)
    except urllib.error.HTTPError as failed:
        statuses.append(failed.code)
print(json.dumps({"type": "final", "content": "statuses " + json.dumps(statuses)}))
"""


def test_int_values_int_refuses_are_an_unreadable_export_not_an_error_in_the_receiver(
    repo: GitRepo,
) -> None:
    repo.commit(
        "an agent that exports odd integers",
        {
            "agents.yaml": one_agent_suite(
                "exporter",
                "export",
                command=f"{{ run: [{sys.executable}, agent/agent.py] }}",
                prompt="say hello",
                assertion="{ type: contains, value: statuses }",
            ),
            "agent/agent.py": AGENT,
        },
    )
    done = evalward("run", ".", "--json", "--no-history", cwd=repo.path)
    assert done.returncode != 4, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    (fixture,) = json.loads(done.stdout)["fixtures"]
    finals = [s["content"] for s in fixture["trace"]["steps"] if s["type"] == "final"]
    assert finals == ["statuses [400, 400, 400]"], fixture["trace"]["steps"]
    errors = [s["content"] for s in fixture["trace"]["steps"] if s["type"] == "error"]
    assert errors and all("OpenTelemetry export of this run is unreadable" in e for e in errors)
