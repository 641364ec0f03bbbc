"""A problem that quotes a pull request's YAML reaches the job log as text, never as one of
the runner's commands.

A fixture whose assertion `type` is unknown does not load: the gate stops (exit 2), and the
log's last line says why (`evalward: incomplete — stopped by an error …`), quoting the type as
the pull request wrote it. The runner still obeys its older command form, `##[name]data`,
anywhere in a line that does not start with `::`: that line is printed as it is, so
`##[stop-commands]` there silences evalward's own `::error::` lines after it (the
problems it reports), `##[add-mask]` hides what it logs, `##[warning]` forges an annotation.
evalward's own `::error::` copy of the same problem on stderr is safe (a line that starts with
`::` is read as one command).
"""

from __future__ import annotations

import pytest

from action.test_output_injection import (
    assert_commands_are_evalwards_own,
    gate_farewell,
)
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

TYPE = "x ##[stop-commands]pwned"


def test_an_unknown_type_quoted_in_the_last_line_starts_no_runner_command(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    equals = '    - { type: equals, value: "Goodbye." }\n'
    run = gate_farewell(
        repo, github, model, (equals, f'    - {{ type: "{TYPE}", value: "Goodbye." }}\n')
    )

    assert run.returncode == 2, run.stderr
    assert "unknown assertion type" in run.stdout, "the problem is the log's last line"
    assert_commands_are_evalwards_own(run)
