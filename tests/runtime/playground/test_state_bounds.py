"""The pull request whose agent fills its playground's database to take the gate's memory:
1,998 columns × 4,000 rows of NULL (8 MB on disk, 8 million values) took evalward to 1.1 GiB
before it refused the state as too large; a single text of 2 MB is read whole. Through the
action, run under a data limit of 640 MiB as a small runner would impose: the database is
read row by row and refused at its bounds (values, a value's length), the run is an error
that says why, every other run goes on and the results are written."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from support.actionrun import prepare, pull_request_event, under_test
from support.agentenv import PYTHON, needs_root, workspace
from support.byoagent import pr_tuning
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

__all__ = ["workspace"]  # a fixture

FILLER = r"""
import json, os, sqlite3, sys

fixture = json.load(sys.stdin)["fixture"]
db = sqlite3.connect(os.environ["EVALWARD_SQLITE_PATH"])
db.execute("PRAGMA synchronous = OFF")
if fixture == "null-flood":
    names = ", ".join(f"c{i}" for i in range(1998))
    db.execute(f"CREATE TABLE flood (id INTEGER PRIMARY KEY, {names})")
    db.executemany("INSERT INTO flood (c0) VALUES (?)", ([None] for _ in range(4000)))
elif fixture == "long-text":
    db.execute("INSERT INTO notes (body) VALUES (?)", ("x" * 2_000_000,))
else:
    db.execute("INSERT INTO notes (body) VALUES ('tidy')")
db.commit()
print(json.dumps({"type": "final", "content": "filled"}))
"""

SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: filler }}
spec:
  runtime:
    command: {{ run: [{PYTHON}, agent/filler.py] }}
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: filler-eval }}
spec:
  targetAgent: filler
  fixtureSelector: {{ matchLabels: {{ agent: filler }} }}
  playground: {{ name: ledger, sqlite: {{ seed: world/seed.sql }} }}
"""
FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}, labels: {{ agent: filler }} }}
spec:
  targetAgent: filler
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  assertions:
    - {{ type: sql, query: "SELECT count(*) FROM notes", rows: [[1]] }}
"""
FIXTURES = ("null-flood", "long-text", "tidy")
DATA_LIMIT = 640 * 1024 * 1024


@needs_root
def test_a_database_past_its_bounds_is_refused_as_it_is_read(
    workspace: Path, github: FakeGitHub
) -> None:
    files = {
        "evals/filler.yaml": SUITE + "".join(FIXTURE.format(name=name) for name in FIXTURES),
        "agent/filler.py": FILLER,
        "world/seed.sql": "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);\n",
    }
    base, head = pr_tuning(GitRepo(workspace), github, 3, files, "agent/filler.py")
    for path in [workspace, *workspace.rglob("*")]:  # the runner's user owns the checkout
        os.lchown(path, 1001, 1001)
    event = pull_request_event(github.repository, 3, base, head)
    launch = prepare(
        workspace, github, event, inputs={"output-dir": ".evalward/out", "cache": "off"}
    )
    done = subprocess.run(
        ["prlimit", f"--data={DATA_LIMIT}", *under_test()],
        cwd=workspace,
        env=launch.env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout + done.stderr
    results = json.loads((workspace / ".evalward" / "out" / "results.json").read_text())
    by_run = {(f["side"], f["fixture"]): f for f in results["fixtures"]}
    for side in ("base", "head"):
        flood, long = by_run[(side, "null-flood")], by_run[(side, "long-text")]
        assert flood["status"] == "error", flood["message"]
        assert (
            "playground 'ledger': its database holds more than 500,000 values" in (flood["message"])
        )
        assert long["status"] == "error", long["message"]
        assert "its table 'notes' holds a value longer than 1,048,576 bytes" in long["message"]
        assert by_run[(side, "tidy")]["status"] == "pass", by_run[(side, "tidy")]["message"]
