"""`action.run` in-process: `main` with a workflow's environment, for the routes that end before
any run (a push elsewhere than the default branch is skipped; a gate without a token, or of a
pull request GitHub does not know, stops early), and `stopped_early`'s outputs and summary."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from evalward.action.context import WorkflowContext
from evalward.action.run import main, stopped_early
from evalward.action.workflow import Outputs
from evalward.errors import ConfigError, UnknownPullRequest
from evalward.host import Host
from fakes.github_api import FakeGitHub
from support.actionrun import parse_github_output
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


def workflow(
    repo: GitRepo, tmp_path: Path, event: str, payload: dict[str, object]
) -> dict[str, str]:
    repo.commit("nothing yet", {"README.md": "agents\n"})
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload))
    return {
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_WORKSPACE": str(repo.path),
        "GITHUB_REPOSITORY": "acme/agents",
        "GITHUB_RUN_ID": "42",
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }


def outputs(tmp_path: Path) -> dict[str, str]:
    return parse_github_output((tmp_path / "output").read_text())


def test_a_push_to_another_branch_is_skipped(repo: GitRepo, tmp_path: Path) -> None:
    env = workflow(repo, tmp_path, "push", {"repository": {"default_branch": "main"}})
    env["GITHUB_REF"] = "refs/heads/feature"
    out = io.StringIO()

    assert main(env, out) == 0

    assert "evalward: skipped — push to refs/heads/feature, not the default branch" in (
        out.getvalue()
    )
    assert outputs(tmp_path) == {"result": "skipped"}


def test_a_gate_without_a_token_stops_early_with_result_incomplete(
    repo: GitRepo, tmp_path: Path
) -> None:
    env = workflow(repo, tmp_path, "workflow_dispatch", {"inputs": {"pr": "7"}})

    with pytest.raises(ConfigError, match="no GitHub token"):
        main(env, io.StringIO())

    assert outputs(tmp_path) == {"result": "incomplete"}
    assert "no GitHub token" in (tmp_path / "summary.md").read_text()


def test_a_pull_request_github_does_not_know_stops_early_naming_it(
    repo: GitRepo, tmp_path: Path, github: FakeGitHub
) -> None:
    env = workflow(repo, tmp_path, "workflow_dispatch", {"inputs": {"pr": "12"}})
    env |= {"GITHUB_API_URL": github.url, "INPUT_GITHUB-TOKEN": github.token}

    with pytest.raises(UnknownPullRequest) as unknown:
        main(env, io.StringIO())

    assert "the workflow_dispatch input `pr`: pull request #12" in str(unknown.value)
    assert outputs(tmp_path) == {"result": "incomplete"}
    summary = (tmp_path / "summary.md").read_text()
    assert "pull request #12 is not known" in summary
    assert github.token not in summary


def test_an_error_after_the_result_was_written_writes_nothing_again(tmp_path: Path) -> None:
    context = WorkflowContext("push", "acme/agents", tmp_path, "", "https://github.example", "1")
    written = Outputs(str(tmp_path / "output"))
    env = {"GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    host = Host.of_process(env)

    stopped_early(host, context, written, RuntimeError("late"))
    stopped_early(host, context, written, RuntimeError("later"))

    assert outputs(tmp_path) == {"result": "incomplete"}
    summary = (tmp_path / "summary.md").read_text()
    assert "internal error: RuntimeError: late. This is a bug in evalward." in summary
    assert "later" not in summary
