"""A bring-your-own command agent's `usage` events whose costs the protocol accepts one by one
(each finite, `1.7e308`) but whose sum is infinity. Through `evalward run` on a real
repository, results.json must stay JSON every reader reads: `Infinity` is not JSON
(`text/jsontext.py` refuses it on the way in for just this reason)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

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
for _ in range(2):
    emit({"type": "usage", "input_tokens": 1, "output_tokens": 1, "cost_usd": 1.7e308})
emit({"type": "final", "content": "hello"})
"""


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def test_costs_that_add_up_to_infinity_leave_results_json_strict(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.commit(
        "an agent that reports its cost",
        {
            "agents.yaml": one_agent_suite(
                "spender",
                "spend",
                command=f"{{ run: [{sys.executable}, agent/agent.py] }}",
                prompt="say hello",
                assertion="{ type: contains, value: hello }",
            ),
            "agent/agent.py": AGENT,
        },
    )
    out = tmp_path / "out"
    done = evalward("run", ".", "--json", "--no-history", "--output-dir", str(out), cwd=repo.path)
    assert done.returncode != 4, done.stderr[-3000:]
    for text in (done.stdout, (out / "results.json").read_text()):
        json.loads(text, parse_constant=_not_json)
