"""What every agent kind's conversation shares (`runtime.agents.conversation_agents`): a
bring-your-own agent's request for each turn, how a turn's reply is settled (its `final`
event, the model's last reply the proxy saw, its plain output, or an error when it gave
none), and a simulated user without a model ending the conversation before its first turn."""

from __future__ import annotations

import asyncio
import time

import pytest

from evalward.providers.base import ChatMessage, RunLabels
from evalward.providers.registry import Providers
from evalward.resources.conversation import Conversation, EndReason, SimulatedUser, one_turn
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.conversation_agents import (
    ConversationRun,
    ProgramTurns,
    converse,
    settle_turn,
    turn_final,
)
from evalward.runtime.agents.simulated_user import UserSimulator
from evalward.runtime.proxy.observed import TrafficObserver
from evalward.runtime.proxy.wire.base import Turn

pytestmark = pytest.mark.unit


def test_each_turns_request_carries_the_history_and_the_conversation() -> None:
    turns = ProgramTurns({"agent": "bot", "messages": []}, Trace(), None, time.monotonic() + 60)
    history = [
        ChatMessage("user", "hi"),
        ChatMessage("assistant", "hello"),
        ChatMessage("user", "bye"),
    ]

    request = turns.turn_request(history, 2, "conv-1")

    assert request == {
        "agent": "bot",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "bye"},
        ],
        "conversation": {"id": "conv-1", "turn": 2},
    }
    assert 0 < turns.left() <= 60
    assert turns.observer is None
    past = ProgramTurns({}, Trace(), None, time.monotonic() - 5)
    assert past.left() == 0.001  # never zero: a bound of nothing would not wait at all


def test_a_turns_final_event_is_its_reply() -> None:
    trace = Trace()
    trace.begin_turn(1)
    trace.add(StepType.final, content="first answer")
    trace.begin_turn(2)
    trace.add(StepType.final, content="second answer")

    assert settle_turn(trace, 1, "printed text", None) == "first answer"
    assert turn_final(trace, 2) == "second answer"
    assert turn_final(trace, 3) == ""


def test_plain_output_is_the_reply_when_there_is_no_final_event() -> None:
    trace = Trace()
    trace.begin_turn(1)

    assert settle_turn(trace, 1, "  It ships today.\n", None) == "It ships today."
    assert trace.final_output == "It ships today."


def test_the_models_last_reply_in_the_output_is_made_the_final_step() -> None:
    trace = Trace()
    trace.begin_turn(1)
    observer = TrafficObserver(trace)
    observer.reply(Turn("Your refund is on its way."), "openai/gpt-4.1-mini")

    reply = settle_turn(trace, 1, "LOG: done\nYour refund is on its way.\n", observer)

    assert reply == "Your refund is on its way."
    assert [s.type for s in trace.steps] == [StepType.final]  # the same step, not a second one


def test_a_turn_with_no_reply_is_an_error_and_after_an_error_nothing_is_settled() -> None:
    trace = Trace()
    trace.begin_turn(3)

    assert settle_turn(trace, 3, "   ", None) == ""
    assert trace.error is not None and "gave no reply to turn 3" in trace.error
    assert settle_turn(trace, 3, "late text", None) == ""


def talk(conversation: Conversation, user_model: str | None) -> ConversationRun:
    return ConversationRun(conversation, user_model, RunLabels(agent="bot"), {}, 30)


def test_a_simulated_user_without_a_model_ends_the_conversation_before_it_starts() -> None:
    user = SimulatedUser(persona="p", goal="g", satisfied_when="s")
    trace = Trace()
    held: list[UserSimulator | None] = []

    async def hold(simulator: UserSimulator | None) -> None:
        held.append(simulator)

    asyncio.run(converse(talk(Conversation(user=user), None), Providers(by_name={}), trace, hold))

    assert held == []
    assert trace.error is not None and "no model plays the simulated user" in trace.error
    assert trace.end_reason == EndReason.error.value


def test_a_scripted_conversation_is_held_without_a_simulated_user() -> None:
    held: list[UserSimulator | None] = []

    async def hold(simulator: UserSimulator | None) -> None:
        held.append(simulator)

    asyncio.run(converse(talk(one_turn("hi"), None), Providers(by_name={}), Trace(), hold))

    assert held == [None]
