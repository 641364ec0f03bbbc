"""A declarative agent's kind (`runtime.agents.kinds.declarative`): what it starts from the
checkout (a command tool, an MCP server, or nothing), a run on the fixture's input, a
conversation held as one history the model sees whole, and an MCP server that cannot start
ending the run as an error before any model call."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from evalward.providers.registry import build_providers
from evalward.resources.agents.agent import AgentSpec
from evalward.rundata.trace import StepType
from evalward.runtime.agents.kinds.base import KindSetup
from evalward.runtime.agents.kinds.declarative import DeclarativeKind
from evalward.runtime.agents.resolved_agent import ResolvedAgent
from runtime.agents.kinds.test_command import TWO_TURNS, place, ran

pytestmark = pytest.mark.integration

SCRIPT = """\
replies:
  - match: { agent: byo }
    turns:
      - content: "Hello to you."
      - content: "Goodbye, and you said hello first."
"""
MODELS = {"models": ["openai/gpt-4.1-mini"]}


def setup(tmp_path: Path, **spec: Any) -> KindSetup:
    (tmp_path / "mock.yaml").write_text(SCRIPT, encoding="utf-8")
    providers = build_providers({}, mock_script=str(tmp_path / "mock.yaml"))
    agent = ResolvedAgent("byo", AgentSpec.model_validate({**MODELS, **spec}), "Be kind.", tmp_path)
    return KindSetup(agent, providers, {"PATH": "/usr/bin:/bin"}, 0.5, None, None)


@pytest.mark.parametrize(
    ("spec", "starts"),
    [
        ({}, ""),
        (
            {"tools": [{"name": "grep", "description": "d", "command": ["grep", "x"]}]},
            "the command tool 'grep'",
        ),
        ({"mcpServers": {"desk": {"command": {"run": ["desk"]}}}}, "the MCP server 'desk'"),
    ],
)
def test_what_it_starts_from_the_checkout_is_named(spec: dict[str, Any], starts: str) -> None:
    assert DeclarativeKind.starts_programs(AgentSpec.model_validate({**MODELS, **spec})) == starts


def test_a_run_answers_the_fixtures_input_within_the_fixtures_timeout(tmp_path: Path) -> None:
    kind = DeclarativeKind(setup(tmp_path))
    assert kind.outer_timeout(30) == kind.own_timeout(30) == 30
    where = place(kind.setup, prompt="hello")

    assert ran(kind, where) == ""

    assert [s.type for s in where.trace.steps] == [StepType.input, StepType.final]
    assert where.trace.final_output == "Hello to you."


def test_a_conversation_is_one_history_extended_turn_by_turn(tmp_path: Path) -> None:
    kind = DeclarativeKind(setup(tmp_path))
    where = place(kind.setup, conversation=TWO_TURNS)

    ran(kind, where)

    finals = [(s.turn, s.content) for s in where.trace.steps if s.type is StepType.final]
    # the mock answers by how many replies the history holds: the second saw the first
    assert finals == [(1, "Hello to you."), (2, "Goodbye, and you said hello first.")]
    assert where.trace.model_calls == 2


def test_an_mcp_server_that_cannot_start_is_the_runs_error(tmp_path: Path) -> None:
    (tmp_path / "down.py").write_text("import sys; sys.exit(3)\n", encoding="utf-8")
    servers = {"desk": {"command": {"run": [sys.executable, "down.py"]}}}
    kind = DeclarativeKind(setup(tmp_path, mcpServers=servers))
    where = place(kind.setup, prompt="hello")

    ran(kind, where)

    assert where.trace.error is not None and "'desk'" in where.trace.error
    assert where.trace.model_calls == 0
