"""The result cache never hands a base side a result a pull request's head computed: the
head's other programs ran in the same turn, so such a result is kept apart (a rerun of the
same pull request, or a later round of its runs, reads the base's own)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.model_server import ScriptedModelServer, text
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.integration

SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: answerer }}
spec:
  models: [openai/gpt-test]
  system: Answer the question.
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: answers }}
spec:
  targetAgent: answerer
  fixtures: [question]
  scoring: {{ gate: {{ baseRuns: whereRead }} }}
  execution: {{ timeoutSeconds: {timeout} }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: question }}
spec:
  targetAgent: answerer
  input: {{ type: prompt, payload: {{ prompt: "the question" }} }}
  assertions: [{{ type: contains, value: right }}]
"""


def test_a_rerun_s_base_never_takes_a_result_the_head_computed(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """The pull request changes only the Eval's timeout, which no result depends on: head and
    base would share every key. The first run's head passes, so the base does not run (it is
    read only where the head fails). The rerun asks for two reps; the second fails, so the
    base runs both: its first is run, not the head's taken from the cache."""
    repo.commit("the suite", {"evals.yaml": SUITE.format(timeout=60)})
    repo.branch("feature")
    repo.commit("a longer timeout", {"evals.yaml": SUITE.format(timeout=61)})
    env = provider_env(model)
    model.script("the question", text("the right answer"))
    first = evalward("run", ".", "--base", "main", "--no-history", cwd=repo.path, **env)
    assert first.returncode == 0, first.stdout + first.stderr

    model.rules.clear()
    model.script("the question", text("a wrong answer"))
    out = tmp_path / "out"
    second = evalward(
        "run",
        ".",
        "--base",
        "main",
        "--no-history",
        "--reps",
        "2",
        "--output-dir",
        str(out),
        cwd=repo.path,
        **env,
    )
    results = json.loads((out / "results.json").read_text())
    runs = {(f["side"], f["rep"]): f for f in results["fixtures"]}
    assert runs[("head", 0)]["cached"] is True  # the head's own, from the first run
    assert runs[("base", 0)]["cached"] is False, second.stdout
