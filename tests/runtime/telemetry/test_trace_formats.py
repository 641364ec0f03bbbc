"""Transcripts and protocol events converted into the one Trace model."""

from __future__ import annotations

import pytest

from evalward.errors import ProtocolError
from evalward.rundata.trace import StepType, Trace, Usage
from evalward.runtime.telemetry.converters import from_anthropic_messages, from_openai_messages
from evalward.runtime.telemetry.protocol import apply_event, apply_response

pytestmark = pytest.mark.unit


def shape(trace: Trace) -> list[tuple[int, str, str | None]]:
    return [(s.index, s.type.value, s.tool) for s in trace.steps]


def test_openai_transcript() -> None:
    trace = from_openai_messages(
        [
            {"role": "system", "content": "Be helpful."},
            {"role": "user", "content": "Where is 12345?"},
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"id": "12345"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "shipped"},
            {"role": "assistant", "content": [{"type": "text", "text": "It shipped."}]},
        ]
    )
    assert shape(trace) == [
        (1, "input", None),
        (2, "assistant", None),
        (3, "tool_call", "lookup"),
        (4, "tool_result", "lookup"),
        (5, "final", None),
    ]
    assert trace.steps[2].arguments == {"id": "12345"}
    assert trace.steps[3].output == "shipped"
    assert trace.final_output == "It shipped."


def test_anthropic_transcript() -> None:
    trace = from_anthropic_messages(
        [
            {"role": "user", "content": "Refund order 9"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Why?"},
                    {"type": "tool_use", "id": "tu_1", "name": "clarify", "input": {"q": "why"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu_1",
                        "content": [{"type": "text", "text": "damaged"}],
                        "is_error": False,
                    }
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Refund opened."}]},
        ]
    )
    assert shape(trace) == [
        (1, "input", None),
        (2, "assistant", None),
        (3, "tool_call", "clarify"),
        (4, "tool_result", "clarify"),
        (5, "final", None),
    ]
    assert trace.steps[2].arguments == {"q": "why"}
    assert trace.steps[3].output == "damaged"
    assert trace.final_output == "Refund opened."


def test_a_transcript_ending_in_a_tool_call_has_no_final() -> None:
    trace = from_openai_messages(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "function": {"name": "x", "arguments": "oops"}}],
            },
        ]
    )
    assert trace.final_output == ""
    assert trace.steps[1].arguments == {"_unparsed": "oops"}


def test_unknown_roles_are_refused() -> None:
    with pytest.raises(ProtocolError, match=r"messages\[0\]: unknown role 'robot'"):
        from_anthropic_messages([{"role": "robot", "content": "hi"}])


def test_usage_events_add_to_the_latest_step_and_cost_sums() -> None:
    trace = Trace()
    trace.add(StepType.input, content="hi")
    apply_event(trace, {"type": "usage", "input_tokens": 3, "output_tokens": 1, "cost_usd": 0.5})
    apply_event(trace, {"type": "usage", "input_tokens": 2, "output_tokens": 4})
    # what the agent says it used, marked as such
    assert trace.usage == Usage(input_tokens=5, output_tokens=5, cost_usd=0.5, reported=True)


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ([1], "expected a JSON object with a `type`"),
        ({"type": "thought"}, "unknown event type 'thought'"),
        ({"type": "tool_call"}, "a `tool_call` event needs `tool`"),
        ({"type": "final", "answer": "done", "model": "m"}, "needs `content`.*gives `answer`"),
        ({"type": "usage", "input_tokens": -1}, "`input_tokens` must be an integer from 0 to"),
        ({"type": "usage", "cost_usd": -999999.0}, "`cost_usd` must be from 0 to"),
        ({"type": "final", "content": "a", "duration_ms": -5}, "`duration_ms` must be 0 or more"),
    ],
)
def test_malformed_events_say_what_was_expected(event: object, message: str) -> None:
    trace = Trace()
    trace.add(StepType.input, content="hi")
    with pytest.raises(ProtocolError, match=message):
        apply_event(trace, event)


def test_http_replies_may_be_a_list_a_trace_or_a_final_message() -> None:
    for body in (
        [{"type": "final", "content": "a"}],
        {"trace": [{"type": "final", "content": "a"}]},
        {"final": "a"},
    ):
        trace = Trace()
        apply_response(trace, body)
        assert trace.final_output == "a"
    with pytest.raises(ProtocolError, match=r"trace\[0\]: unknown event type"):
        apply_response(Trace(), {"trace": [{"type": "nope"}]})
