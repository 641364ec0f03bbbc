"""Transcripts teams already have, converted into the one Trace model.

An OpenAI Chat Completions `messages` list and an Anthropic Messages `messages` list (with
`tool_use` / `tool_result` blocks) become numbered steps: user turns are `input`, assistant
text is `assistant` (the last assistant text with no tool call after it is `final`), tool
calls and results keep their name, arguments (always an object) and output.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from evalward.errors import ProtocolError
from evalward.rundata.trace import StepType, Trace, tool_arguments


def from_openai_messages(messages: Iterable[Mapping[str, Any]]) -> Trace:
    trace = Trace()
    names: dict[str, str] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        content = _text(message.get("content"))
        if role in ("system", "developer"):
            continue
        if role == "user":
            trace.add(StepType.input, content=content)
        elif role == "assistant":
            if content:
                trace.add(StepType.assistant, content=content)
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                name = str(function.get("name") or "")
                call_id = str(call.get("id") or "")
                names[call_id] = name
                trace.add(
                    StepType.tool_call,
                    tool=name,
                    call_id=call_id or None,
                    arguments=tool_arguments(function.get("arguments")),
                )
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            trace.add(
                StepType.tool_result,
                tool=names.get(call_id) or message.get("name"),
                call_id=call_id or None,
                output=content,
            )
        else:
            raise ProtocolError(f"messages[{index}]: unknown role {role!r}")
    _mark_final(trace)
    return trace


def from_anthropic_messages(messages: Iterable[Mapping[str, Any]]) -> Trace:
    trace = Trace()
    names: dict[str, str] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise ProtocolError(f"messages[{index}]: unknown role {role!r}")
        blocks = message.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        for block in blocks or []:
            kind = block.get("type")
            if kind == "text":
                step = StepType.input if role == "user" else StepType.assistant
                trace.add(step, content=str(block.get("text") or ""))
            elif kind == "tool_use":
                call_id = str(block.get("id") or "")
                names[call_id] = str(block.get("name") or "")
                trace.add(
                    StepType.tool_call,
                    tool=names[call_id],
                    call_id=call_id or None,
                    arguments=tool_arguments(block.get("input")),
                )
            elif kind == "tool_result":
                call_id = str(block.get("tool_use_id") or "")
                trace.add(
                    StepType.tool_result,
                    tool=names.get(call_id),
                    call_id=call_id or None,
                    output=_text(block.get("content")),
                    is_error=bool(block.get("is_error", False)),
                )
    _mark_final(trace)
    return trace


def _mark_final(trace: Trace) -> None:
    """The last assistant text, when nothing but more text follows it, is the answer."""
    for step in reversed(trace.steps):
        if step.type is StepType.assistant:
            step.type = StepType.final
            return
        if step.type is not StepType.input:
            return


def _text(content: object) -> str:
    """Content as text: a string, or the text parts of a content-block list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text") or "")
            for part in content
            if isinstance(part, Mapping) and part.get("type") in ("text", "output_text")
        ]
        return "".join(parts)
    return json.dumps(content, ensure_ascii=False)
