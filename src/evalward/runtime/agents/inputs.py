"""Turn a fixture's `input` into the conversation an agent receives."""

from __future__ import annotations

import json
from typing import Any

from evalward.providers.base import ChatMessage
from evalward.resources.models import FixtureInput, InputType, Message


def input_messages(fixture_input: FixtureInput) -> list[ChatMessage]:
    """`prompt` becomes one user message; channel payloads are handed over as JSON."""
    if fixture_input.type is InputType.messages:
        return [
            ChatMessage(role=m.role, content=m.text, parts=_parts(m))
            for m in fixture_input.messages
        ]
    if fixture_input.type is InputType.prompt:
        return [ChatMessage(role="user", content=str(fixture_input.payload["prompt"]))]
    payload = json.dumps(fixture_input.payload, ensure_ascii=False, indent=2, sort_keys=True)
    return [
        ChatMessage(
            role="user",
            content=f"A {fixture_input.type.value} event arrived:\n{payload}",
        )
    ]


def _parts(message: Message) -> tuple[dict[str, Any], ...]:
    """A message's content parts as the API takes them (none for a plain text)."""
    if isinstance(message.content, str):
        return ()
    return tuple(part.model_dump(exclude_none=True, by_alias=True) for part in message.content)


def input_text(messages: list[ChatMessage]) -> str:
    """The fixture's input as one text, for a program that reads plain text: the last user
    message (a prompt, or the latest turn of a conversation)."""
    return next((m.content for m in reversed(messages) if m.role == "user"), "")
