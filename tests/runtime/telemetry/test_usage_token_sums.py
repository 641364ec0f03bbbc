"""A bring-your-own command agent's `usage` events whose token counts the protocol accepts one
by one (each a non-negative integer Python's JSON reads: at most 4,300 digits) but whose sum
no `str(int)`, so no JSON writer, may write. Through `evalward run` on a real repository, the
run must end in a verdict or a run `error` with a reason, never a traceback (exit 4)."""

from __future__ import annotations

import sys

import pytest

from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = """\
import json, sys
sys.stdin.readline()
def emit(event):
    sys.stdout.write(json.dumps(event) + "\\n"); sys.stdout.flush()
emit({"type": "assistant", "content": "hello"})
# 4,300 nines each: read as they came; together they are 4,301 digits
for _ in range(11):
    emit({"type": "usage", "input_tokens": int("9" * 4300), "output_tokens": 0})
emit({"type": "final", "content": "hello"})
"""


def test_token_counts_that_add_up_past_4300_digits_are_not_an_internal_error(
    repo: GitRepo,
) -> None:
    repo.commit(
        "an agent that reports its usage",
        {
            "agents.yaml": one_agent_suite(
                "counter",
                "count",
                command=f"{{ run: [{sys.executable}, agent/agent.py] }}",
                prompt="say hello",
                assertion="{ type: contains, value: hello }",
            ),
            "agent/agent.py": AGENT,
        },
    )
    done = evalward("run", ".", "--json", "--no-history", cwd=repo.path)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode != 4, done.stderr[-3000:]
