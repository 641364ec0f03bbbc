"""A conversation's end reason is written through `Trace.end` alone, and the first reason
given stands: the runner's word on a run its timeout cut short never replaces why the
conversation had already ended."""

from __future__ import annotations

import pytest

from evalward.resources.conversation import EndReason
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.conversation import end_cut_short

pytestmark = pytest.mark.unit


def test_the_first_end_reason_stands() -> None:
    trace = Trace()
    assert trace.end_reason is None
    trace.end(EndReason.handoff)
    trace.end(EndReason.error)
    assert trace.end_reason == "handoff"
    assert Trace.model_validate_json(trace.model_dump_json()).end_reason == "handoff"


def test_a_conversation_cut_short_ends_for_its_timeout_or_its_error() -> None:
    timed_out = Trace()
    timed_out.time_out("the run timed out after 5 s (execution.timeoutSeconds)")
    end_cut_short(timed_out)
    assert timed_out.end_reason == "timeout"

    crashed = Trace()
    crashed.add(StepType.error, content="the agent's program exited with status 1")
    end_cut_short(crashed)
    assert crashed.end_reason == "error"


def test_a_timeout_after_the_conversation_ended_keeps_its_reason() -> None:
    trace = Trace()
    trace.end(EndReason.user_done)
    trace.time_out("the run timed out after 5 s (execution.timeoutSeconds)")
    end_cut_short(trace)
    assert trace.end_reason == "user done"
