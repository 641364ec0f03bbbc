"""A playground's database is read within a time bound, whatever its schema makes SQLite
compute: a seed (the pull request's file) that gives a table a virtual generated column,
recomputed for every row each time the table is checked or read, fails its run as an error
naming the playground and the bound (READ_SECONDS, which this test sets shorter), as a state
criterion's query that never ends does (QUERY_SECONDS), and never holds the job until the
runner's own timeout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.clirun import evalward_setting
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = """\
import json, sys
json.load(sys.stdin)
print(json.dumps({"type": "final", "content": "done"}))
"""

SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: worker }}
spec:
  runtime:
    command: {{ run: [{sys.executable}, agent.py] }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: ledger }}
spec:
  targetAgent: worker
  fixtures: [count]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: count }}
spec:
  targetAgent: worker
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  playground: {{ name: heavy, sqlite: {{ seed: world/seed.sql }} }}
  assertions:
    - {{ type: sql, query: "SELECT count(*) FROM t", rows: [[100000]] }}
"""


def _slow_expression() -> str:
    """About 50 ms of SQLite's work per row: eight passes over a text of a million
    characters, which depends on the row so it is never computed once for all."""
    expression = "printf('%.*c', 1000000 - (n % 2), 'x')"
    for i in range(8):
        expression = f"replace({expression}, '{'xy'[i % 2]}', '{'yx'[i % 2]}')"
    return f"length({expression})"


SEED = f"""\
CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100000)
INSERT INTO t (n) SELECT i FROM c;
ALTER TABLE t ADD COLUMN slow INTEGER AS ({_slow_expression()}) VIRTUAL;
"""
"""A database of about 1 MB whose integrity check and read take over an hour of CPU: 100,000
rows (MAX_ROWS) × 50 ms."""


BOUND = 3.0
"""The reading bound this test runs evalward with, in place of READ_SECONDS (30 s): what it
proves is that the bound holds, and 27 s more of one core's work would prove nothing more."""


def test_a_generated_column_that_costs_an_hour_to_read_fails_its_run_within_the_bound(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.commit("heavy", {"evals.yaml": SUITE, "agent.py": AGENT, "world/seed.sql": SEED})
    out = tmp_path / "out"
    args = ("run", ".", "--no-cache", "--output-dir", str(out))
    try:
        done = evalward_setting(  # without the bound, hours
            "evalward.runtime.playground.sqlite_read.READ_SECONDS", BOUND, *args,
            cwd=repo.path, limit=600,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("reading the playground's database had no time bound: the run never ended")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout + done.stderr
    (result,) = json.loads((out / "results.json").read_text())["fixtures"]
    assert result["status"] == "error", result
    assert "playground 'heavy'" in result["message"], result["message"]
    assert f"could not be read within {BOUND:g} s" in result["message"], result["message"]
