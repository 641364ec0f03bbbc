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

from action.test_output_injection import FAREWELL_FIXTURE, assert_commands_are_evalwards_own
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import make_pr, provider_env

pytestmark = pytest.mark.hostile

TYPE = "x ##[stop-commands]pwned"


def test_an_unknown_type_quoted_in_the_last_line_starts_no_runner_command(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, _ = make_pr(repo, github)
    fixture = FAREWELL_FIXTURE.replace(
        '    - { type: equals, value: "Goodbye." }\n',
        f'    - {{ type: "{TYPE}", value: "Goodbye." }}\n',
    )
    head = repo.commit("a fixture", {"evals/fixtures/farewell.yaml": fixture})
    github.pulls[7].head_sha = head
    model.script(lambda b: True, text("Goodbye."))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
    )

    assert run.returncode == 2, run.stderr
    assert "unknown assertion type" in run.stdout, "the problem is the log's last line"
    assert_commands_are_evalwards_own(run)
