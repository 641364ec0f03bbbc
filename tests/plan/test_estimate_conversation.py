"""What a conversation adds to a run's estimate (`plan/estimate_conversation.py`): the agent
runs once per turn it can reach, and a simulated user's calls, on the model that plays it,
grow with what it has seen."""

from __future__ import annotations

import pytest

from evalward.plan.estimate_conversation import (
    USER_REPLY_TOKENS,
    agent_turns,
    opening_messages,
    user_calls,
)
from evalward.resources.models import EvalFixtureSpec, EvalSpec

pytestmark = pytest.mark.unit

USER = {"persona": "A hurried customer", "goal": "Get a refund"}


def _fixture(**spec: object) -> EvalFixtureSpec:
    return EvalFixtureSpec.model_validate(
        {"targetAgent": "bot", "assertions": [{"type": "contains", "value": "ok"}], **spec}
    )


def _eval(**spec: object) -> EvalSpec:
    return EvalSpec.model_validate({"targetAgent": "bot", "fixtures": ["f"], **spec})


def test_the_agent_is_first_given_the_input_or_the_conversation_s_opening() -> None:
    prompt = _fixture(input={"type": "prompt", "payload": {"prompt": "Refund order 7"}})
    assert [m.content for m in opening_messages(prompt)] == ["Refund order 7"]
    scripted = _fixture(conversation={"turns": [{"user": "hi"}, {"user": "refund"}]})
    assert [m.content for m in opening_messages(scripted)] == ["hi"]
    opened = _fixture(conversation={"user": {**USER, "opening": "Refund now!"}, "maxTurns": 3})
    assert [m.content for m in opening_messages(opened)] == ["Refund now!"]
    simulated = _fixture(conversation={"user": USER, "maxTurns": 3})
    (guess,) = opening_messages(simulated)
    assert len(guess.content) == USER_REPLY_TOKENS * 4  # a sentence the user will write


def test_the_agent_runs_once_per_turn_the_conversation_can_reach() -> None:
    assert agent_turns(_fixture(input={"type": "prompt", "payload": {"prompt": "x"}})) == 1
    assert agent_turns(_fixture(conversation={"turns": [{"user": "a"}, {"user": "b"}]})) == 2
    assert agent_turns(_fixture(conversation={"user": USER, "maxTurns": 3})) == 3


def test_a_simulated_user_s_calls_grow_with_the_conversation_on_the_model_that_plays_it() -> None:
    conversation = _fixture(conversation={"user": USER, "maxTurns": 3}).conversation
    calls = user_calls(conversation, _eval(judge={"model": "openai/judge"}), seen_chars=1200)
    assert [model for model, _, _ in calls] == ["openai/judge"] * 3
    prompts = [prompt for _, prompt, _ in calls]
    assert prompts == sorted(prompts) and prompts[0] < prompts[-1]
    assert {reply for _, _, reply in calls} == {USER_REPLY_TOKENS}
    own = user_calls(conversation, _eval(simulatedUser={"model": "openai/sim"}), 0)
    assert {model for model, _, _ in own} == {"openai/sim"}


def test_no_simulated_user_or_no_model_for_it_makes_no_calls() -> None:
    scripted = _fixture(conversation={"turns": [{"user": "a"}, {"user": "b"}]}).conversation
    assert user_calls(scripted, _eval(judge={"model": "openai/judge"}), 100) == []
    simulated = _fixture(conversation={"user": USER, "maxTurns": 3}).conversation
    assert user_calls(simulated, _eval(), 100) == []
    assert user_calls(None, _eval(), 100) == []
