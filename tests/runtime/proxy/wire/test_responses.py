"""OpenAI Responses as the proxy reads and writes it (`runtime.proxy.wire.responses`): a
stream's final event carries the whole response, a stream broken off keeps the items that
were done, a response cut at its token limit reads as `length`, and the requests a mock
script cannot read (a hosted tool, an unknown role) are refused by the field at fault."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.errors import WireError
from evalward.providers.base import ChatMessage, ChatResponse, RunLabels, ToolCall
from evalward.runtime.proxy.wire.responses import FINAL_EVENTS, Responses, events_of
from runtime.proxy.wire.test_messages import read

pytestmark = pytest.mark.unit

RESPONSE: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "output": [
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "On its way.", "annotations": []}],
        },
        {
            "id": "fc_1",
            "type": "function_call",
            "call_id": "c1",
            "name": "track",
            "arguments": '{"n": 1}',
        },
        {"id": "rs_1", "type": "reasoning", "summary": []},
    ],
    "usage": {"input_tokens": 8, "output_tokens": 4},
}


def test_a_whole_response_streamed_ends_in_the_event_that_carries_it() -> None:
    streamed = events_of(RESPONSE)
    assert [e["sequence_number"] for e in streamed] == list(range(len(streamed)))
    assert streamed[-1] == {
        "type": "response.completed",
        "sequence_number": len(streamed) - 1,
        "response": RESPONSE,
    }
    deltas = [e["delta"] for e in streamed if e["type"].endswith(".delta")]
    assert deltas == ["On its way.", '{"n": 1}']
    accumulator = Responses.accumulator({})

    assert all(accumulator.feed(e) for e in read(streamed))

    assert accumulator.result() == RESPONSE
    turn = Responses.turn(RESPONSE)
    assert turn == type(turn)("On its way.", (ToolCall("c1", "track", {"n": 1}),), "tool_calls")


@pytest.mark.parametrize("status", ["incomplete", "failed"])
def test_an_unfinished_response_ends_in_its_own_final_event(status: str) -> None:
    final = events_of({**RESPONSE, "status": status})[-1]["type"]
    assert final in FINAL_EVENTS and final == f"response.{status}"


def test_a_stream_broken_off_keeps_the_items_that_were_done() -> None:
    streamed = events_of(RESPONSE)
    cut = [e for e in streamed if e["type"] not in FINAL_EVENTS][:-1]  # the last item not done
    accumulator = Responses.accumulator({})
    for event in read([*cut, {"type": "error", "message": "connection reset"}]):
        accumulator.feed(event)

    whole = accumulator.result()
    assert whole is not None and whole["status"] == "in_progress"
    assert [item["id"] for item in whole["output"]] == ["msg_1", "fc_1"]
    assert accumulator.error == "connection reset"


def test_a_failed_response_says_why() -> None:
    accumulator = Responses.accumulator({})
    failed = {
        "type": "response.failed",
        "response": {"status": "failed", "error": {"message": "quota"}},
    }
    accumulator.feed(read([failed])[0])
    assert accumulator.error == "quota"
    assert Responses.accumulator({}).result() is None


def test_a_response_cut_at_its_token_limit_stopped_for_length() -> None:
    cut = {
        **RESPONSE,
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
    }
    assert Responses.turn(cut).stop_reason == "length"
    filtered = {
        **RESPONSE,
        "status": "incomplete",
        "incomplete_details": {"reason": "content_filter"},
    }
    assert Responses.turn(filtered).stop_reason == "content_filter"


def test_a_request_joins_calls_to_the_assistant_turn_before_them() -> None:
    body = {
        "model": "gpt-4.1-mini",
        "instructions": "Be brief.",
        "max_output_tokens": 40,
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "where?"}]},
            {"role": "assistant", "content": "Checking."},
            {"type": "function_call", "call_id": "c1", "name": "track", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "track", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": {"at": "depot"}},
            {"type": "reasoning", "summary": []},
        ],
        "tools": [{"type": "function", "name": "track"}],
    }
    request = Responses.chat_request(body, RunLabels(agent="a"))
    assert request.messages == (
        ChatMessage("system", "Be brief."),
        ChatMessage("user", "where?"),
        ChatMessage(
            "assistant", "Checking.", (ToolCall("c1", "track", {}), ToolCall("c2", "track", {}))
        ),
        ChatMessage("tool", '{"at": "depot"}', tool_call_id="c1"),
    )
    assert request.max_tokens == 40
    assert [(s.call_id, s.output) for s in Responses.results(body)] == [("c1", '{"at": "depot"}')]
    plain = Responses.chat_request({"model": "m", "input": "hello"}, RunLabels(agent="a"))
    assert plain.messages == (ChatMessage("user", "hello"),)


def test_a_custom_tools_call_and_its_output_are_read_as_a_tools() -> None:
    call = {"type": "custom_tool_call", "call_id": "c9", "name": "patch", "input": "*** x"}
    turn = Responses.turn({**RESPONSE, "output": [call]})
    assert turn.calls == (ToolCall("c9", "patch", {"input": "*** x"}),) and turn.unread == ()
    body = {"input": [call, {"type": "custom_tool_call_output", "call_id": "c9", "output": "ok"}]}
    assert [(s.call_id, s.output) for s in Responses.results(body)] == [("c9", "ok")]


def test_a_mock_reply_says_whether_tool_calls_may_run_in_parallel() -> None:
    reply = Responses.reply(
        ChatResponse("", (ToolCall("c", "f", {"a": 1}),)), {"parallel_tool_calls": False}, 3
    )
    assert reply["parallel_tool_calls"] is False
    assert [item["id"] for item in reply["output"]] == ["fc_evalward_3_0"]


@pytest.mark.parametrize(
    ("body", "fault"),
    [
        ({"input": []}, "`input` must be a string or a non-empty list"),
        ({"input": ["x"]}, r"input\[0\] must be an object"),
        ({"input": [{"role": "tool", "content": "x"}]}, r"input\[0\]\.role 'tool'"),
        ({"input": "x", "tools": [{"type": "web_search"}]}, "which a mock script cannot answer"),
        ({"input": "x", "tools": [{"type": "function"}]}, "must have a `name`"),
    ],
)
def test_a_request_a_mock_cannot_read_is_refused_by_its_field(
    body: dict[str, Any], fault: str
) -> None:
    with pytest.raises(WireError, match=fault):
        Responses.chat_request(body, RunLabels(agent="a"))


@pytest.mark.parametrize("kind", ["mcp", "web_search", "local_shell", "computer_use_preview", None])
def test_a_request_offering_a_tool_whose_calls_are_not_read_is_refused(kind: object) -> None:
    body = {"input": "x", "tools": [{"type": "function", "name": "f"}, {"type": kind}]}
    refusal = Responses.unobserved(body)
    assert refusal is not None and f"tools[1], a `{kind}` tool" in refusal


def test_a_call_of_a_namespaced_tool_is_named_with_its_namespace() -> None:
    call = {"type": "function_call", "call_id": "c", "namespace": "crm", "name": "delete"}
    (read,) = Responses.turn({**RESPONSE, "output": [call]}).calls
    assert (read.name, read.arguments) == ("crm.delete", {})


def test_function_custom_and_namespaced_tools_are_served() -> None:
    tools = [
        {"type": "function", "name": "f"},
        {"type": "custom", "name": "c"},
        {"type": "namespace", "name": "crm", "description": "", "tools": []},
    ]
    assert Responses.unobserved({"input": "x", "tools": tools}) is None


def test_a_reply_item_that_calls_what_the_proxy_does_not_read_is_named_unread() -> None:
    output = [
        {"type": "reasoning", "id": "r", "summary": []},
        {"type": "mcp_call", "id": "m", "server_label": "crm", "name": "delete", "arguments": ""},
        {"type": "web_search_call", "id": "w", "status": "completed"},
        {"type": "mcp_call", "id": "n", "server_label": "crm", "name": "delete", "arguments": ""},
    ]
    turn = Responses.turn({**RESPONSE, "output": output})
    assert turn.unread == ("a `mcp_call` item", "a `web_search_call` item")
    assert Responses.turn(RESPONSE).unread == ()
