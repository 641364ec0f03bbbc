"""Hold a fixture's conversation with an agent: one user turn at a time, one trace.

Each turn the user speaks (the script's next turn, or the simulated user), the agent answers
(every agent kind through its `TurnAnswer`), and the steps of that turn carry its number.
The conversation ends when the script is done or the simulated user says so (`user done`),
at the turn limit, when the agent calls a handoff tool, on an error, or at the run's
timeout; the reason is the trace's `end_reason` (`Trace.end`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from evalward.errors import UserUnavailable
from evalward.providers.base import ChatMessage
from evalward.resources.conversation import Conversation, EndReason
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.simulated_user import UserSimulator

MAX_REPLY_CHARS = 64 * 1024
"""The longest reply to one turn that is passed on (to the user, to the next turn's
history): an agent that answers with megabytes ends its conversation with an error."""

MAX_CONVERSATION_CHARS = 32 * 1024 * 1024
"""The most text a whole conversation's trace may hold (one run's bound, MAX_TRACE_BYTES):
an agent restarted per turn could otherwise write that much on every turn."""

TurnAnswer = Callable[[list[ChatMessage], int], Awaitable[str]]
"""Runs the agent on the conversation so far (its last message the user's new turn) into
the trace, and returns its reply's text."""


async def hold_conversation(
    conversation: Conversation,
    trace: Trace,
    answer: TurnAnswer,
    simulator: UserSimulator | None,
) -> None:
    """Turn after turn until the conversation ends; its end reason is set on `trace`, except
    at a timeout, which the caller sees (`end_cut_short`)."""
    history: list[ChatMessage] = []
    if conversation.system is not None:
        history.append(ChatMessage(role="system", content=conversation.system))
    for turn in range(1, conversation.turn_limit + 1):
        trace.begin_turn(turn)
        if conversation.turns is not None:
            text = conversation.turns[turn - 1].user
        else:
            assert simulator is not None, "a conversation without turns has a simulated user"
            try:
                said = await simulator.next(trace)
            except UserUnavailable as exc:
                trace.add(StepType.error, content=str(exc))
                trace.provider_unavailable = exc.outage
                trace.budget_refused = trace.budget_refused or exc.refused
                trace.end(EndReason.error)
                return
            if said.done:
                if turn == 1:
                    trace.add(
                        StepType.error,
                        content="the simulated user ended the conversation before it began",
                    )
                trace.end(EndReason.error if turn == 1 else EndReason.user_done)
                return
            text = said.text
        trace.add(StepType.input, content=text)
        history.append(ChatMessage(role="user", content=text))
        begun = time.monotonic()
        try:
            reply = await answer(list(history), turn)
        finally:
            trace.turn_durations_ms.append((time.monotonic() - begun) * 1000)
        if trace.timed_out or trace.error is not None:
            end_cut_short(trace)
            return
        if any(s.tool in conversation.handoff_tools for s in trace.tool_calls() if s.turn == turn):
            trace.end(EndReason.handoff)  # the agent called a handoff tool on this turn
            return
        problem = _too_much(trace, turn, reply)
        if problem:
            trace.add(StepType.error, content=problem)
            trace.end(EndReason.error)
            return
        history.append(ChatMessage(role="assistant", content=reply))
        if simulator is not None:
            simulator.hear(reply)
    trace.end(EndReason.user_done if conversation.scripted else EndReason.turn_limit)


def _too_much(trace: Trace, turn: int, reply: str) -> str:
    if len(reply) > MAX_REPLY_CHARS:
        return (
            f"the agent's reply to turn {turn} holds {len(reply):,} characters, "
            f"more than the {MAX_REPLY_CHARS:,} a turn's reply may hold"
        )
    held = sum(len(step.content) + len(step.output or "") for step in trace.steps)
    if held > MAX_CONVERSATION_CHARS:
        return (
            f"after turn {turn} the conversation's trace holds {held:,} characters, more "
            f"than the {MAX_CONVERSATION_CHARS:,} a run may hold"
        )
    return ""


def end_cut_short(trace: Trace) -> None:
    """End a conversation a timeout (or an error) cut short; one that had already ended
    keeps its reason (`Trace.end`)."""
    trace.end(EndReason.timeout if trace.timed_out else EndReason.error)


def transcript(history: list[ChatMessage]) -> str:
    """The conversation so far as one text, for a program that reads one prompt (`{input}`,
    `stdin: text`): the new message alone on the first turn, else every message by role."""
    if len(history) == 1:
        return history[0].content
    names = {"system": "System", "user": "User", "assistant": "Assistant"}
    return "\n\n".join(f"{names.get(m.role, m.role)}: {m.content}" for m in history)
