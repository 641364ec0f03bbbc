"""Tool calls a framework keeps in the text of its prompts: DSPy's ReAct.

DSPy sends no `tools` field. Its ReAct module asks the model, in the prompt, for three output
fields, and the model answers in text (DSPy's ChatAdapter, or JSON under its JSONAdapter):

    [[ ## next_thought ## ]]
    I should look the order up.
    [[ ## next_tool_name ## ]]
    lookup_order
    [[ ## next_tool_args ## ]]
    {"order_id": "12345"}

DSPy runs the tool and sends the whole trajectory back in its next request's user message,
one numbered group per step (`tool_name_0`, `tool_args_0`, `observation_0`, …). So a reply
names the tool calls (`calls_in_reply`) and the requests that follow carry their results
(`trajectory`); `finish`, ReAct's way to stop, is no tool. A reply is read so only when its
request asked for those fields (`asks_for_calls`). The model proxy reads both
(`runtime.observed`), so the calls are `tool_call` and `tool_result` steps like any other.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalward.text import jsontext

FINISH = "finish"
_FIELD = re.compile(r"^\[\[ ## (\w+) ## \]\][ \t]*$", re.MULTILINE)
_STEP_FIELD = re.compile(r"^(thought|tool_name|tool_args|observation)_(\d+)\Z")


@dataclass(frozen=True)
class TextCall:
    """A tool call written in text: its name, arguments and (once sent back) result."""

    tool: str
    arguments: dict[str, Any]
    observation: str | None = None


def fields(text: str) -> dict[str, str]:
    """DSPy's `[[ ## name ## ]]` fields of a message, by name (the last of a name wins)."""
    marks = list(_FIELD.finditer(text))
    ends = [mark.start() for mark in marks[1:]] + [len(text)]
    return {m.group(1): text[m.end() : end].strip() for m, end in zip(marks, ends, strict=False)}


def arguments(text: str | Mapping[str, Any]) -> dict[str, Any]:
    """Tool arguments as DSPy writes them: JSON, or a Python dict literal. A literal is taken
    only as JSON would hold it (its tuples as lists; bytes, a set, a complex number or an
    infinity, which the trace could not write, make it none), and either is read by
    `jsontext`, so that a lone surrogate (`'\\ud800'`) is U+FFFD as anywhere else."""
    if isinstance(text, Mapping):
        return dict(text)
    for parse in (_json, _literal):
        try:
            value = parse(text)
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
            continue
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items()}
    return {}


def _json(text: str) -> Any:
    return jsontext.loads(text, max_depth=jsontext.AGENT_DEPTH)


def _literal(text: str) -> Any:
    return _json(json.dumps(ast.literal_eval(text), allow_nan=False))


def asks_for_calls(body: Mapping[str, Any]) -> bool:
    """Whether a request asks the model for ReAct's fields: DSPy lists them in its system
    instructions (`[[ ## next_tool_name ## ]]`, or the JSON adapter's `next_tool_name`). Only
    then is a reply's text read for a call: a model's words that merely look like one (its
    answer quoting such a JSON object) call no tool."""
    return "next_tool_name" in instructions(body)


_LISTED = re.compile(
    r"^[ \t]*\(\d+\) ([^\s,]+?)(?:, whose description is|\. It takes arguments|\.?[ \t]*$)",
    re.MULTILINE,
)
"""A tool as DSPy's ReAct lists it in its instructions: `(1) lookup_order, whose description
is <desc>…</desc>. It takes arguments {…}.` (`(1) lookup_order. It takes …` without one)."""
_LITERAL = re.compile(r"`next_tool_name` \(Literal\[([^\]\n]*)\]\)")
"""The `next_tool_name` field as DSPy's adapters describe it:
`Literal['lookup_order', 'finish']`."""
_ONE_OF = re.compile(r"\{next_tool_name\}[^\n]*? one of: ([^\n]*)")
"""Its ChatAdapter's note on the value: `must exactly match … one of: lookup_order; finish`."""


def offered(body: Mapping[str, Any]) -> list[str] | None:
    """The tools a request that asks for ReAct's fields offers the model: the ones its
    instructions list (each tool's line, the `next_tool_name` field's values), `finish`
    aside: it sends no `tools` field, so these are what a base fixture's guard of a renamed
    tool is held to. None where it lists none evalward can read: what it offered is not
    known, and undecided is never a pass."""
    said = instructions(body)
    names = _LISTED.findall(said)
    for literal in _LITERAL.findall(said):
        names += [name.strip().strip("'\"") for name in literal.split(",")]
    for listed in _ONE_OF.findall(said):
        names += [name.strip() for name in listed.split(";")]
    found = [name for name in dict.fromkeys(names) if name and name != FINISH]
    return found or None


def instructions(body: Mapping[str, Any]) -> str:
    """A request's system instructions: Chat Completions' and Responses' `system` and
    `developer` messages, Anthropic's `system`, Responses' `instructions`."""
    parts = [_text(body.get("system")), _text(body.get("instructions"))]
    messages = body.get("messages", body.get("input"))
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            parts.append(_text(message.get("content")))
    return "\n".join(parts)


def calls_in_reply(text: str) -> list[TextCall]:
    """The tool call a ReAct reply asks for (none for `finish` or any other reply)."""
    found = fields(text)
    if "next_tool_name" not in found:
        found = _json_fields(text)
    name = str(found.get("next_tool_name", "")).strip().strip("'\"")
    if not name or name == FINISH:
        return []
    return [TextCall(name, arguments(found.get("next_tool_args", "{}")))]


def _json_fields(text: str) -> dict[str, Any]:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return {}
    try:
        value = _json(text[start : end + 1])
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def trajectory(text: str) -> list[TextCall]:
    """The steps a ReAct request's trajectory holds, with their observations, in order."""
    steps: dict[int, dict[str, str]] = {}
    for name, value in fields(text).items():
        match = _STEP_FIELD.match(name)
        if match:
            steps.setdefault(int(match.group(2)), {})[match.group(1)] = value
    out = []
    for _, step in sorted(steps.items()):
        tool = step.get("tool_name", "").strip()
        if tool and tool != FINISH and "observation" in step:
            out.append(TextCall(tool, arguments(step.get("tool_args", "{}")), step["observation"]))
    return out


def request_text(body: Mapping[str, Any]) -> str:
    """The text of a request's last user message (Chat Completions, Messages, Responses)."""
    messages = body.get("messages", body.get("input"))
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, dict) and message.get("role") == "user":
            return _text(message.get("content"))
    return body["input"] if isinstance(body.get("input"), str) else ""


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""
