"""Bytes an agent sends are its own data: a head agent whose events carry a lone surrogate
as raw bytes (`ED A0 80`, U+D800 spelt as UTF-8 would, which no UTF-8 writer may write) in
its final message and in a tool call's arguments, and one spelled as a JSON escape in a tool
result, gets both runs written with U+FFFD in their place (one for each bad byte), the
comment posted and the gate's own exit code: never the internal error's exit 4."""

from __future__ import annotations

import pytest

from fakes.github_api import FakeGitHub
from support.byoagent import gate_program_change
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

PROGRAM = """\
import os, sys

sys.stdin.readline()
out = sys.stdout.buffer
out.write(b'{"type": "tool_call", "tool": "lookup", "arguments": {"q": "%s"}}\\n')
out.write(b'{"type": "tool_result", "tool": "lookup", "output": "%s"}\\n')
out.write(b'{"type": "final", "content": "answer %s"}\\n')
out.flush()
"""
CLEAN = PROGRAM % ("plain", "plain", "plain")
BROKEN = PROGRAM % ("a\\xed\\xa0\\x80b", "\\\\ud800 escaped", "\\xed\\xa0\\x80 end")
"""The head: the raw bytes in the arguments and the final message, the escape in a result."""


def test_a_lone_surrogate_in_an_agents_bytes_is_replaced_not_an_internal_error(
    repo: GitRepo, github: FakeGitHub
) -> None:
    run = gate_program_change(repo, github, "bytes", CLEAN, BROKEN)

    assert run.returncode == 0, run.stdout + run.stderr  # both pass: the gate's own ending
    assert "Traceback" not in run.stdout + run.stderr
    assert run.outputs["result"] == "pass"
    fixtures = {f["side"]: f for f in run.results()["fixtures"]}
    assert set(fixtures) == {"base", "head"}
    assert fixtures["base"]["output"] == "answer plain"
    head_run = fixtures["head"]
    bad = "\ufffd" * 3  # three bytes that are not UTF-8, as every UTF-8 decoder reads them
    assert head_run["output"] == f"answer {bad} end"
    call, result = (s for s in head_run["trace"]["steps"] if s["tool"] == "lookup")
    assert call["arguments"] == {"q": f"a{bad}b"}
    assert result["output"] == "\ufffd escaped"
    (comment,) = github.comments_on(9)
    assert "bytes-eval" in comment["body"]
