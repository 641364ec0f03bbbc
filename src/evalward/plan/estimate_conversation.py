"""What a conversation adds to a run's estimate: the agent answers every turn, and a
simulated user speaks before each."""

from __future__ import annotations

from evalward.providers.base import ChatMessage
from evalward.resources.conversation import Conversation, simulator_model
from evalward.resources.models import EvalFixtureSpec, EvalSpec
from evalward.runtime.agents.inputs import input_messages
from evalward.runtime.agents.simulated_user import MAX_USER_TOKENS, instructions

USER_REPLY_TOKENS = 60
"""What a simulated user says on a turn, on average: a sentence or two."""


def opening_messages(fixture: EvalFixtureSpec) -> list[ChatMessage]:
    """What the agent is first given: the fixture's input, or its conversation's first turn
    (a simulated user's opening, or a sentence it writes)."""
    if fixture.input is not None:
        return input_messages(fixture.input)
    conversation = fixture.conversation
    if conversation is not None and conversation.turns:
        return [ChatMessage(role="user", content=conversation.turns[0].user)]
    opening = conversation.user.opening if conversation and conversation.user else None
    return [ChatMessage(role="user", content=opening or "x" * USER_REPLY_TOKENS * 4)]


def agent_turns(fixture: EvalFixtureSpec) -> int:
    """How many times the agent runs: every turn the conversation can reach."""
    return fixture.conversation.turn_limit if fixture.conversation is not None else 1


def user_calls(
    conversation: Conversation | None, spec: EvalSpec, seen_chars: int
) -> list[tuple[str, int, int]]:
    """The simulated user's calls at most: (model, prompt tokens, reply tokens) per turn."""
    model = simulator_model(conversation, spec.simulated_user.model, spec.judge.model)
    if model is None or conversation is None or conversation.user is None:
        return []
    prompt = len(instructions(conversation.user)) // 4
    per_turn = seen_chars // 4 // max(conversation.max_turns, 1)
    reply = min(USER_REPLY_TOKENS, MAX_USER_TOKENS)
    return [(model, prompt + per_turn * turn, reply) for turn in range(conversation.max_turns)]
