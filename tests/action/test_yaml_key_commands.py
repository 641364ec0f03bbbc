"""A key a pull request writes in its YAML never becomes a workflow command of the runner's
own (it did: the field path was printed as written).

A fixture the pull request adds, with an unknown key holding a line break (a YAML escape,
`"k\\n::error file=README.md,line=1::forged"`), does not load; the gate fails (exit 2) as it
should, but the closing line on stdout (`evalward: incomplete — stopped by an error …`) prints
the problem with the key's field path as written: the text after the line break starts a line
of its own, which GitHub's runner obeys — a forged annotation on any file, `::add-mask::`
hiding what evalward logs, `::stop-commands::` silencing evalward's own commands. Agent output
is kept from doing this (test_output_injection); the pull request's own YAML is not.
"""

from __future__ import annotations

import pytest

from action.test_output_injection import FAREWELL_FIXTURE, runner_commands
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import make_pr, provider_env

pytestmark = pytest.mark.hostile

HOSTILE_KEY = (
    '  "k\\n::error file=README.md,line=1::forged annotation'
    '\\r::add-mask::evalward\\n::stop-commands::pwned": 1\n'
)


def test_a_line_break_in_a_yaml_key_starts_no_workflow_command(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, _ = make_pr(repo, github)
    fixture = FAREWELL_FIXTURE.replace(
        "  targetAgent: support-bot\n", "  targetAgent: support-bot\n" + HOSTILE_KEY
    )
    head = repo.commit("a fixture with a hostile key", {"evals/fixtures/farewell.yaml": fixture})
    github.pulls[7].head_sha = head
    model.script(lambda b: True, text("Goodbye."))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
    )

    assert run.returncode == 2, run.stderr
    assert "unknown field" in run.stderr, "the problem is reported"
    for stream, log in (("stdout", run.stdout), ("stderr", run.stderr)):
        for name, line in runner_commands(log):
            assert name in {"error", "warning", "notice", "group", "endgroup"}, (stream, line)
            assert not line.startswith("::error file=README.md"), f"{stream}: forged {line!r}"
