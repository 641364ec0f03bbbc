"""A REPL agent kept running for a whole conversation (`runtime.agents.command_repl`), as a
real Python program reading stdin: a banner before the first prompt is no reply, each turn is
one line and its reply the text before the next prompt (or its `final` event), a JSON turn
carries the request, and a program that ends or stops reading is the turn's error."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from evalward.resources.agents.agent_runtime import CommandRuntime
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.command_repl import ReplSession
from evalward.runtime.agents.process import Launch

pytestmark = pytest.mark.integration

REPL = """\
import json, sys
print("Welcome to the shop bot (v1)")
sys.stderr.write("booting\\n")
while True:
    sys.stdout.write("> "); sys.stdout.flush()
    line = sys.stdin.readline()
    if not line or line.strip() == "quit":
        break
    said = line.strip()
    if said.startswith("{"):
        request = json.loads(said)
        print("turn", request["conversation"]["turn"], "of", request["agent"])
    elif said == "event":
        print(json.dumps({"type": "final", "content": "from the event"}))
    else:
        print("you said:", said)
"""
SILENT = "import sys; sys.stdout.write('no prompt here\\n')\n"


def session_with(
    tmp_path: Path, program: str, stdin: str = "text"
) -> Callable[[Callable[[ReplSession], Awaitable[Any]]], tuple[Any, Trace]]:
    (tmp_path / "repl.py").write_text(program, encoding="utf-8")
    runtime = CommandRuntime.model_validate(
        {"run": [sys.executable, "repl.py"], "stdin": stdin, "repl": {"prompt": "> "}}
    )
    trace = Trace()
    launch = Launch(root=tmp_path, env={"PATH": "/usr/bin:/bin"}, kill_grace=0.5)

    def run(talk: Callable[[ReplSession], Awaitable[Any]]) -> tuple[Any, Trace]:
        async def go() -> Any:
            session = ReplSession(runtime, launch, trace)
            try:
                return await talk(session)
            finally:
                await session.close()

        return asyncio.run(go()), trace

    return run


def test_each_line_is_a_turn_and_the_text_before_the_next_prompt_its_reply(
    tmp_path: Path,
) -> None:
    async def talk(session: ReplSession) -> list[str]:
        assert await session.start(30) == ""
        return [
            await session.turn("where is\nmy order", {}, 30),
            await session.turn("event", {}, 30),
        ]

    replies, trace = session_with(tmp_path, REPL)(talk)

    assert replies == ["you said: where is my order", "from the event"]  # one line per turn
    assert "Welcome" not in replies[0]  # the banner came before the first prompt
    assert [s.type for s in trace.steps] == [StepType.final]
    assert "booting" in trace.stderr  # kept once the session closed


def test_a_json_turn_is_the_request_on_one_line(tmp_path: Path) -> None:
    async def talk(session: ReplSession) -> str:
        assert await session.start(30) == ""
        request = {"agent": "shop-bot", "conversation": {"id": "c", "turn": 2}}
        return await session.turn("ignored", request, 30)

    reply, _ = session_with(tmp_path, REPL, stdin="json")(talk)

    assert reply == "turn 2 of shop-bot"


def test_a_program_that_never_shows_its_prompt_cannot_start(tmp_path: Path) -> None:
    async def talk(session: ReplSession) -> str:
        return await session.start(30)

    problem, _ = session_with(tmp_path, SILENT)(talk)

    assert problem == "the agent showed no prompt '> ' (`repl.prompt`): it ended (exit status 0)"


def test_a_program_that_ends_mid_conversation_is_the_turns_error(tmp_path: Path) -> None:
    async def talk(session: ReplSession) -> str:
        assert await session.start(30) == ""
        return await session.turn("quit", {}, 30)

    reply, trace = session_with(tmp_path, REPL)(talk)

    assert reply == ""
    assert trace.error == "the agent ended (exit status 0)"
    assert not trace.timed_out


PIECES = """\
import json, sys, time
event = json.dumps({"type": "tool_call", "tool": "lookup", "id": "c1", "arguments": {}})
while True:
    sys.stdout.write("> "); sys.stdout.flush()
    if not sys.stdin.readline():
        break
    for n in range(3000):  # 60 KB: more than one read of the pipe
        sys.stdout.write(f"line {n:05}\\n")
    for half in (event[:20], event[20:] + "\\nlast line\\n"):  # an event cut between reads
        sys.stdout.write(half); sys.stdout.flush(); time.sleep(0.05)
"""


def test_a_reply_read_in_pieces_keeps_its_text_in_order_and_each_event_once(
    tmp_path: Path,
) -> None:
    """The lines of a reply are read as they complete, each once: text lines kept in order
    across reads, a line cut between two reads taken whole, the event applied once in
    each turn however many reads follow it."""

    async def talk(session: ReplSession) -> list[str]:
        assert await session.start(30) == ""
        return [await session.turn("go", {}, 30), await session.turn("again", {}, 30)]

    replies, trace = session_with(tmp_path, PIECES)(talk)

    text = "\n".join(f"line {n:05}" for n in range(3000)) + "\nlast line"
    assert replies == [text, text]
    assert [s.type for s in trace.steps] == [StepType.tool_call] * 2
