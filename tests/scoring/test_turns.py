"""One turn of a conversation as the trace a `turn:` assertion reads (`scoring/turns.py`):
its steps keep their numbers, its model calls are the ones made during it, and a turn the
conversation never reached says after which turn it ended."""

from __future__ import annotations

import pytest

from evalward.rundata.trace import ModelCall, Step, StepType, Trace
from evalward.scoring.turns import turn_not_reached, turn_trace, turns_held

pytestmark = pytest.mark.unit


def _call(after_step: int) -> ModelCall:
    return ModelCall(api="openai", model="openai/gpt-test", status=200, after_step=after_step)


TRACE = Trace(
    steps=[
        Step(index=1, type=StepType.input, content="hi", turn=1, duration_ms=1),
        Step(index=2, type=StepType.final, content="hello", turn=1, duration_ms=10),
        Step(index=3, type=StepType.input, content="refund 7", turn=2, duration_ms=1),
        Step(index=4, type=StepType.tool_call, tool="refund", turn=2, duration_ms=5),
        Step(index=5, type=StepType.final, content="done", turn=2, duration_ms=20),
    ],
    proxy_calls=[_call(1), _call(3), _call(4)],
    end_reason="the user was satisfied",
)


def test_a_turn_holds_its_own_steps_numbered_as_in_the_conversation() -> None:
    second = turn_trace(TRACE, 2)
    assert second is not None
    assert [s.index for s in second.steps] == [3, 4, 5]
    assert second.duration_ms == 26
    assert [c.after_step for c in second.proxy_calls] == [3, 4]
    assert second.end_reason == "the user was satisfied"
    first = turn_trace(TRACE, 1)
    assert first is not None
    assert [c.after_step for c in first.proxy_calls] == [1]


def test_a_turn_never_reached_is_none_and_says_where_the_conversation_ended() -> None:
    assert turn_trace(TRACE, 3) is None
    assert turns_held(TRACE) == 2
    assert turn_not_reached(TRACE, 3) == (
        "turn 3 never happened: the conversation ended after turn 2 (the user was satisfied)"
    )
    assert turns_held(Trace(steps=[Step(index=1, type=StepType.final)])) == 0
