"""A REPL agent's kind (`runtime.agents.kinds.repl`): one process holds the whole
conversation, a fixture's `input` is a conversation of one turn to it, and a program that
never shows its prompt ends the conversation as an error before its first turn."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evalward.resources.conversation import EndReason
from evalward.rundata.trace import StepType
from evalward.runtime.agents.kinds.repl import ReplKind
from runtime.agents.kinds.test_command import TWO_TURNS, place, ran, setup

pytestmark = pytest.mark.integration

REPL = """\
import os, sys
while True:
    sys.stdout.write("> "); sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        break
    print(os.getpid(), line.strip())
"""
RUNTIME = {
    "command": {"run": [sys.executable, "agent.py"], "stdin": "text", "repl": {"prompt": "> "}}
}


def test_one_process_answers_every_turn_of_the_conversation(tmp_path: Path) -> None:
    kind = ReplKind(setup(tmp_path, RUNTIME, REPL))
    where = place(kind.setup, conversation=TWO_TURNS)

    assert ran(kind, where) == ""

    replies = [s.content.split() for s in where.trace.steps if s.type is StepType.final]
    assert [said for _, said in replies] == ["hello", "bye"]
    assert len({pid for pid, _ in replies}) == 1
    assert where.trace.error is None


def test_a_fixtures_input_is_a_conversation_of_one_turn(tmp_path: Path) -> None:
    kind = ReplKind(setup(tmp_path, RUNTIME, REPL))
    assert kind.whole_conversation
    where = place(kind.setup, prompt="status?")

    ran(kind, where)

    assert [(s.type, s.turn) for s in where.trace.steps] == [
        (StepType.input, 1),
        (StepType.final, 1),
    ]
    assert where.trace.final_output.endswith(" status?")


def test_a_program_without_its_prompt_ends_the_conversation_before_it_starts(
    tmp_path: Path,
) -> None:
    kind = ReplKind(setup(tmp_path, RUNTIME, "print('ready')\n"))
    where = place(kind.setup, conversation=TWO_TURNS)

    ran(kind, where)

    assert where.trace.error is not None and "showed no prompt '> '" in where.trace.error
    assert where.trace.end_reason == EndReason.error.value
    assert not any(s.type is StepType.input for s in where.trace.steps)


BOM_FINAL = """\
import json, sys
while True:
    sys.stdout.write("> "); sys.stdout.flush()
    if not sys.stdin.readline():
        break
    final = json.dumps({"type": "final", "content": "done"})
    sys.stdout.buffer.write(b"\\xef\\xbb\\xbf" + final.encode() + b"\\n")
    sys.stdout.flush()
"""


def test_an_event_after_a_byte_order_mark_is_an_event_as_a_command_agent_reads_it(
    tmp_path: Path,
) -> None:
    """A program whose output starts with a byte order mark (a runtime that writes UTF-8
    so): its `final` event is the reply, as a one-shot command agent takes the same line,
    not the event's JSON as the reply's text."""
    kind = ReplKind(setup(tmp_path, RUNTIME, BOM_FINAL))
    where = place(kind.setup, prompt="status?")

    ran(kind, where)

    assert where.trace.final_output == "done", where.trace.final_output
    assert where.trace.error is None
