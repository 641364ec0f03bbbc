"""What promptfoo sends each model API for one rendered prompt, each provider reading the text
its own way (docs/cli.md, "What each provider is sent"). The import writes what each is sent,
so that both tools put the same question; where promptfoo sends what the API refuses
(`messages` that is not a list), the part is refused with the rewrite that both tools send
alike.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from evalward.errors import Refused
from evalward.importers.promptfoo.source import Node
from evalward.resources.reading import yaml12
from evalward.text import jsontext

ROLES = {"system", "user", "assistant"}
PART_KEYS = {"type", "text", "cache_control"}
SentPrompt = str | list[dict[str, Any]]
"""A text (one user message) or the messages, as the fixture's input."""


def sent(text: str, reads: str, who: str, node: Node, warnings: list[str]) -> SentPrompt:
    """The conversation `who` is sent for the rendered `text`, as its provider `reads` it
    (`PromptfooProvider.reads`)."""
    if reads == "anthropic":
        return _anthropic(text, node, warnings)
    if reads == "text":  # a completion: the prompt as it is
        return text
    return _openai(text, who, node)


def _openai(text: str, who: str, node: Node) -> SentPrompt:
    """promptfoo's `parseChatPrompt`: YAML for `- role:`, else JSON, else the text."""
    trimmed = text.strip()
    if trimmed.startswith("- role:"):
        try:
            parsed = yaml12.load(text)
        except yaml.YAMLError as exc:
            raise node.refuse(
                f"a chat prompt that is not valid YAML, which promptfoo stops at: {exc}"
            ) from None
    else:
        try:
            parsed = jsontext.loads(text)
        except ValueError:
            if _looks_like_json(trimmed):
                raise node.refuse(
                    f"{who} is sent text that looks like JSON but does not parse (or nests "
                    "too deeply to read), which promptfoo gets no reply for (each test an "
                    "error): write it as a JSON list of messages, or as text"
                ) from None
            return text
    if not isinstance(parsed, list) or not parsed or not _all_messages(parsed):
        raise _not_a_list(parsed, who, node)
    return _messages(parsed, node)


def _not_a_list(parsed: Any, who: str, node: Node) -> Refused:
    """Why `parsed`, sent as `messages`, is refused by the API, and the rewrite both tools
    send alike."""
    what = _kind(parsed)
    inner = parsed.get("messages") if isinstance(parsed, dict) else None
    if isinstance(inner, list) and inner and _all_messages(inner):
        what = "the object `{messages: [...]}`"
        rewrite = (
            "Give it the list itself, the messages without `messages:` (`- role: system` …), "
            "in a prompt file of its own that its `prompts:` names; a provider of Anthropic's "
            "Messages API is sent this file as text, and keeps its verdicts while it keeps it"
        )
    else:
        rewrite = "Write the prompt as a list of messages (`{role, content}`), or as text"
    return node.refuse(
        f"{who} is left out: promptfoo sends it this prompt, parsed, as the request's "
        f"`messages`: here {what}, where Chat Completions takes a non-empty list of "
        "messages, so the API refuses every call (HTTP 400) and promptfoo fails each test "
        f"with that error. {rewrite}"
    )


def _kind(value: Any) -> str:
    """A JSON value's kind, as its text would say it."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an empty list" if not value else "a list holding other than messages"
    if isinstance(value, str):
        return "a string"
    return f"the value {json.dumps(value)}"


def _looks_like_json(trimmed: str) -> bool:
    """promptfoo's `looksLikeJson`: text it stops at rather than send as a message."""
    if trimmed.startswith("{") and trimmed.endswith("}"):
        return True
    if trimmed.startswith("[") and trimmed.endswith("]"):
        after = trimmed[1:].lstrip()
        return not after or bool(re.match(r'^(["{\[\d-]|true|false|null)', after))
    return False


