"""What a run without a base says it ran and why, and where its files are for later steps
(`action/publish/outputs.py`). The files, summary and outputs themselves are checked through the
action's entry point (tests/action/test_github_events.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.action.context import WorkflowContext
from evalward.action.publish.outputs import in_workspace, run_reason
from evalward.action.route import Route, RouteKind
from evalward.report.markdown import RunReason

pytestmark = pytest.mark.unit

WORKSPACE = Path("/github/workspace")


def _context(event: str, default_branch: str = "") -> WorkflowContext:
    return WorkflowContext(
        event_name=event,
        repository="o/r",
        workspace=WORKSPACE,
        api_url="",
        server_url="https://github.com",
        run_id="1",
        default_branch=default_branch,
    )


def test_each_event_says_what_it_ran_and_why() -> None:
    due = Route(
        RouteKind.run,
        evals=frozenset({"b", "a"}),
        scope="every Eval with this schedule",
        cron="0 6 * * 1",
    )
    assert run_reason(_context("schedule"), due) == RunReason(
        "Scheduled run", "every Eval with this schedule", cron="0 6 * * 1", evals=("a", "b")
    )
    every = Route(RouteKind.run)
    assert run_reason(_context("push", "trunk"), every) == RunReason(
        "Run on push to trunk", "every Eval"
    )
    assert run_reason(_context("push"), every).title == "Run on push to main"
    assert run_reason(_context("workflow_dispatch"), Route(RouteKind.run, scope="x")) == (
        RunReason("Manual run", "x")
    )
    assert run_reason(_context("merge_group"), Route(RouteKind.run, why="asked")) == RunReason(
        "Run on merge_group", "asked"
    )


def test_a_file_in_the_workspace_is_named_from_it_for_the_steps_outside_the_container() -> None:
    context = _context("push")
    assert in_workspace(context, WORKSPACE / "out" / "results.json") == "out/results.json"
    assert in_workspace(context, Path("/tmp/results.json")) == "/tmp/results.json"
