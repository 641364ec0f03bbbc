"""evalward's own calls to the Gemini API (a declarative agent's, a judge's on an `api: gemini`
provider): the request in the shape Google's REST reference gives, the reply read back into
evalward's own, with what the model thought left out of the answer and usage counted as the
provider bills it."""

from __future__ import annotations

import pytest

from evalward.providers.base import ChatMessage, ChatRequest, ToolCall, ToolChoice, ToolSpec
from evalward.providers.gemini import parse_response, request_body
from evalward.rundata.trace import Usage

pytestmark = pytest.mark.unit

LOOKUP = ToolSpec("lookup_order", "Find an order", {"type": "object", "properties": {}})


def conversation(choice: ToolChoice | None = None) -> ChatRequest:
    call = ToolCall("call-1", "lookup_order", {"id": "12345"})
    return ChatRequest(
        model="gemini-2.5-flash",
        messages=(
            ChatMessage("system", "You are Acme's support agent."),
            ChatMessage("user", "Where is order 12345?"),
            ChatMessage("assistant", "", tool_calls=(call,)),
            ChatMessage("tool", "shipped", tool_call_id="call-1"),
        ),
        tools=(LOOKUP,),
        max_tokens=300,
        temperature=0.0,
        tool_choice=choice,
    )


def test_a_conversation_is_written_as_gemini_contents() -> None:
    body = request_body(conversation())

    assert body["systemInstruction"] == {"parts": [{"text": "You are Acme's support agent."}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Where is order 12345?"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "lookup_order", "args": {"id": "12345"}}}],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "lookup_order", "response": {"result": "shipped"}}}
            ],
        },
    ]
    (declared,) = body["tools"][0]["functionDeclarations"]
    assert declared["name"] == "lookup_order"
    assert body["generationConfig"] == {"maxOutputTokens": 300, "temperature": 0.0}
    assert "toolConfig" not in body  # the API's default, AUTO


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        (ToolChoice("auto"), {"mode": "AUTO"}),
        (ToolChoice("none"), {"mode": "NONE"}),
        (ToolChoice("required"), {"mode": "ANY"}),
        (
            ToolChoice("tool", "lookup_order"),
            {"mode": "ANY", "allowedFunctionNames": ["lookup_order"]},
        ),
    ],
)
def test_an_agents_tool_choice_is_sent_as_tool_config(
    choice: ToolChoice, config: dict[str, object]
) -> None:
    assert request_body(conversation(choice))["toolConfig"] == {"functionCallingConfig": config}


def test_a_reply_is_read_without_its_thoughts_and_its_calls_named_in_order() -> None:
    reply = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "The user wants an order.", "thought": True},
                        {"text": "Let me look."},
                        {"functionCall": {"name": "lookup_order", "args": {"id": "1"}}},
                        {"functionCall": {"name": "lookup_order", "args": {"id": "2"}}},
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 100,
            "cachedContentTokenCount": 40,
            "toolUsePromptTokenCount": 7,
            "candidatesTokenCount": 20,
            "thoughtsTokenCount": 30,
        },
        "modelVersion": "gemini-2.5-flash-001",
    }

    read = parse_response(reply, "gemini-2.5-flash")

    assert read.content == "Let me look."
    assert [(c.id, c.arguments) for c in read.tool_calls] == [
        ("gemini-call-0", {"id": "1"}),
        ("gemini-call-1", {"id": "2"}),
    ]
    assert read.usage == Usage(input_tokens=107, output_tokens=50)
    assert (read.stop_reason, read.model) == ("STOP", "gemini-2.5-flash-001")
