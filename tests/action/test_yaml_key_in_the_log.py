"""A key a pull request writes in its YAML, with its control characters or a line break, never
reaches the job log as it is.

A fixture the pull request adds, with an unknown key spelt with YAML escapes, does not load:
the gate fails (exit 2) as it should, and the problem names the key's field path. That path
was printed as the pull request wrote it: an ESC sequence and a SOH raw on stdout (the closing
`incomplete — stopped by an error` line) and inside evalward's own `::error::` line on stderr,
a right-to-left override raw on stdout, and after a line break, a workflow command of the
runner's own. It is shown as a file name is (`printable`: `\\x1b`, `\\n`), in the log and
the comment alike.
"""

from __future__ import annotations

import pytest

from action.test_output_injection import gate_farewell, runner_commands
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

HOSTILE_KEY = '  "k\\e[31mred\\x01\\u202e": 1\n'
COMMAND_KEY = (
    '  "k\\n::error file=README.md,line=1::forged annotation'
    '\\r::add-mask::evalward\\n::stop-commands::pwned": 1\n'
)


def _gate_with_key(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, key: str
) -> ActionRun:
    """A pull request that adds a fixture holding `key` (a line of YAML), gated: it does not
    load (exit 2), and the problem is reported."""
    target = "  targetAgent: support-bot\n"
    run = gate_farewell(repo, github, model, (target, target + key))
    assert run.returncode == 2, run.stderr
    assert "unknown field" in run.stderr, "the problem is reported"
    return run


def test_control_characters_in_a_yaml_key_do_not_reach_the_log(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    run = _gate_with_key(repo, github, model, HOSTILE_KEY)
    body = github.comments_on(7)[0]["body"]
    assert "\\x1b" in body and "\x1b" not in body, "the comment shows it by name"
    for stream, log in (("stdout", run.stdout), ("stderr", run.stderr)):
        for control in ("\x1b", "\x01", "\u202e"):
            assert control not in log, f"{control!r} from the pull request's YAML reaches {stream}"


def test_a_line_break_in_a_yaml_key_starts_no_workflow_command(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """A key holding a line break (`"k\\n::error file=README.md,line=1::forged"`): its field
    path, printed as written, put the text after the break on a line of its own, which
    GitHub's runner obeys (a forged annotation on any file, `::add-mask::` hiding what
    evalward logs, `::stop-commands::` silencing evalward's own commands)."""
    run = _gate_with_key(repo, github, model, COMMAND_KEY)
    for stream, log in (("stdout", run.stdout), ("stderr", run.stderr)):
        for name, line in runner_commands(log):
            assert name in {"error", "warning", "notice", "group", "endgroup"}, (stream, line)
            assert not line.startswith("::error file=README.md"), f"{stream}: forged {line!r}"
