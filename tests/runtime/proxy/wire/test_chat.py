"""OpenAI Chat Completions as the proxy reads and writes it (`runtime.proxy.wire.chat`): a
stream's chunks added up (tool call fragments, refusals, several choices, an error, a usage
chunk kept from an agent that did not ask for it), a whole reply cut back into chunks, and
the requests a mock script cannot read refused by the field at fault."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalward.errors import WireError
from evalward.http.sse import Event, EventReader
from evalward.providers.base import RunLabels, ToolCall
from evalward.runtime.proxy.wire.chat import ChatCompletions, chunks_of

pytestmark = pytest.mark.unit

REPLY: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "gpt-4.1-mini",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Looking it up.",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"id": 7}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
}


def events(*chunks: object) -> list[Event]:
    """The events the proxy reads for `chunks`, each encoded as the API sends it."""
    reader = EventReader()
    found: list[Event] = []
    for chunk in chunks:
        data = chunk if isinstance(chunk, str) else json.dumps(chunk)
        found += reader.feed(f"data: {data}\n\n".encode())
    return found


def test_a_whole_reply_streamed_and_added_up_again_is_the_same_reply() -> None:
    asked = {"stream": True, "stream_options": {"include_usage": True}}
    chunks = chunks_of(REPLY, with_usage=True)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == REPLY["usage"]
    accumulator = ChatCompletions.accumulator(asked)

    passed = [accumulator.feed(e) for e in events(*chunks, "[DONE]")]

    assert all(passed)
    whole = accumulator.result()
    assert whole is not None
    assert whole["id"] == "chatcmpl-1" and whole["usage"] == REPLY["usage"]
    (choice,) = whole["choices"]
    assert choice["message"]["content"] == "Looking it up."
    assert choice["message"]["tool_calls"] == REPLY["choices"][0]["message"]["tool_calls"]
    assert choice["finish_reason"] == "tool_calls"
    assert ChatCompletions.usage(whole).total_tokens == 16
    turn = ChatCompletions.turn(whole)
    assert turn.text == "Looking it up." and [c.arguments for c in turn.calls] == [{"id": 7}]


def test_without_usage_asked_the_usage_chunk_is_not_streamed_and_not_passed_on() -> None:
    assert "usage" not in str(chunks_of(REPLY, with_usage=False))
    accumulator = ChatCompletions.accumulator({"stream": True})
    usage_only = {"id": "c", "choices": [], "usage": REPLY["usage"]}

    assert accumulator.feed(events(usage_only)[0]) is False  # evalward's, not the agent's
    whole = accumulator.result()
    assert whole is not None and whole["usage"] == REPLY["usage"]


def test_fragments_of_calls_refusals_and_choices_add_up_by_index() -> None:
    accumulator = ChatCompletions.accumulator({})
    fragments = [
        {"id": "c", "model": "m", "choices": [{"index": 1, "delta": {"refusal": "I can"}}]},
        {"choices": [{"index": 1, "delta": {"refusal": "not."}, "finish_reason": "stop"}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_x",
                                "function": {"name": "look", "arguments": '{"q"'},
                            }
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "function": {"name": "up", "arguments": ": 1}"}}
                        ]
                    },
                    "finish_reason": "tool_calls",
                }
            ]
        },
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"name": "n"}}]}}
            ]
        },
    ]
    for event in events(*fragments, "not json", "[DONE]"):
        accumulator.feed(event)

    whole = accumulator.result()
    assert whole is not None and accumulator.error is None
    first, second = whole["choices"]
    assert first["message"]["tool_calls"] == [
        {
            "id": "call_x",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"q": 1}'},
        },
        {"id": "call_1", "type": "function", "function": {"name": "n", "arguments": ""}},
    ]
    assert first["finish_reason"] == "tool_calls"
    assert second["message"] == {"role": "assistant", "content": None, "refusal": "I cannot."}


def test_an_error_in_the_stream_is_kept_and_an_empty_stream_is_no_reply() -> None:
    accumulator = ChatCompletions.accumulator({})
    accumulator.feed(events({"error": {"message": "overloaded"}})[0])
    assert accumulator.error == "overloaded"
    assert accumulator.result() is None


def test_replay_ends_with_done_and_holds_usage_only_when_asked() -> None:
    asked = ChatCompletions.replay({"stream_options": {"include_usage": True}}, REPLY)
    unasked = ChatCompletions.replay({}, REPLY)
    assert asked[-1] == unasked[-1] == b"data: [DONE]\n\n"
    assert len(asked) == len(unasked) + 1
    assert b'"usage"' in asked[-2] and not any(b'"usage"' in e for e in unasked)


def test_the_tool_results_the_agent_sends_are_read_by_call_id() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "call_a", "content": [{"type": "text", "text": "ok"}]},
        ]
    }
    (seen,) = ChatCompletions.results(body)
    assert (seen.call_id, seen.output, seen.is_error) == ("call_a", "ok", False)


def test_a_request_reads_developer_as_system_and_max_completion_tokens() -> None:
    body = {
        "model": "gpt-4.1-mini",
        "temperature": 0,
        "max_completion_tokens": 30,
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f"}}]},
        ],
        "tools": [
            {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
        ],
    }
    request = ChatCompletions.chat_request(body, RunLabels(agent="a"))
    assert [m.role for m in request.messages] == ["system", "assistant"]
    assert request.messages[1].tool_calls[0].id == "call_0"
    assert (request.max_tokens, request.temperature) == (30, 0.0)
    assert request.tools[0].parameters == {"type": "object"}


@pytest.mark.parametrize(
    ("body", "fault"),
    [
        ({"messages": []}, "`messages` must be a non-empty list"),
        ({"messages": ["hi"]}, r"messages\[0\] must be an object"),
        ({"messages": [{"role": "robot", "content": "x"}]}, r"messages\[0\]\.role 'robot'"),
        (
            {"messages": [{"role": "assistant", "tool_calls": [{"id": "x"}]}]},
            r"messages\[0\]\.tool_calls\[0\] has no `function`",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]},
            r"tools\[0\] must be",
        ),
    ],
)
def test_a_request_a_mock_cannot_read_is_refused_by_its_field(
    body: dict[str, Any], fault: str
) -> None:
    with pytest.raises(WireError, match=fault):
        ChatCompletions.chat_request(body, RunLabels(agent="a"))


@pytest.mark.parametrize("choices", [2, 0, "2", True, 1.5])
def test_a_request_for_other_than_one_choice_is_refused_by_n(choices: object) -> None:
    refusal = ChatCompletions.unobserved({"model": "m", "n": choices})
    assert refusal is not None and "does not serve `n: " in refusal


@pytest.mark.parametrize("body", [{}, {"n": None}, {"n": 1}])
def test_a_request_for_one_choice_is_served(body: dict[str, Any]) -> None:
    assert ChatCompletions.unobserved({"model": "m", **body}) is None


def test_a_reply_of_several_choices_reads_the_first_and_names_the_rest_unread() -> None:
    second = {**REPLY["choices"][0], "index": 1, "message": {"role": "assistant", "content": "No."}}
    turn = ChatCompletions.turn({**REPLY, "choices": [REPLY["choices"][0], second]})
    assert [c.name for c in turn.calls] == ["lookup"] and turn.unread == ("2 choices",)
    assert ChatCompletions.turn(REPLY).unread == ()


def test_a_custom_tools_call_is_read_by_its_name_with_its_text_as_the_input() -> None:
    custom = {"id": "call_c", "type": "custom", "custom": {"name": "patch", "input": "*** x"}}
    message = {**REPLY["choices"][0]["message"], "tool_calls": [custom]}
    turn = ChatCompletions.turn({**REPLY, "choices": [{**REPLY["choices"][0], "message": message}]})
    assert turn.calls == (ToolCall("call_c", "patch", {"input": "*** x"}),)


LEGACY: dict[str, Any] = {
    **REPLY,
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "lookup", "arguments": '{"id": 7}'},
            },
            "finish_reason": "function_call",
        }
    ],
}


def test_the_older_function_call_and_the_function_message_after_it_are_a_call_and_its_result() -> (
    None
):
    (call,) = ChatCompletions.turn(LEGACY).calls
    assert (call.name, call.arguments) == ("lookup", {"id": 7})
    asked = LEGACY["choices"][0]["message"]
    body = {
        "messages": [
            {"role": "user", "content": "where?"},
            asked,
            {"role": "function", "name": "lookup", "content": "shipped"},
            {**asked, "function_call": {"name": "lookup", "arguments": '{"id": 8}'}},
            {"role": "function", "name": "lookup", "content": "lost"},
        ]
    }
    first, second = ChatCompletions.results(body)
    assert (first.call_id, first.output) == (call.id, "shipped")
    assert second.call_id != call.id and second.output == "lost"


def test_the_older_function_call_streamed_adds_up_and_is_streamed_again() -> None:
    accumulator = ChatCompletions.accumulator({"stream": True})
    for event in events(*chunks_of(LEGACY, with_usage=False), "[DONE]"):
        accumulator.feed(event)

    whole = accumulator.result()
    assert whole is not None
    (choice,) = whole["choices"]
    assert choice["message"]["function_call"] == LEGACY["choices"][0]["message"]["function_call"]
    assert ChatCompletions.turn(whole).calls == ChatCompletions.turn(LEGACY).calls
