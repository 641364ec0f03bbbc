"""A fixture's `input` as the conversation an agent receives (`runtime/agents/inputs.py`)."""

from __future__ import annotations

import json

import pytest

from evalward.resources.models import FixtureInput
from evalward.runtime.agents.inputs import input_messages, input_text

pytestmark = pytest.mark.unit


def test_a_prompt_is_one_user_message() -> None:
    messages = input_messages(
        FixtureInput.model_validate({"type": "prompt", "payload": {"prompt": "Refund order 7"}})
    )
    assert [(m.role, m.content, m.parts) for m in messages] == [("user", "Refund order 7", ())]
    assert input_text(messages) == "Refund order 7"


def test_messages_keep_their_roles_and_their_parts() -> None:
    fixture_input = FixtureInput.model_validate(
        {
            "type": "messages",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": "ok"},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "second, "},
                        {"type": "text", "text": "cached", "cache_control": {"type": "ephemeral"}},
                    ],
                },
            ],
        }
    )
    messages = input_messages(fixture_input)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[-1].content == "second, cached"
    assert messages[-1].parts == (
        {"type": "text", "text": "second, "},
        {"type": "text", "text": "cached", "cache_control": {"type": "ephemeral"}},
    )
    assert messages[1].parts == ()
    assert input_text(messages) == "second, cached"  # the latest user turn


def test_a_channel_event_is_handed_over_as_json() -> None:
    payload = {"text": "héllo", "from": "@ann", "channel": "#help"}
    (message,) = input_messages(FixtureInput.model_validate({"type": "slack", "payload": payload}))
    head, _, body = message.content.partition("\n")
    assert (message.role, head) == ("user", "A slack event arrived:")
    assert json.loads(body) == payload
    assert "héllo" in body  # not escaped


def test_a_conversation_with_no_user_message_has_no_text() -> None:
    messages = input_messages(
        FixtureInput.model_validate(
            {"type": "messages", "messages": [{"role": "system", "content": "only"}]}
        )
    )
    assert input_text(messages) == ""
