"""A key a pull request writes in its YAML, with its control characters, never reaches the job
log as they are.

A fixture the pull request adds, with an unknown key spelt with YAML escapes (`"k\\e[31m\\x01"`),
does not load: the gate fails (exit 2) as it should, and the problem names the key's field
path. That path was printed as the pull request wrote it: an ESC sequence and a SOH raw on
stdout (the closing `incomplete — stopped by an error` line) and inside evalward's own
`::error::` line on stderr, and a right-to-left override raw on stdout. It is shown as a file
name is (`printable`: `\\x1b`), in the log and the comment alike.
"""

from __future__ import annotations

import pytest

from action.test_output_injection import FAREWELL_FIXTURE
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import make_pr, provider_env

pytestmark = pytest.mark.hostile

HOSTILE_KEY = '  "k\\e[31mred\\x01\\u202e": 1\n'


def test_control_characters_in_a_yaml_key_do_not_reach_the_log(
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
    body = github.comments_on(7)[0]["body"]
    assert "\\x1b" in body and "\x1b" not in body, "the comment shows it by name"
    for stream, log in (("stdout", run.stdout), ("stderr", run.stderr)):
        for control in ("\x1b", "\x01", "\u202e"):
            assert control not in log, f"{control!r} from the pull request's YAML reaches {stream}"
