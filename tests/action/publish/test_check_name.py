"""The check run's name (`action/publish/checks.py`): only a pull request's gate writes under the
gate's name, so a later run of a branch's own Evals can never put a `success` of that name on
the head commit GitHub counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.action.context import WorkflowContext
from evalward.action.publish.checks import check_name

pytestmark = pytest.mark.unit


def _context(comment_key: str = "evalward") -> WorkflowContext:
    return WorkflowContext(
        event_name="workflow_dispatch",
        repository="o/r",
        workspace=Path("/github/workspace"),
        api_url="",
        server_url="https://github.com",
        run_id="1",
        comment_key=comment_key,
    )


def test_a_gate_and_a_branch_run_never_share_a_check_name() -> None:
    assert check_name(_context(), gating=True) == "evalward (evalward)"
    assert check_name(_context(), gating=False) == "evalward run (evalward)"


def test_each_comment_key_has_its_own_checks() -> None:
    assert check_name(_context("nightly"), gating=True) == "evalward (nightly)"
    assert check_name(_context("nightly"), gating=True) != check_name(_context(), gating=True)
