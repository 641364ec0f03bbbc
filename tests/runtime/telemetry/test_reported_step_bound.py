"""What an agent reports of its own steps is bounded: past 10,000 steps (its events, the model
calls the proxy saw and its spans together) the rest are dropped and the run is an error that
says so, so an agent printing tiny events as fast as it can neither grows evalward's memory
nor makes merging what it reports take time without bound.

Through `evalward run` on a real repository: a command agent prints 12,000 `tool_call` events
of one tool, each with its own id, then a final answer its assertion would pass."""

from __future__ import annotations

import json
import sys

import pytest

from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = """\
import json, sys
sys.stdin.readline()
for i in range(12_000):
    print(json.dumps({"type": "tool_call", "tool": "ping", "id": f"c{i}", "arguments": {}}))
print(json.dumps({"type": "final", "content": "all done"}))
"""


def test_an_agent_reporting_more_steps_than_a_run_keeps_is_an_error_that_says_so(
    repo: GitRepo,
) -> None:
    repo.commit(
        "an agent that reports twelve thousand steps",
        {
            "agents.yaml": one_agent_suite(
                "chatty",
                "many-steps",
                command=f"[{sys.executable}, agent/chatty.py]",
                prompt="hello",
                assertion="{ type: contains, value: all done }",
            ),
            "agent/chatty.py": AGENT,
        },
    )

    done = evalward("run", ".", "--json", "--no-history", cwd=repo.path)

    (fixture,) = json.loads(done.stdout)["fixtures"]
    steps = fixture["trace"]["steps"]
    assert len(steps) <= 10_002  # the input, 10,000 reported, the error that says so
    assert fixture["status"] == "error", fixture["message"]
    assert "reported more than 10,000 steps" in fixture["message"]
    assert done.returncode != 0 and "Traceback" not in done.stderr
