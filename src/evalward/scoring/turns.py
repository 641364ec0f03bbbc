"""Assertions limited to one turn of a conversation (`turn:`), and what the judge is told
the user asked.

A turn's view of the trace holds that turn's steps with their numbers unchanged, so a
judge's evidence and a reader of the report point at the same step of the conversation.
"""

from __future__ import annotations

from typing import Any

from evalward.resources.models import EvalFixtureSpec
from evalward.rundata.trace import Trace


def turn_trace(trace: Trace, turn: int) -> Trace | None:
    """The steps of `turn` alone, as a trace; None when the conversation never reached it."""
    steps = [step for step in trace.steps if step.turn == turn]
    if not steps:
        return None
    first, last = steps[0].index, steps[-1].index
    timed = trace.turn_durations_ms
    return Trace(
        steps=steps,
        duration_ms=timed[turn - 1] if turn <= len(timed) else sum(s.duration_ms for s in steps),
        proxy_calls=[c for c in trace.proxy_calls if first - 1 <= c.after_step < last],
        end_reason=trace.end_reason,
    )


def turns_held(trace: Trace) -> int:
    """How many user turns the conversation held (0 for a run that was no conversation)."""
    return max((s.turn or 0 for s in trace.steps), default=0)


def turn_not_reached(trace: Trace, turn: int | None) -> str:
    held = turns_held(trace)
    why = f" ({trace.end_reason})" if trace.end_reason else ""
    return f"turn {turn} never happened: the conversation ended after turn {held}{why}"


def judged_input(spec: EvalFixtureSpec) -> Any:
    """What the judge is told the user asked: the fixture's input, or its conversation (the
    judge may know the simulated user's goal and hidden facts; the agent never does)."""
    if spec.input is not None:
        return spec.input.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    if spec.conversation is None:
        return None
    return {
        "conversation": spec.conversation.model_dump(
            mode="json",
            by_alias=True,
            exclude_defaults=True,
            exclude={"turns": {"__all__": {"assertions"}}},
        )
    }
