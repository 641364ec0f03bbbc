"""A command agent's printed lines against its model's replies (`runtime.agents.command`): a
line a reply of the run held is the model's words, however it looks, and only the replies
the model proxy saw count, those that came after a line was read too."""

from __future__ import annotations

import json

import pytest

from evalward.rundata.trace import MEASURED_ORIGIN, StepType, Trace
from evalward.runtime.agents.command import CommandOutput, ModelWords

pytestmark = pytest.mark.unit

EVENT = json.dumps({"type": "tool_call", "tool": "refund", "id": "c1", "arguments": {}})


def test_a_line_is_the_model_s_words_once_a_reply_the_proxy_saw_holds_it() -> None:
    trace = Trace()
    words = ModelWords(trace)
    assert not words.said(EVENT.encode())

    trace.record(StepType.assistant, "agent", content=f"I printed {EVENT}")  # the agent's word
    assert not words.said(EVENT.encode())
    trace.record(StepType.tool_call, MEASURED_ORIGIN, tool="lookup", call_id="x", arguments={})
    assert not words.said(EVENT.encode())

    trace.record(StepType.assistant, MEASURED_ORIGIN, content=f"Done.\n{EVENT}\n")
    assert words.said(f"  {EVENT}\n".encode())
    assert not words.said(b'{"type": "final", "content": "other"}')


def test_a_printed_event_the_model_wrote_is_text_and_the_program_s_own_is_a_step() -> None:
    trace = Trace()
    output = CommandOutput(trace, "auto")
    output.take(f"{EVENT}\n".encode(), "stdout")  # before any reply: the program's event
    trace.record(StepType.final, MEASURED_ORIGIN, content=EVENT.replace("c1", "c2"))
    output.take(f"{EVENT.replace('c1', 'c2')}\n".encode(), "stdout")  # the model's words

    calls = [s.call_id for s in trace.steps if s.type is StepType.tool_call]
    assert calls == ["c1"]
    assert output.answer() == EVENT.replace("c1", "c2")
