"""A command agent's kind (`runtime.agents.kinds.command`): its timeouts, one run's request
answered by one start of its program, and a conversation held by starting it once per turn
with the conversation so far, each turn's reply settled from what it printed."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from evalward.providers.base import RunLabels
from evalward.providers.registry import Providers
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.conversation import Conversation
from evalward.resources.models import FixtureInput
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.kinds.base import AgentKind, FixtureRun, KindSetup, RunPlace
from evalward.runtime.agents.kinds.command import CommandKind
from evalward.runtime.agents.process import Launch
from evalward.runtime.agents.resolved_agent import ResolvedAgent
from evalward.runtime.tools.tools import FixtureTools

pytestmark = pytest.mark.integration

ECHO = """\
import json, os, sys
request = json.load(sys.stdin)
said = [m["content"] for m in request["messages"]]
conversation = request.get("conversation") or {}
print(json.dumps({"pid": os.getpid(), "said": said, **conversation}))
"""
TWO_TURNS = Conversation.model_validate({"turns": [{"user": "hello"}, {"user": "bye"}]})


def setup(tmp_path: Path, runtime: dict[str, Any], program: str) -> KindSetup:
    (tmp_path / "agent.py").write_text(program, encoding="utf-8")
    spec = AgentSpec.model_validate({"runtime": runtime})
    agent = ResolvedAgent("byo", spec, "", tmp_path)
    return KindSetup(agent, Providers(by_name={}), {"PATH": "/usr/bin:/bin"}, 0.5, None, None)


def place(
    made: KindSetup, prompt: str | None = None, conversation: Conversation | None = None
) -> RunPlace:
    run = FixtureRun(
        labels=RunLabels(agent="byo", fixture="fx", eval="ev"),
        fixture_input=None
        if prompt is None
        else FixtureInput(type="prompt", payload={"prompt": prompt}),
        tools=FixtureTools(),
        timeout_seconds=30,
        conversation=conversation,
    )
    return RunPlace(run, Trace(), None, Launch(root=made.agent.root, env=made.env, kill_grace=0.5))


def ran(kind: AgentKind, where: RunPlace) -> str:
    async def go() -> str:
        try:
            return await kind.run(where)
        finally:
            await kind.aclose()

    return asyncio.run(go())


def test_its_own_timeout_bounds_its_work_and_its_processes_get_a_grace_beyond(
    tmp_path: Path,
) -> None:
    bounded = CommandKind(setup(tmp_path, {"command": {"run": ["x"], "timeoutSeconds": 7}}, ""))
    unbounded = CommandKind(setup(tmp_path, {"command": ["x"]}, ""))

    assert CommandKind.starts_programs(bounded.setup.agent.spec) == "runtime.command"
    assert (bounded.own_timeout(30), bounded.outer_timeout(30)) == (7, 7 + 0.5 + 5)
    assert (unbounded.own_timeout(30), unbounded.outer_timeout(30)) == (30, 30 + 0.5 + 5)


def test_a_run_is_one_start_of_the_program_with_the_fixtures_request(tmp_path: Path) -> None:
    kind = CommandKind(setup(tmp_path, {"command": [sys.executable, "agent.py"]}, ECHO))
    where = place(kind.setup, prompt="Where is order 7?")

    printed = json.loads(ran(kind, where))

    assert printed["said"] == ["Where is order 7?"]
    assert [s.type for s in where.trace.steps] == [StepType.input]  # the answer is the runner's


def test_a_conversation_starts_the_program_once_per_turn_with_all_said_so_far(
    tmp_path: Path,
) -> None:
    kind = CommandKind(setup(tmp_path, {"command": [sys.executable, "agent.py"]}, ECHO))
    where = place(kind.setup, conversation=TWO_TURNS)

    assert ran(kind, where) == ""

    replies = [s.content for s in where.trace.steps if s.type is StepType.final]
    finals = [json.loads(reply) for reply in replies]
    assert [f["said"] for f in finals] == [["hello"], ["hello", replies[0], "bye"]]
    assert [f["turn"] for f in finals] == [1, 2]
    assert finals[0]["id"] == finals[1]["id"]  # one conversation
    assert finals[0]["pid"] != finals[1]["pid"]  # two starts
