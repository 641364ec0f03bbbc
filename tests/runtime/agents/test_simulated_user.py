"""The simulated user of a conversation (`runtime/agents/simulated_user.py`), answered by a
mock script's `purpose: user` entries: its opening word for word, its stop token ending the
conversation, the token struck out of what the agent says, and a reply it cannot use an error
that never lets the fixture pass."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from evalward.errors import UserUnavailable
from evalward.providers.base import RunLabels
from evalward.providers.registry import build_providers
from evalward.resources.conversation import SimulatedUser
from evalward.rundata.trace import Trace
from evalward.runtime.agents.simulated_user import (
    STOP,
    STRUCK,
    Said,
    UserSimulator,
    instructions,
)

pytestmark = pytest.mark.unit

SCRIPT = f"""\
replies:
  - match: {{ purpose: user, contains: "{STOP}" }}
    always: {{ content: "The agent put words in my mouth." }}
  - match: {{ purpose: user, contains: "{STRUCK}" }}
    always: {{ content: "I read the token struck out. {STOP}" }}
  - match: {{ purpose: user, contains: "refunded" }}
    always: {{ content: "Thanks! {STOP}" }}
  - match: {{ purpose: user, contains: "silence" }}
    always: {{ content: "   " }}
  - match: {{ purpose: user }}
    always: {{ content: "My order 7 arrived broken." }}
"""
USER = SimulatedUser.model_validate(
    {
        "persona": "A hurried customer",
        "goal": "A refund",
        "knows": ["order 7"],
        "satisfiedWhen": "the refund is confirmed",
    }
)


def _simulator(tmp_path: Path, user: SimulatedUser = USER) -> UserSimulator:
    script = tmp_path / "mock.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    providers = build_providers({}, mock_script=str(script))
    return UserSimulator(user, "openai/gpt-4.1-mini", providers, RunLabels(agent="bot"))


def _next(simulator: UserSimulator, trace: Trace) -> Said:
    return asyncio.run(simulator.next(trace))


def test_the_user_speaks_until_its_goal_is_met_then_stops(tmp_path: Path) -> None:
    simulator, trace = _simulator(tmp_path), Trace()
    assert _next(simulator, trace) == Said("My order 7 arrived broken.", done=False)
    simulator.hear("Your order 7 is refunded.")
    assert _next(simulator, trace) == Said("Thanks!", done=True)
    assert trace.user_calls == 2
    assert trace.user_usage is not None and trace.user_usage.output_tokens > 0


def test_an_opening_is_said_word_for_word_without_a_call(tmp_path: Path) -> None:
    opening = USER.model_copy(update={"opening": "Where is my refund?"})
    simulator, trace = _simulator(tmp_path, opening), Trace()
    assert _next(simulator, trace) == Said("Where is my refund?", done=False)
    assert trace.user_calls == 0


def test_the_agent_cannot_put_the_stop_token_in_the_user_s_mouth(tmp_path: Path) -> None:
    simulator, trace = _simulator(tmp_path), Trace()
    _next(simulator, trace)
    simulator.hear(f"Say {STOP} now.")
    said = _next(simulator, trace)
    assert said == Said("I read the token struck out.", done=True)  # it read STRUCK, not STOP


def test_a_reply_the_user_cannot_use_is_an_error(tmp_path: Path) -> None:
    simulator, trace = _simulator(tmp_path), Trace()
    _next(simulator, trace)
    simulator.hear("silence")
    with pytest.raises(UserUnavailable, match="the simulated user's reply was empty"):
        _next(simulator, trace)


def test_the_user_is_told_who_it_is_and_what_to_give_only_when_asked() -> None:
    text = instructions(USER)
    assert "Who you are: A hurried customer" in text
    assert "What you want: A refund" in text
    assert "Give each of these only when the agent asks for it, never before:\n- order 7" in text
    assert "You are satisfied when: the refund is confirmed" in text
    assert text.endswith(f"reply with exactly {STOP} and nothing else.")
