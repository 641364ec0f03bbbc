"""State criteria on a turn of a scripted conversation, as at the fixture's top: what they
read beyond the state (a `stateSnapshot`'s file, an `sql` query) was gathered from the
fixture's own assertions alone, so on a turn every run of them was an error ("the snapshot
cannot be read: not read"), whatever the agent left."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from runtime.playground.test_playground_hostile import AGENTS, HEADER, run
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: talk, labels: { suite: worlds } }
spec:
  targetAgent: worker
  playground:
    files: { seed: world/files }
  conversation:
    turns:
      - user: go
        assertions:
          - { type: stateSnapshot, at: files, snapshot: snap.json }
"""


@pytest.mark.parametrize("seen", ["talk\n", "someone else\n"])
def test_a_snapshot_on_a_scripted_turn_is_compared(
    repo: GitRepo, tmp_path: Path, seen: str
) -> None:
    """The agent leaves the seed and `seen.txt` naming its fixture: the turn's snapshot
    holds the same (a pass) or another name (a failure naming the difference)."""
    repo.commit(
        "a world",
        {
            "evals.yaml": HEADER.format(python=sys.executable, reps=1) + FIXTURE,
            "agent.py": (AGENTS / "playground_agent.py").read_text(),
            "world/files/notes.txt": "seeded notes\n",
            "snap.json": json.dumps({"notes.txt": "seeded notes\n", "seen.txt": seen}),
        },
    )

    code, output, results = run(repo, tmp_path)

    ((status, message),) = [(a["status"], a["message"]) for a in results[0]["assertions"]]
    if seen == "talk\n":
        assert (status, code) == ("pass", 0), (message, output)
    else:
        assert (status, code) == ("fail", 1), (message, output)
        assert "files.seen.txt" in message, message
