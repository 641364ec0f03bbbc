"""The check run's name (`action/publish/checks.py`): only a gate into the default branch writes
under the gate's name, so neither a later run of a branch's own Evals nor a gate of the same
head into another branch can put a `success` of that name on the head commit GitHub counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.action.context import WorkflowContext
from evalward.action.publish.checks import check_name

pytestmark = pytest.mark.unit


def _context(comment_key: str = "evalward", default_branch: str = "main") -> WorkflowContext:
    return WorkflowContext(
        event_name="workflow_dispatch",
        repository="o/r",
        workspace=Path("/github/workspace"),
        api_url="",
        server_url="https://github.com",
        run_id="1",
        comment_key=comment_key,
        default_branch=default_branch,
    )


def test_a_gate_and_a_branch_run_never_share_a_check_name() -> None:
    assert check_name(_context(), into="main") == "evalward (evalward)"
    assert check_name(_context(), into=None) == "evalward run (evalward)"


def test_a_gate_into_another_branch_names_it() -> None:
    assert check_name(_context(), into="stage") == "evalward (evalward) into stage"
    assert check_name(_context(), into="refs/heads/main") == "evalward (evalward)"
    assert check_name(_context(), into="refs/heads/release/2.x") == (
        "evalward (evalward) into release/2.x"
    )
    assert check_name(_context(), into="we\nird") == 'evalward (evalward) into "we\\nird"'
    assert check_name(_context(default_branch="trunk"), into="trunk") == "evalward (evalward)"
    # an event that names no default branch (none GitHub sends): the gate's own name
    assert check_name(_context(default_branch=""), into="stage") == "evalward (evalward)"


def test_each_comment_key_has_its_own_checks() -> None:
    assert check_name(_context("nightly"), into="main") == "evalward (nightly)"
    assert check_name(_context("nightly"), into="main") != check_name(_context(), into="main")
