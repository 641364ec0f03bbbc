"""The steps a run's model traffic shows (`runtime.proxy.observed`): what a reply held that
evalward does not read as text or tool calls is an error step of the run, never skipped."""

from __future__ import annotations

import pytest

from evalward.providers.base import ToolCall
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.proxy.observed import TrafficObserver
from evalward.runtime.proxy.wire.base import Turn

pytestmark = pytest.mark.unit


def test_a_reply_with_a_part_evalward_does_not_read_is_an_error_of_the_run() -> None:
    trace = Trace()
    observer = TrafficObserver(trace)

    observer.reply(
        Turn("Done.", (ToolCall("c1", "lookup", {}),), unread=("2 choices",)), "openai/m"
    )

    assert [s.type for s in trace.steps] == [
        StepType.assistant,
        StepType.tool_call,
        StepType.error,
    ]
    assert trace.error is not None and "held 2 choices" in trace.error


def test_a_reply_evalward_reads_whole_is_no_error() -> None:
    trace = Trace()
    TrafficObserver(trace).reply(Turn("Done."), "openai/m")
    assert trace.error is None


def test_a_tool_call_with_no_name_is_an_error_of_the_run() -> None:
    trace = Trace()
    TrafficObserver(trace).reply(Turn("", (ToolCall("c1", "", {}),)), "openai/m")
    assert trace.error is not None and "a tool call with no name" in trace.error
