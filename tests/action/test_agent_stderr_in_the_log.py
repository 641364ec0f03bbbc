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

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import pull_request_event, run_action
from support.byoagent import agent_python, one_agent_suite
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
    python, isolation = agent_python()
    suite = one_agent_suite(
        "shouty",
        "ask",
        command=f"[{python}, agent/shouty.py]",
        prompt="ask",
        assertion="{ type: contains, value: answer }",
    )
    base = repo.commit("the agent", {"agents.yaml": suite, "agent/shouty.py": CLEAN})
    repo.branch("feature")
    head = repo.commit("fail loudly", {"agent/shouty.py": FAILING})
    github.add_pull(FakePull(number=9, head_sha=head, base_sha=base))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 9, base, head),
        env={"OPENAI_API_KEY": "sk-unused-0123456789"},
        inputs={"cache": "off", "agent-isolation": isolation},
    )

    assert run.returncode == 1, run.stdout + run.stderr
    assert "all fixtures passed" in run.stdout, "the agent's stderr is quoted in the log"
    for stream, log in (("stdout", run.stdout), ("stderr", run.stderr)):
        for control in ("\x1b", "\x01"):
            assert control not in log, f"{control!r} from the agent's stderr reaches {stream}"