def _anthropic(text: str, node: Node, warnings: list[str]) -> SentPrompt:
    """promptfoo's `parseMessages` for Anthropic's Messages API."""
    try:
        parsed = jsontext.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, list):
        return _anthropic_list(parsed, node, warnings)
    system: str | None = None
    turns: list[tuple[str, list[str]]] = []
    for line in (raw.strip() for raw in text.split("\n")):
        if not line:
            continue
        if line.startswith("system:"):
            system = line[len("system:") :].strip()
        elif line.startswith("thinking:"):
            _thinking(line[len("thinking:") :].strip(), node)
        elif line.startswith(("user:", "assistant:")):
            role, _, said = line.partition(":")
            turns.append((role, [said.strip()]))
        elif turns:
            turns[-1][1].append(line)
        else:
            turns.append(("user", [line]))
    if not turns and system is None:
        return text.strip()
    if not turns:
        raise node.refuse(
            "the prompt is only a `system:` line: promptfoo sends Anthropic no message, which "
            "its API refuses; add the user's message"
        )
    if system is None and len(turns) == 1 and turns[0][0] == "user":
        return "\n".join(turns[0][1])
    messages: list[dict[str, Any]] = []
    if system is not None:
        messages.append({"role": "system", "content": [_part(system)]})
    messages += [{"role": role, "content": "\n".join(lines)} for role, lines in turns]
    return messages


def _anthropic_list(parsed: list[Any], node: Node, warnings: list[str]) -> SentPrompt:
    """A JSON list of messages: the first system message's content as `system`, the other
    messages with a role as the turns (a later system message is not sent)."""
    if not all(isinstance(m, dict) for m in parsed):
        raise node.refuse("a JSON list of messages holds something other than a message")
    if any(m.get("thinking") for m in parsed):
        raise node.refuse(
            "a message's `thinking` turns on Claude's extended thinking, which evalward's "
            "Agent has no equivalent of: remove it"
        )
    systems = [m for m in parsed if m.get("role") == "system"]
    if len(systems) > 1:
        line, _ = node.where()
        warnings.append(
            f"{node.source.shown}:{line}: promptfoo sends Anthropic the first system message "
            "only; the others are left out, as it leaves them"
        )
    turns = [m for m in parsed if m.get("role") and m.get("role") != "system"]
    if not turns:
        raise node.refuse(
            "a JSON list with no user or assistant message: promptfoo sends Anthropic no "
            "message, which its API refuses; add the user's message"
        )
    messages = _messages(systems[:1] + turns, node)
    if messages and messages[0]["role"] == "system" and isinstance(messages[0]["content"], str):
        messages[0]["content"] = [_part(messages[0]["content"])]
    return messages


def _thinking(given: str, node: Node) -> None:
    """A `thinking:` line: dropped, and when it holds JSON, promptfoo's thinking settings."""
    try:
        jsontext.loads(given)
    except ValueError:
        return
    raise node.refuse(
        "a `thinking:` line turns on Claude's extended thinking, which evalward's Agent has "
        "no equivalent of: remove it"
    )


def _part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _all_messages(items: list[Any]) -> bool:
    return all(isinstance(m, dict) and "role" in m for m in items)


def _messages(value: list[Any], node: Node) -> list[dict[str, Any]]:
    messages = []
    for message in value:
        role, content = message.get("role"), _text_parts(message.get("content"))
        if role not in ROLES or content is None:
            raise node.refuse(
                f"a message with role {role!r} and {type(message.get('content')).__name__} "
                "content: evalward gives an agent system, user and assistant messages of text "
                "or of text parts"
            )
        messages.append({"role": role, "content": content})
    return messages


def _text_parts(content: Any) -> str | list[dict[str, Any]] | None:
    """A message's content as promptfoo sends it: a text, or its text parts as written
    (`[{type: text, text, cache_control}]`, as Anthropic and OpenAI write them); None for
    anything else (an image, a file), which is refused."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        return None
    for part in content:
        if not isinstance(part, dict) or part.get("type") != "text" or set(part) - PART_KEYS:
            return None
        if not isinstance(part.get("text"), str):
            return None
    return [dict(part) for part in content]
