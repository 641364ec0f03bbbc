"""Anthropic Messages as the proxy reads and writes it (`runtime.proxy.wire.messages`): a
stream's events added up (text, a tool call's input in JSON fragments, thinking and its
signature, a fragment cut short, an error), a whole message cut back into its events, and
the requests a mock script cannot read refused by the field at fault."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalward.errors import WireError
from evalward.http.sse import Event, EventReader
from evalward.providers.base import ChatMessage, RunLabels, ToolCall
from evalward.runtime.proxy.wire.messages import Messages, events_of

pytestmark = pytest.mark.unit

MESSAGE: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "tu_1", "name": "lookup", "input": {"order": 7}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 20, "output_tokens": 9},
}


def read(data: list[dict[str, Any]]) -> list[Event]:
    """The events the proxy reads for `data`, each sent as one `data:` line."""
    reader = EventReader()
    return [e for d in data for e in reader.feed(f"data: {json.dumps(d)}\n\n".encode())]


def test_a_whole_message_streamed_and_added_up_again_is_the_same_message() -> None:
    streamed = events_of(MESSAGE)
    assert [e["type"] for e in streamed][:2] == ["message_start", "content_block_start"]
    assert streamed[0]["message"]["usage"] == {"input_tokens": 20, "output_tokens": 0}
    accumulator = Messages.accumulator({})

    assert all(accumulator.feed(e) for e in read(streamed))

    assert accumulator.result() == MESSAGE
    assert Messages.usage(MESSAGE).total_tokens == 29
    turn = Messages.turn(MESSAGE)
    assert turn.text == "Let me check." and turn.calls == (
        ToolCall("tu_1", "lookup", {"order": 7}),
    )


def test_thinking_a_signature_and_a_call_cut_short_are_kept() -> None:
    accumulator = Messages.accumulator({})
    for event in read(
        [
            {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 3}}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "hm"},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "s1"},
            },
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "name": "f"},
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"a": '},
            },
            {"type": "error", "error": {"message": "overloaded"}},
        ]
    ):
        accumulator.feed(event)

    assert accumulator.error == "overloaded"
    whole = accumulator.result()
    assert whole is not None
    assert whole["content"] == [
        {"type": "thinking", "thinking": "hm", "signature": "s1"},
        {"type": "tool_use", "name": "f", "input": {"_unparsed": '{"a": '}},
    ]


def test_a_stream_without_its_start_is_no_message() -> None:
    accumulator = Messages.accumulator({})
    accumulator.feed(read([{"type": "content_block_delta", "index": 0, "delta": {}}])[0])
    assert accumulator.result() is None


def test_replay_names_each_event_by_its_type() -> None:
    replayed = Messages.replay({}, MESSAGE)
    assert replayed[0].startswith(b"event: message_start\n")
    assert replayed[-1].startswith(b"event: message_stop\n")


def test_a_request_reads_system_blocks_calls_and_results() -> None:
    body = {
        "model": "claude-test",
        "max_tokens": 64,
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": "where?"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "x"}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": "here", "is_error": True}
                ],
            },
        ],
    }
    request = Messages.chat_request(body, RunLabels(agent="a"))
    assert request.messages == (
        ChatMessage("system", "Be brief."),
        ChatMessage("user", "where?"),
        ChatMessage("assistant", "", (ToolCall("t", "f", {}),)),
        ChatMessage("tool", "here", tool_call_id="t"),
    )
    assert request.max_tokens == 64
    (seen,) = Messages.results(body)
    assert (seen.call_id, seen.output, seen.is_error) == ("t", "here", True)


@pytest.mark.parametrize(
    ("body", "fault"),
    [
        ({"messages": [{"role": "system", "content": "x"}]}, "role user or assistant"),
        ({"messages": [{"role": "user", "content": ["x"]}]}, "must hold content blocks"),
        ({"messages": [{"role": "user", "content": "x"}], "tools": [{}]}, r"tools\[0\]"),
    ],
)
def test_a_request_a_mock_cannot_read_is_refused_by_its_field(
    body: dict[str, Any], fault: str
) -> None:
    with pytest.raises(WireError, match=fault):
        Messages.chat_request(body, RunLabels(agent="a"))


@pytest.mark.parametrize(
    ("body", "fault"),
    [
        ({"mcp_servers": [{"type": "url", "name": "crm", "url": "https://x"}]}, "`mcp_servers`"),
        ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "`web_search_2"),
        ({"tools": [{"type": "mcp_toolset", "mcp_server_name": "crm"}]}, "`mcp_toolset` tool"),
    ],
)
def test_a_request_the_provider_would_call_tools_for_is_refused(
    body: dict[str, Any], fault: str
) -> None:
    refusal = Messages.unobserved({"model": "m", "messages": [], **body})
    assert refusal is not None and fault in refusal


def test_the_agents_own_tools_anthropic_defines_are_served() -> None:
    tools = [
        {"name": "lookup", "input_schema": {"type": "object"}},
        {"type": "custom", "name": "c", "input_schema": {"type": "object"}},
        {"type": "bash_20250124", "name": "bash"},
        {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
    ]
    assert Messages.unobserved({"model": "m", "messages": [], "tools": tools}) is None


def test_a_block_that_calls_what_the_proxy_does_not_read_is_named_unread() -> None:
    content = [
        {"type": "thinking", "thinking": "hm", "signature": "s"},
        {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}},
        {"type": "text", "text": "Done."},
    ]
    turn = Messages.turn({"type": "message", "content": content, "usage": {}})
    assert turn.text == "Done." and turn.unread == ("a `server_tool_use` block",)
