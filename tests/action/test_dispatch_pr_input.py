"""The workflow_dispatch input `pr` is a pull request number written in ASCII digits; anything
else is one clear message naming the input (exit 2), never an internal error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from support.actionrun import run_action
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

WEBHOOKS = Path(__file__).resolve().parents[1] / "data" / "github" / "webhooks"


@pytest.mark.parametrize("typed", ["²", "7\u00b9", "①"])
def test_a_pr_input_of_digits_python_cannot_read_as_a_number_is_one_clear_message(
    typed: str, repo: GitRepo, github: FakeGitHub
) -> None:
    repo.commit("a file", {"README.md": "hello\n"})
    payload = json.loads((WEBHOOKS / "workflow_dispatch.json").read_text())
    payload["repository"]["full_name"] = github.repository
    payload["inputs"] = {"pr": typed}

    run = run_action(repo.path, github, payload, event_name="workflow_dispatch")

    assert "internal error" not in run.stdout + run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    assert run.returncode == 2, run.stderr
    assert "workflow_dispatch input `pr`" in run.stderr
