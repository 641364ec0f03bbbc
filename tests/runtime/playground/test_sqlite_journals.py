"""A run's database as the agent's programs leave it, whatever journal mode they chose,
through `evalward run`: a database in WAL mode is read with its log or without it, and one
whose transaction a program left unfinished (a hot rollback journal beside it) is never read
as if the transaction had been committed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

AGENTS = Path(__file__).resolve().parents[2] / "agents"

EVALS = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: refunder }}
spec:
  runtime:
    command: {{ run: [{python}, agent.py] }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: refunds }}
spec:
  targetAgent: refunder
  fixtures: [{fixture}]
  playground:
    name: shop
    sqlite: {{ seed: shop/seed.sql }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {fixture} }}
spec:
  targetAgent: refunder
  input: {{ type: prompt, payload: {{ prompt: Refund order A-1. }} }}
  assertions:
    - {{ type: sql, query: "SELECT order_id FROM refunds", rows: [[A-1]] }}
    - {{ type: stateValue, at: db.refunds.1.order_id, equals: A-1 }}
"""

SEED = """\
CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT);
CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
INSERT INTO orders SELECT 'A-' || i, 'delivered' FROM n;
"""


def refund(repo: GitRepo, tmp_path: Path, fixture: str) -> tuple[int, dict[str, Any]]:
    repo.commit(
        "refunds",
        {
            "evals.yaml": EVALS.format(python=sys.executable, fixture=fixture),
            "agent.py": (AGENTS / "sqlite_journal_agent.py").read_text(),
            "shop/seed.sql": SEED,
        },
    )
    out = tmp_path / "out"
    done = evalward("run", ".", "--no-cache", "--output-dir", str(out), cwd=repo.path)
    assert "Traceback" not in done.stderr, done.stderr
    (result,) = json.loads((out / "results.json").read_text())["fixtures"]
    return done.returncode, result


@pytest.mark.parametrize("fixture", ["wal", "wal-open", "persist"])
def test_a_database_in_any_journal_mode_reads_as_what_the_agent_committed(
    repo: GitRepo, tmp_path: Path, fixture: str
) -> None:
    # `wal`: the log checkpointed and removed as the tool closed it, the header still WAL's,
    # which SQLite does not open in memory: this was "its database is corrupt"
    code, result = refund(repo, tmp_path, fixture)
    assert result["status"] == "pass", result["trace"]["steps"]
    assert code == 0


def test_a_transaction_a_stopped_tool_never_committed_is_not_the_runs_state(
    repo: GitRepo, tmp_path: Path
) -> None:
    # the tool inserted the refund and was killed before COMMIT, its pages already in the
    # file: SQLite rolls them back at the next open, and the refund was read as made
    code, result = refund(repo, tmp_path, "stopped")
    assert result["status"] == "error"
    errors = [s["content"] for s in result["trace"]["steps"] if s["type"] == "error"]
    assert any(
        "playground 'shop'" in e
        and "never committed" in e
        and "playground.sqlite-journal is a hot journal" in e
        and "commit or roll back every transaction" in e
        for e in errors
    ), errors
    assert code != 0
