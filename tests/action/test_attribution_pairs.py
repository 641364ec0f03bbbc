"""A pull request whose fixtures all pass, and whose pairwise judge finds question-1 worse,
run as a workflow runs the action with every default: the gate blocks on the judge alone,
and attribution names the line that did it on its line (the review), in the comment and in
report.html, saying the fixture is worse by the pairwise judge and what its pairs showed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import gate_pull_request
from support.guessing import project, script
from support.suite import provider_env

pytestmark = pytest.mark.e2e


def test_the_line_that_makes_a_fixture_worse_in_pairs_is_reviewed_on_its_line(
    tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    script(model)
    repo = project(tmp_path / "repo")
    base, head = repo.git("rev-parse", "main").strip(), repo.git("rev-parse", "HEAD").strip()

    run = gate_pull_request(repo, github, base, head, provider_env(model))

    assert run.returncode == 1, run.stdout + run.stderr
    results = json.loads((repo.path / ".evalward/out/results.json").read_text())
    (regression,) = results["attribution"]["regressions"]
    assert regression["inPairs"] and regression["result"] == "attributed", regression
    (comment,) = github.comments_on(7)
    assert "(`question-1`, worse by the pairwise judge)" in comment["body"]
    assert f"/blob/{head}/prompts/helper.md" + "#L5)" in comment["body"]
    (review_comment,) = github.review_comments_on(7)
    assert (review_comment["path"], review_comment["line"]) == ("prompts/helper.md", 5)
    said = (
        "> This change makes helper-eval worse: its pairwise judge prefers the base's runs of "
        "question-1 to this head's, though they pass. Taken back, the head is no worse "
        "(question-1: base preferred in 0/1 pairs); the base with only this change is worse "
        "(question-1: base preferred in 8/8 pairs)."
    )
    assert said in review_comment["body"], review_comment["body"]
    page = (repo.path / ".evalward/out/report.html").read_text()
    assert "(question-1, worse by the pairwise judge)" in page
