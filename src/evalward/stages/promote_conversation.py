"""A multi-turn transcript promoted to a scripted conversation (`evalward promote
--conversation`): each user message of the trace becomes a turn, in order, and each turn
asserts the tools the agent called while answering it, so a rerun checks the conversation
turn by turn instead of replaying its history as one input."""

from __future__ import annotations

from typing import Any

from evalward.errors import ConfigError
from evalward.rundata.trace import Step, StepType, Trace


def scripted_turns(trace: Trace, trace_id: str) -> list[dict[str, Any]]:
    """The trace's user messages as scripted turns, each with `toolCalled` per tool the agent
    called on that turn (in the order of first use)."""
    turns: list[list[Step]] = []
    for step in trace.steps:
        if step.type is StepType.input:
            turns.append([step])
        elif turns:
            turns[-1].append(step)
    if len(turns) < 2:
        raise ConfigError(
            f"trace {trace_id}: {len(turns)} user message(s), and a conversation needs two or "
            "more; promote it without --conversation"
        )
    scripted: list[dict[str, Any]] = []
    for steps in turns:
        turn: dict[str, Any] = {"user": steps[0].content}
        tools = dict.fromkeys(s.tool for s in steps if s.type is StepType.tool_call and s.tool)
        if tools:
            turn["assertions"] = [{"type": "toolCalled", "tool": tool} for tool in tools]
        scripted.append(turn)
    return scripted
