"""A run keeps at most 32 MiB of the spans its OpenTelemetry exports send (each one read
alone within the same 32 MiB): an export that would take it past that is refused with 400,
and the run's trace says spans were dropped, with one error step, so the run is never
passed on a part of its trace. Exports before and after it are kept and merged. Through
`evalward run` on a real repository, an agent exports three spans of tools: the first two
hold results of half the bound each, the third a short one."""

from __future__ import annotations

import json
import sys

import pytest

from evalward.runtime.telemetry.otlp import MAX_KEPT_BYTES
from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = f"""\
import json, os, sys, urllib.error, urllib.request
sys.stdin.readline()
url = os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
answers = []
for number, (tool, size) in enumerate([("first", {MAX_KEPT_BYTES // 2}),
                                       ("second", {MAX_KEPT_BYTES // 2}), ("third", 10)]):
    span = {{
        "traceId": "ab", "spanId": "cd", "name": "execute_tool " + tool,
        "startTimeUnixNano": str(number + 1),
        "attributes": [
            {{"key": "gen_ai.operation.name", "value": {{"stringValue": "execute_tool"}}}},
            {{"key": "gen_ai.tool.name", "value": {{"stringValue": tool}}}},
            {{"key": "gen_ai.tool.call.result", "value": {{"stringValue": "r" * size}}}},
        ],
    }}
    document = {{"resourceSpans": [{{"scopeSpans": [{{"spans": [span]}}]}}]}}
    request = urllib.request.Request(
        url, data=json.dumps(document).encode(), method="POST",
        headers={{"content-type": "application/json"}},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            answers.append([reply.status, ""])
    except urllib.error.HTTPError as failed:
        answers.append([failed.code, failed.read().decode()])
print(json.dumps({{"type": "final", "content": "answers " + json.dumps(answers)}}))
"""


def test_an_export_past_what_a_run_keeps_is_refused_and_said(repo: GitRepo) -> None:
    repo.commit(
        "an agent that exports more spans than a run keeps",
        {
            "agents.yaml": one_agent_suite(
                "exporter",
                "export",
                command=f"{{ run: [{sys.executable}, agent/agent.py] }}",
                prompt="say hello",
                assertion="{ type: contains, value: answers }",
            ),
            "agent/agent.py": AGENT,
        },
    )
    done = evalward("run", ".", "--json", "--no-history", cwd=repo.path)
    assert done.returncode != 4, done.stderr[-3000:]
    (fixture,) = json.loads(done.stdout)["fixtures"]
    steps = fixture["trace"]["steps"]
    (final,) = [s["content"] for s in steps if s["type"] == "final"]
    statuses = [status for status, _ in json.loads(final.removeprefix("answers "))]
    assert statuses == [200, 400, 200], final[:3000]
    assert f"past {MAX_KEPT_BYTES:,} bytes" in final
    (error,) = [s["content"] for s in steps if s["type"] == "error"]
    assert error.startswith("OpenTelemetry spans of this run were dropped"), error
    assert [s["tool"] for s in steps if s["type"] == "tool_call"] == ["first", "third"]
    assert fixture["status"] == "error"
