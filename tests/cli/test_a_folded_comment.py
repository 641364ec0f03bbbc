"""A comment too long for GitHub, from `evalward run` on a terminal: its per-fixture detail is
folded, and the note that says so names where the whole report is for this run — the files
`--output-dir` wrote, in that folder — never a job summary, which a local run has none of."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

FIXTURES = 25
"""With an answer of 5,000 characters each, more detail than a comment holds."""

AGENT = """\
import json, sys
json.load(sys.stdin)
print(json.dumps({"type": "final", "content": "word " * 1000}))
"""


def suite() -> str:
    names = [f"f{i}" for i in range(FIXTURES)]
    fixtures = "".join(
        f"""---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name} }}
spec:
  targetAgent: worker
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  assertions:
    - {{ type: contains, value: never }}
"""
        for name in names
    )
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: worker }}
spec:
  runtime:
    command: {{ run: [{sys.executable}, agent.py] }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: words }}
spec:
  targetAgent: worker
  fixtures: [{", ".join(names)}]
{fixtures}"""


def folded_note(text: str) -> str:
    (line,) = [line for line in text.splitlines() if "detail is folded" in line]
    return line


def test_a_folded_comment_names_the_run_s_own_files(repo: GitRepo, tmp_path: Path) -> None:
    repo.commit("long answers", {"evals.yaml": suite(), "agent.py": AGENT})
    out = tmp_path / "out `1`"

    done = evalward("run", ".", "--no-history", "--output-dir", str(out), cwd=repo.path)

    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert folded_note(done.stdout).endswith(
        f"the full report is in `results.json` and `report.html` in `` {out} ``._"
    ), done.stdout
    assert folded_note((out / "comment.md").read_text(encoding="utf-8")).endswith(
        "the full report is in `results.json` and `report.html`._"
    )
    assert (out / "report.html").is_file() and (out / "results.json").is_file()

    done = evalward("run", ".", "--no-history", cwd=repo.path)

    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert folded_note(done.stdout).endswith(
        "the full report is in the `results.json` and `report.html` that `--output-dir` writes._"
    ), done.stdout
    assert "job summary" not in done.stdout
