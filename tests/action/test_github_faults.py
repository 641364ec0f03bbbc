"""The GitHub API failing: the gate's decision, the job summary and the results still stand,
and the log says what failed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import commit_pr, provider_env, script_model

pytestmark = pytest.mark.hostile

LABEL = "force-eval-bypass"
RATE_LIMITED = {
    "x-ratelimit-limit": "5000",
    "x-ratelimit-remaining": "0",
    "x-ratelimit-used": "5000",
    "x-ratelimit-reset": str(int(time.time()) + 3600),
}

FAULTS = {
    "comment create 403": ("POST", r"/issues/\d+/comments$", 403, {}, "post the comment"),
    "comment create 422": ("POST", r"/issues/\d+/comments$", 422, {}, "post the comment"),
    "comment create 500": ("POST", r"/issues/\d+/comments$", 500, {}, "post the comment"),
    "comments list rate limit": (
        "GET",
        r"/issues/\d+/comments$",
        403,
        RATE_LIMITED,
        "read the comments",
    ),
    "comment create 429": ("POST", r"/issues/\d+/comments$", 429, {"retry-after": "0"}, "post"),
}


@dataclass(frozen=True)
class Change:
    repo: GitRepo
    base: str
    head: str


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    """One model server for the module, whose head greets badly: the result cache keys runs
    by their endpoint, so every gate after the first reads the runs the first did. Each
    test's point is what the gate does with GitHub after its runs, which is the same."""
    server = ScriptedModelServer()
    script_model(server, head_greets_well=False)
    yield server
    server.close()
    assert server.contract_violations == []


@pytest.fixture(scope="module")
def change(tmp_path_factory: pytest.TempPathFactory) -> Change:
    """The pull request every test gates: its head fails the greeting fixture."""
    repo = GitRepo(tmp_path_factory.mktemp("faults") / "repo")
    base, head = commit_pr(repo)
    return Change(repo, base, head)


def opened(github: FakeGitHub, change: Change) -> None:
    """Pull request 7 of `change`, as GitHub's API has it."""
    github.add_pull(FakePull(number=7, head_sha=change.head, base_sha=change.base))


def gate(
    github: FakeGitHub,
    change: Change,
    model: ScriptedModelServer,
    run_dir: Path,
    labels: list[str] | None = None,
) -> ActionRun:
    """Pull request 7 gated, its runner's files in `run_dir`: the workspace, and
    the result cache in it, are the module's."""
    return run_action(
        change.repo.path,
        github,
        pull_request_event(github.repository, 7, change.base, change.head, labels),
        env=provider_env(model),
        run_dir=run_dir,
    )


@pytest.mark.parametrize("fault", list(FAULTS), ids=list(FAULTS))
def test_a_comment_failure_leaves_the_decision_and_the_summary_standing(
    fault: str, github: FakeGitHub, change: Change, model: ScriptedModelServer, tmp_path: Path
) -> None:
    method, path, status, headers, what = FAULTS[fault]
    opened(github, change)
    github.fail(method, path, status, "API rate limit exceeded" if headers else "nope", headers)

    run = gate(github, change, model, tmp_path / "runner")

    assert run.returncode == 1, run.stderr  # the gate failed, as the evals say
    assert "Traceback" not in run.stderr
    assert run.outputs["result"] == "fail"
    assert "support-bot-eval" in run.summary
    assert run.results()["result"] == "fail"
    warnings = [line for line in run.stdout.splitlines() if line.startswith("::warning::")]
    assert any(what in w and f"HTTP {status}" in w for w in warnings), run.stdout
    if headers.get("x-ratelimit-remaining") == "0":
        assert any("rate limit is exhausted" in w for w in warnings)
    assert "evalward: fail" in run.stdout


def test_events_api_failing_refuses_the_bypass_and_says_why(
    github: FakeGitHub, change: Change, model: ScriptedModelServer, tmp_path: Path
) -> None:
    opened(github, change)
    github.permissions["maintainer"] = "admin"
    github.add_label(7, LABEL, "maintainer")
    github.fail("GET", r"/issues/\d+/events$", 500)

    run = gate(github, change, model, tmp_path / "runner", [LABEL])

    assert run.returncode == 1, run.stderr  # fail closed: no bypass without its audit facts
    assert run.outputs["result"] == "fail"
    assert "support-bot-eval" in run.summary
    assert "read the events of pull request #7: HTTP 500" in run.stdout
    assert github.comments_on(7), "the comment is still posted"
