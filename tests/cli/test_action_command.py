"""`evalward action` in-process (`cli/action.py`): the GitHub Action run from the GITHUB_*
environment a workflow gives it: a push that is not to the default branch, skipped with its
reason and `result=skipped`; an event it does not gate, refused with `result=incomplete`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalward.cli import action
from evalward.host import Host
from support.actionrun import parse_github_output
from support.clirun import in_process, initialised, quiet_host, refused
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


def workflow(repo: GitRepo, tmp_path: Path, event_name: str, event: dict[str, object]) -> Host:
    """The host of a workflow's step: the event, the workspace and the runner's files."""
    (tmp_path / "event.json").write_text(json.dumps(event))
    (tmp_path / "output").write_text("")
    return Host(
        {
            **quiet_host(repo.path).env,
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
            "GITHUB_WORKSPACE": str(repo.path),
            "GITHUB_REPOSITORY": "acme/shop",
            "GITHUB_OUTPUT": str(tmp_path / "output"),
            "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        }
    )


def test_a_push_to_another_branch_is_skipped_with_its_reason(repo: GitRepo, tmp_path: Path) -> None:
    initialised(repo)
    event = {"ref": "refs/heads/feature", "repository": {"default_branch": "main"}}
    code, said = in_process(action.main, "action", host=workflow(repo, tmp_path, "push", event))
    assert code == 0
    assert said == "evalward: skipped — push to refs/heads/feature, not the default branch\n"
    assert parse_github_output((tmp_path / "output").read_text()) == {"result": "skipped"}
    assert not (repo.path / ".evalward").exists()  # nothing ran


def test_an_event_it_does_not_gate_is_refused_and_the_result_is_incomplete(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    initialised(repo)
    host = workflow(repo, tmp_path, "issues", {"action": "opened"})
    host.env.pop("GITHUB_ACTIONS")  # the message as a terminal shows it, not as an annotation
    said = refused(capsys, "action", host=host)
    assert said.startswith("GITHUB_EVENT_NAME=issues: evalward runs on pull_request, merge_group, ")
    assert parse_github_output((tmp_path / "output").read_text()) == {"result": "incomplete"}
    assert "GITHUB_EVENT_NAME=issues" in (tmp_path / "summary.md").read_text()
