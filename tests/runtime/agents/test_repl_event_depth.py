"""A REPL command agent (`runtime.command.repl`) whose `tool_call` event carries arguments
nested 900 deep. A command agent's events are held to `jsontext.AGENT_DEPTH` as they are
read (`runtime/agents/command.py`), so that what a trace holds can be written again; a REPL
agent's, read by `command.stdout_event`, are too. Through `evalward run` on a real repository
the run must end in a verdict or a run `error` with a reason, never an internal error
(exit 4) as results.json is written."""

from __future__ import annotations

import json
import sys

import pytest

from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = """\
import json
while True:
    try:
        input("> ")
    except EOFError:
        break
    nested = "[" * 900 + "]" * 900
    print('{"type": "tool_call", "tool": "lookup", "arguments": {"id": ' + nested + '}}')
    print(json.dumps({"type": "final", "content": "hello"}), flush=True)
"""


def test_a_repl_agents_deeply_nested_event_is_not_an_internal_error(repo: GitRepo) -> None:
    repo.commit(
        "a REPL agent with deep arguments",
        {
            "agents.yaml": one_agent_suite(
                "desk",
                "ask",
                command=(
                    f"{{ run: [{sys.executable}, agent/repl.py], stdin: text, "
                    "repl: { prompt: '> ' } }"
                ),
                prompt="say hello",
                assertion="{ type: contains, value: hello }",
            ),
            "agent/repl.py": AGENT,
        },
    )
    done = evalward("run", ".", "--json", "--no-history", cwd=repo.path)
    assert done.returncode != 4, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    (fixture,) = json.loads(done.stdout)["fixtures"]
    assert fixture["status"] in ("pass", "fail", "error"), fixture["status"]
