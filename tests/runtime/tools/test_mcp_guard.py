"""The guard between evalward and an MCP server (`runtime/tools/mcp_wire.py`): every message is
JSON-RPC, every reply answers a request still waiting, the server's bytes and requests are
bounded; the first fault is the session's and names the calls it broke. End to end, with
servers out to break the client: tests/runtime/tools/test_mcp_servers.py."""

from __future__ import annotations

import json

import pytest
from mcp_types import JSONRPCRequest

from evalward.runtime.tools.mcp_wire import (
    MESSAGE_DEPTH,
    SERVER_REQUESTS,
    Guard,
    asked,
    parse_message,
)

pytestmark = pytest.mark.unit


def _line(message: object) -> bytes:
    return json.dumps(message).encode()


def _call(guard: Guard, request_id: object, tool: str) -> None:
    request = parse_message(
        _line(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": {}},
            }
        ),
        guard,
    )
    assert isinstance(request, JSONRPCRequest)
    guard.sent(request)


def test_a_reply_to_a_waiting_request_is_admitted_once() -> None:
    guard = Guard("orders")
    _call(guard, 1, "refund")
    reply = parse_message(_line({"jsonrpc": "2.0", "id": 1, "result": {}}), guard)
    assert reply is not None and guard.admits(reply)
    again = parse_message(_line({"jsonrpc": "2.0", "id": 1, "result": {}}), guard)
    assert again is not None and not guard.admits(again)
    assert guard.failure == "MCP server 'orders' sent a reply for no request waiting (id 1)"


def test_an_id_of_another_type_answers_nothing() -> None:
    guard = Guard("orders")
    _call(guard, 1, "refund")
    reply = parse_message(_line({"jsonrpc": "2.0", "id": "1", "result": {}}), guard)
    assert reply is not None and not guard.admits(reply)
    assert guard.failure == (
        "MCP server 'orders', answering tools/call 'refund', sent a reply for no request "
        "waiting (id '1')"
    )
    assert guard.failure_for("tools/call 'refund'") == guard.failure


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"not json", "wrote a line that is not JSON"),
        (_line({"id": 1, "result": {}}), "wrote a message that is not JSON-RPC 2.0"),
        (
            _line(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "result": {"a": [[[[[[[[]]]]]]]]}
                    | {"deep": json.loads("[" * (MESSAGE_DEPTH + 1) + "]" * (MESSAGE_DEPTH + 1))},
                }
            ),
            f"wrote a message nested more than {MESSAGE_DEPTH} deep",
        ),
    ],
)
def test_a_line_that_is_no_message_is_the_session_s_fault(line: bytes, why: str) -> None:
    guard = Guard("orders")
    assert parse_message(line, guard) is None
    assert guard.failure is not None and why in guard.failure
    assert guard.failure_for("tools/list").endswith("(before tools/list was answered)")


def test_the_session_s_bytes_and_the_server_s_requests_are_bounded() -> None:
    guard = Guard("orders", session_bytes=1024 * 1024)
    assert guard.count(1024 * 1024)
    assert not guard.count(1)
    assert guard.failure == "MCP server 'orders' sent more than 1 MiB in one run"
    asking = Guard("orders")
    ping = parse_message(_line({"jsonrpc": "2.0", "id": 9, "method": "ping"}), asking)
    assert ping is not None
    assert all(asking.admits(ping) for _ in range(SERVER_REQUESTS))
    assert not asking.admits(ping)
    assert (
        asking.failure == f"MCP server 'orders' made more than {SERVER_REQUESTS} requests of "
        "the client"
    )


def test_a_request_is_named_by_its_method_and_tool() -> None:
    call = JSONRPCRequest(
        jsonrpc="2.0", id=1, method="tools/call", params={"name": "refund\nnow", "arguments": {}}
    )
    named = asked(call)
    assert named.startswith("tools/call ")
    assert "\n" not in named  # a tool's name from the server never breaks a message's line
    plain = JSONRPCRequest(jsonrpc="2.0", id=3, method="tools/call", params={"name": "refund"})
    assert asked(plain) == "tools/call 'refund'"
    assert asked(JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/list")) == "tools/list"
