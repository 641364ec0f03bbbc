"""The model proxy's wire formats reading a request: one conversation, written as each API
wants it (and checked against that API's official SDK types), is one and the same
`ChatRequest` for a mock script and the same tool results for the trace."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from evalward.providers.base import ChatMessage, RunLabels, ToolCall
from evalward.runtime.proxy.wire import FORMATS
from evalward.runtime.proxy.wire.base import Kind, SeenResult
from fakes import wire_contract as contract

pytestmark = pytest.mark.unit

SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}}}
ARGUMENTS = json.dumps({"order_id": "12345"})

CONVERSATIONS: dict[Kind, dict[str, Any]] = {
    Kind.chat: {
        "model": "gpt-test",
        "max_tokens": 50,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "lookup_order",
                    "description": "Look up",
                    "parameters": SCHEMA,
                },
            }
        ],
        "messages": [
            {"role": "system", "content": "You are Jane."},
            {"role": "user", "content": "Where is 12345?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": ARGUMENTS},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
        ],
    },
    Kind.responses: {
        "model": "gpt-test",
        "max_output_tokens": 50,
        "instructions": "You are Jane.",
        "tools": [
            {
                "type": "function",
                "name": "lookup_order",
                "description": "Look up",
                "parameters": SCHEMA,
                "strict": False,
            }
        ],
        "input": [
            {"role": "user", "content": "Where is 12345?"},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "lookup_order",
                "arguments": ARGUMENTS,
            },
            {"type": "function_call_output", "call_id": "c1", "output": "shipped"},
        ],
    },
    Kind.messages: {
        "model": "claude-test",
        "max_tokens": 50,
        "system": "You are Jane.",
        "tools": [{"name": "lookup_order", "description": "Look up", "input_schema": SCHEMA}],
        "messages": [
            {"role": "user", "content": "Where is 12345?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "c1",
                        "name": "lookup_order",
                        "input": {"order_id": "12345"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "shipped"}],
            },
        ],
    },
}
SDK_TYPES: dict[Kind, Callable[[Any], str | None]] = {
    Kind.chat: contract.openai_request_problem,
    Kind.responses: contract.responses_request_problem,
    Kind.messages: contract.anthropic_request_problem,
}
LABELS = RunLabels(agent="support-bot", fixture="order-status")


@pytest.mark.parametrize("kind", list(CONVERSATIONS), ids=str)
def test_each_api_reads_one_conversation_as_the_same_request(kind: Kind) -> None:
    body = CONVERSATIONS[kind]
    assert SDK_TYPES[kind](body) is None  # the shape the provider's own SDK sends

    request = FORMATS[kind].chat_request(body, LABELS)

    assert request.messages == (
        ChatMessage("system", "You are Jane."),
        ChatMessage("user", "Where is 12345?"),
        ChatMessage("assistant", "", (ToolCall("c1", "lookup_order", {"order_id": "12345"}),)),
        ChatMessage("tool", "shipped", tool_call_id="c1"),
    )
    assert [(t.name, t.parameters) for t in request.tools] == [("lookup_order", SCHEMA)]
    assert request.max_tokens == 50
    assert request.labels == LABELS


@pytest.mark.parametrize("kind", list(CONVERSATIONS), ids=str)
def test_each_api_reads_the_tool_results_the_agent_sends_back(kind: Kind) -> None:
    assert FORMATS[kind].results(CONVERSATIONS[kind]) == [SeenResult("c1", "shipped")]


def test_an_anthropic_tool_error_is_read_as_an_error() -> None:
    body = json.loads(json.dumps(CONVERSATIONS[Kind.messages]))
    body["messages"][-1]["content"][0]["is_error"] = True
    assert contract.anthropic_request_problem(body) is None

    assert FORMATS[Kind.messages].results(body) == [SeenResult("c1", "shipped", is_error=True)]


@pytest.mark.parametrize("kind", list(CONVERSATIONS), ids=str)
def test_a_stream_asked_without_usage_is_sent_upstream_asking_for_it(kind: Kind) -> None:
    """Every streamed call is metered: Chat Completions must ask for usage in its stream;
    the other APIs always send it, so their body goes upstream as the agent wrote it."""
    body = {**CONVERSATIONS[kind], "stream": True}

    upstream = FORMATS[kind].upstream(dict(body))

    if kind is Kind.chat:
        assert upstream == {**body, "stream_options": {"include_usage": True}}
    else:
        assert upstream == body


@pytest.mark.parametrize(
    ("kind", "body", "names"),
    [
        (
            Kind.chat,
            {
                "tools": [
                    {"type": "function", "function": {"name": "refund_order"}},
                    {"type": "custom", "custom": {"name": "notes"}},
                    {"type": "function", "function": {}},
                ],
                "functions": [{"name": "lookup"}],
            },
            ["refund_order", "notes", "lookup"],
        ),
        (
            Kind.responses,
            {
                "tools": [
                    {"type": "function", "name": "refund_order"},
                    {"type": "custom", "name": "notes"},
                    {
                        "type": "namespace",
                        "name": "crm",
                        "tools": [{"type": "function", "name": "x"}],
                    },
                ]
            },
            ["refund_order", "notes", "crm.x"],
        ),
        (
            Kind.messages,
            {"tools": [{"name": "refund_order"}, {"type": "bash_20250124", "name": "bash"}]},
            ["refund_order", "bash"],
        ),
        (Kind.chat, {"tools": "not a list"}, []),
    ],
    ids=["chat", "responses", "messages", "no-list"],
)
def test_the_tools_a_request_offers_are_named_as_its_calls_would_be(
    kind: Kind, body: dict[str, Any], names: list[str]
) -> None:
    """What a run offered its model (`Trace.offered_tools`) is named as a reply's call of it
    is: a namespace's tool qualified (`crm.x`), a chat custom tool and an older function too."""
    assert FORMATS[kind].offered(body) == names
