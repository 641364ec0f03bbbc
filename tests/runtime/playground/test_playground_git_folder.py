"""A `files` playground seeded from the working tree (`evalward run` without a head commit,
the action's push, schedule and dispatch runs) holds what a commit of it would: never git's
own folder, whose config holds the checkout's credentials (`actions/checkout` persists the
job's token there), and a seed that names that folder is refused at its line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

CREDENTIAL = "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3BsYXlncm91bmQ="
"""What `actions/checkout` leaves in .git/config (http.<url>.extraheader) for later steps."""

AGENT = """\
import json, os, sys
json.load(sys.stdin)
folder = os.environ["EVALWARD_PLAYGROUND_DIR"]
try:
    with open(os.path.join(folder, ".git", "config")) as config:
        seen = config.read()
except OSError as exc:
    seen = f"no git config: {exc.strerror}"
print(json.dumps({"type": "final", "content": seen}))
"""

EVALS = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: reader }}
spec:
  runtime:
    command: {{ run: [{python}, agent.py] }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: whole-repo }}
spec:
  targetAgent: reader
  fixtures: [reads-the-repo]
  playground:
    name: repo
    files: {{ seed: {seed} }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: reads-the-repo }}
spec:
  targetAgent: reader
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  assertions:
    - {{ type: contains, value: no git config }}
    - {{ type: fileState, path: agent.py, exists: true }}
    - {{ type: fileState, path: .git/config, exists: false }}
"""


def run(repo: GitRepo, tmp_path: Path, seed: str) -> tuple[int, str, dict[str, Any] | None]:
    repo.git("config", "http.https://github.com/.extraheader", CREDENTIAL)
    repo.commit(
        "whole repo",
        {
            "evals.yaml": EVALS.format(python=sys.executable, seed=seed),
            "agent.py": AGENT,
            ".gitignore": ".evalward/\n",
        },
    )
    out = tmp_path / "out"
    done = evalward("run", ".", "--no-cache", "--output-dir", str(out), cwd=repo.path)
    assert "Traceback" not in done.stderr, done.stderr
    said = done.stdout + done.stderr
    assert CREDENTIAL not in said
    results = out / "results.json"
    if not results.exists():
        return done.returncode, said, None
    text = results.read_text()
    assert CREDENTIAL not in text
    (result,) = json.loads(text)["fixtures"]
    return done.returncode, said, result


def test_a_files_seed_of_the_whole_working_tree_holds_no_git_folder(
    repo: GitRepo, tmp_path: Path
) -> None:
    code, _, result = run(repo, tmp_path, ".")
    assert result is not None
    assert result["status"] == "pass", [(a["type"], a.get("detail")) for a in result["assertions"]]
    assert code == 0


@pytest.mark.parametrize("seed", [".git", ".git/config", "./.git/"])
def test_a_files_seed_naming_gits_own_folder_is_refused_at_its_line(
    repo: GitRepo, tmp_path: Path, seed: str
) -> None:
    code, said, _ = run(repo, tmp_path, seed)
    assert code == 2, said
    assert "evals.yaml:" in said and "spec.playground.files.seed" in said, said
    assert "is in git's own folder (.git), which no commit holds" in said, said
