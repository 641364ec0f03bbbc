"""Tool-call arguments given as JSON text (a `tool_call` event's `"arguments": "..."`, an
OpenTelemetry span's `gen_ai.tool.call.arguments`) nested 900 deep. The event and the export
are held to `jsontext.AGENT_DEPTH` as they are read, but the text inside them is parsed again
by `rundata.trace.arguments_from_json` with no bound, so the step holds arguments nested 900
deep. Through `evalward run` on a real repository the run must end in a verdict or a run
`error` with a reason, never an internal error (exit 4) as results.json is written."""

from __future__ import annotations

import json
import sys

import pytest

from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

NESTED = 'nested = "[" * 900 + "]" * 900\n'

EVENT_AGENT = (
    "import json, sys\nsys.stdin.readline()\n"
    + NESTED
    + """\
print(json.dumps({"type": "tool_call", "tool": "lookup", "arguments": nested}))
print(json.dumps({"type": "final", "content": "hello"}), flush=True)
"""
)

OTEL_AGENT = (
    "import json, os, sys, urllib.request\nsys.stdin.readline()\n"
    + NESTED
    + """\
def text(key, value):
    return {"key": key, "value": {"stringValue": value}}
span = {
    "traceId": "ab", "spanId": "cd", "name": "execute_tool lookup", "startTimeUnixNano": "1",
    "attributes": [
        text("gen_ai.operation.name", "execute_tool"),
        text("gen_ai.tool.name", "lookup"),
        text("gen_ai.tool.call.arguments", nested),
    ],
}
document = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
request = urllib.request.Request(
    os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], data=json.dumps(document).encode(),
    method="POST", headers={"content-type": "application/json"},
)
urllib.request.urlopen(request, timeout=60).read()
print(json.dumps({"type": "final", "content": "hello"}), flush=True)
"""
)

AGENTS = {"a tool_call event": EVENT_AGENT, "an OpenTelemetry span": OTEL_AGENT}


@pytest.mark.parametrize("channel", list(AGENTS), ids=list(AGENTS))
def test_arguments_text_nested_900_deep_is_not_an_internal_error(
    channel: str, repo: GitRepo
) -> None:
    repo.commit(
        "an agent whose tool arguments nest deep",
        {
            "agents.yaml": one_agent_suite(
                "nester",
                "nest",
                command=f"{{ run: [{sys.executable}, agent/agent.py] }}",
                prompt="say hello",
                assertion="{ type: contains, value: hello }",
            ),
            "agent/agent.py": AGENTS[channel],
        },
    )
    done = evalward("run", ".", "--json", "--no-history", cwd=repo.path)
    assert done.returncode != 4, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    (fixture,) = json.loads(done.stdout)["fixtures"]
    assert fixture["status"] in ("pass", "fail", "error"), fixture["status"]
