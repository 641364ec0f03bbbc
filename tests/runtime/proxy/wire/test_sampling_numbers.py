"""A bring-your-own agent's request to the model proxy under `--mock-script` whose
`temperature` is an integer JSON reads but no float holds (401 digits). Through `evalward
run` on a real repository, the proxy must refuse it in the agent's API (400, with a reason),
not fail inside its handler: a traceback in evalward's output and a bare 500 the agent can
make of nothing, for every API the mock serves."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

MOCK_SCRIPT = Path(__file__).resolve().parents[4] / "examples/mock-replies.yaml"

AGENT = """\
import json, os, sys, urllib.error, urllib.request
sys.stdin.readline()
base, key = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]
HUGE = "1" + "0" * 400
BODIES = [
    ("/chat/completions",
     '{"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}], '
     '"temperature": ' + HUGE + '}'),
    ("/responses", '{"model": "gpt-4.1-mini", "input": "hi", "temperature": ' + HUGE + '}'),
    ("/messages",
     '{"model": "claude-haiku-4-5", "max_tokens": 10, '
     '"messages": [{"role": "user", "content": "hi"}], "temperature": ' + HUGE + '}'),
]
statuses = []
for path, body in BODIES:
    request = urllib.request.Request(
        base + path, data=body.encode(), method="POST",
        headers={"content-type": "application/json", "authorization": "Bearer " + key,
                 "x-api-key": key, "anthropic-version": "2023-06-01"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            statuses.append(reply.status)
    except urllib.error.HTTPError as failed:
        statuses.append(failed.code)
print(json.dumps({"type": "final", "content": "statuses " + json.dumps(statuses)}))
"""


def test_a_temperature_no_float_holds_is_refused_not_an_error_inside_the_proxy(
    repo: GitRepo,
) -> None:
    repo.commit(
        "an agent that asks for a huge temperature",
        {
            "agents.yaml": one_agent_suite(
                "heater",
                "heat",
                command=f"{{ run: [{sys.executable}, agent/agent.py] }}",
                prompt="say hello",
                assertion="{ type: contains, value: statuses }",
            ),
            "agent/agent.py": AGENT,
        },
    )
    done = evalward(
        "run", ".", "--json", "--no-history", "--mock-script", str(MOCK_SCRIPT), cwd=repo.path
    )
    assert done.returncode != 4, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    (fixture,) = json.loads(done.stdout)["fixtures"]
    finals = [s["content"] for s in fixture["trace"]["steps"] if s["type"] == "final"]
    assert finals == ["statuses [400, 400, 400]"], fixture["trace"]["steps"]
