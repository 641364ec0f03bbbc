"""What a head agent writes on stderr before it fails reaches the job log with its control
characters shown by name, not raw.

A bring-your-own agent that exits non-zero is an `error` run, and the failing fixture's
`::error file=…::` annotation quotes the end of its stderr: an ESC sequence there is printed
as it is, so the agent recolours or rewrites what the log viewer shows under evalward's own
annotation (the check run's copy and the comment show it by name). Model replies are kept
from doing this (test_output_injection); the agent's own stderr is not.
"""

from __future__ import annotations

import pytest

from fakes.github_api import FakeGitHub
from support.byoagent import gate_program_change
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

CLEAN = """\
import sys

sys.stdin.readline()
print('{"type": "final", "content": "answer"}')
"""
FAILING = """\
import sys

sys.stdin.readline()
sys.stderr.write("boom\\x01 \\x1b[2K\\x1b[32mall fixtures passed\\x1b[0m\\n")
sys.exit(3)
"""


def test_an_agents_stderr_brings_no_control_character_into_the_log(
    repo: GitRepo, github: FakeGitHub
) -> None:
    run = gate_program_change(repo, github, "shouty", CLEAN, FAILING)

    assert run.returncode == 1, run.stdout + run.stderr
    assert "all fixtures passed" in run.stdout, "the agent's stderr is quoted in the log"
    for stream, log in (("stdout", run.stdout), ("stderr", run.stderr)):
        for control in ("\x1b", "\x01"):
            assert control not in log, f"{control!r} from the agent's stderr reaches {stream}"
