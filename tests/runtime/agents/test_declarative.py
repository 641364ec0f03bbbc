"""evalward's own tool loop (`runtime.agents.declarative`), called directly with a mock
script's replies: the system prompt opens the history, each tool call's result is a step and
a message the next call reads, a conversation's next turn continues the same history, and a
run whose every model is out of reach ends in an error step that marks it unavailable."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from evalward.providers.base import ChatMessage, RunLabels, ToolCall
from evalward.providers.config import provider_config
from evalward.providers.registry import Providers, build_providers
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.models import ToolReplay
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.declarative import (
    continue_declarative,
    opening_messages,
    run_declarative,
)
from evalward.runtime.agents.process import Launch
from evalward.runtime.agents.resolved_agent import ResolvedAgent
from evalward.runtime.tools.tools import FixtureTools, ToolExecutor

pytestmark = pytest.mark.integration

SCRIPT = """\
replies:
  - match: { agent: bot }
    turns:
      - content: "Let me look."
        toolCalls: [{ name: lookup_order, arguments: { order_id: "7" } }]
      - content: "Order 7 has shipped."
      - content: "You are welcome."
"""
LABELS = RunLabels(agent="bot", fixture="fx")


def bot(tmp_path: Path, **spec: Any) -> ResolvedAgent:
    tool = {"name": "lookup_order", "description": "Look up an order.", "mock": {"output": "x"}}
    settings = {"models": ["openai/gpt-4.1-mini"], "tools": [tool], **spec}
    return ResolvedAgent("bot", AgentSpec.model_validate(settings), "You are a bot.", tmp_path)


def mocked(tmp_path: Path) -> Providers:
    (tmp_path / "mock.yaml").write_text(SCRIPT, encoding="utf-8")
    return build_providers({}, mock_script=str(tmp_path / "mock.yaml"))


def executor(agent: ResolvedAgent, tmp_path: Path) -> ToolExecutor:
    own = {t.tool_name: t for t in agent.spec.tools if t.enabled}
    replay = FixtureTools([ToolReplay(tool="lookup_order", output="shipped")])
    return ToolExecutor(own, replay, Launch(root=tmp_path, env={}))


def test_a_run_calls_the_tool_feeds_its_result_back_and_ends_in_the_answer(
    tmp_path: Path,
) -> None:
    agent, trace = bot(tmp_path), Trace()
    asked = [ChatMessage("user", "Where is order 7?")]

    asyncio.run(
        run_declarative(agent, asked, mocked(tmp_path), LABELS, trace, executor(agent, tmp_path))
    )

    assert [s.type for s in trace.steps] == [
        StepType.input,
        StepType.assistant,
        StepType.tool_call,
        StepType.tool_result,
        StepType.final,
    ]
    call, result = trace.steps[2], trace.steps[3]
    assert (call.tool, call.arguments, call.model) == (
        "lookup_order",
        {"order_id": "7"},
        "openai/gpt-4.1-mini",
    )
    assert (result.call_id, result.output, result.is_error) == (call.call_id, "shipped", False)
    assert trace.final_output == "Order 7 has shipped."
    assert trace.model_calls == 2
    assert trace.steps[1].usage is not None and trace.steps[2].usage is None  # once per reply


def test_a_conversations_next_turn_continues_the_same_history(tmp_path: Path) -> None:
    agent, trace = bot(tmp_path), Trace()
    history = opening_messages(agent)
    assert history == [ChatMessage("system", "You are a bot.")]
    history += [
        ChatMessage("user", "Where is order 7?"),
        ChatMessage("assistant", "", (ToolCall("c1", "lookup_order", {"order_id": "7"}),)),
        ChatMessage("tool", "shipped", tool_call_id="c1"),
        ChatMessage("assistant", "Order 7 has shipped."),
        ChatMessage("user", "Thanks!"),
    ]

    asyncio.run(
        continue_declarative(
            agent, history, mocked(tmp_path), LABELS, trace, executor(agent, tmp_path)
        )
    )

    assert trace.final_output == "You are welcome."
    assert history[-1] == ChatMessage("assistant", "You are welcome.")


def test_an_agent_without_a_system_prompt_opens_with_nothing(tmp_path: Path) -> None:
    spec = AgentSpec.model_validate({"models": ["openai/gpt-4.1-mini"]})
    assert opening_messages(ResolvedAgent("bot", spec, "", tmp_path)) == []


def test_a_run_whose_every_model_is_out_of_reach_is_an_unavailable_error(tmp_path: Path) -> None:
    config = provider_config({"providers": {"openai": {"retry": {"attempts": 1}}}})
    providers = build_providers(
        {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-" + "k" * 30},
        config=config,
    )
    agent, trace = bot(tmp_path, models=["openai/gpt-4.1-mini", "openai/gpt-4.1"]), Trace()

    async def go() -> None:
        try:
            await run_declarative(
                agent,
                [ChatMessage("user", "hi")],
                providers,
                LABELS,
                trace,
                executor(agent, tmp_path),
            )
        finally:
            await providers.aclose()

    asyncio.run(go())

    assert [(f.from_model, f.to_model) for f in trace.fallbacks] == [
        ("openai/gpt-4.1-mini", "openai/gpt-4.1")
    ]
    assert trace.model_calls == 2
    assert trace.error is not None and trace.error.startswith("openai/gpt-4.1-mini: ")
    assert trace.provider_unavailable
