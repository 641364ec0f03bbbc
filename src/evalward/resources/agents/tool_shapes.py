"""Tools and tool choices as either vendor writes them, read as an Agent's own.

An Agent's tool is `{name, description, parameters}`. OpenAI writes one as
`{type: function, function: {name, description, parameters}}` and Anthropic as
`{name, description, input_schema}`; both are read as the Agent's shape, so a tool list
copied from either vendor's code (or a promptfoo provider's `config.tools`) loads as written.

An Agent's `toolChoice` is `auto`, `none`, `required` or `{name: <tool>}`; OpenAI's
(`{type: function, function: {name}}`) and Anthropic's (`{type: auto|any|tool|none, name}`)
spellings are read as the same choices. The providers send each in their API's own shape
(providers/tool_choice.py).
"""

from __future__ import annotations

from typing import Any

ANTHROPIC_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


def agent_tool(value: Any) -> Any:
    """A tool in OpenAI's or Anthropic's shape as the Agent's `{name, description,
    parameters}` (anything else is left for the model's own checks)."""
    if not isinstance(value, dict):
        return value
    function = value.get("function")
    if value.get("type") == "function" and isinstance(function, dict):
        rest = {k: v for k, v in value.items() if k not in ("type", "function")}
        return {**function, **rest}
    if "input_schema" in value and "parameters" not in value:
        rest = {k: v for k, v in value.items() if k != "input_schema"}
        return {**rest, "parameters": value["input_schema"]}
    return value


def tool_choice(value: Any) -> Any:
    """A tool choice in OpenAI's or Anthropic's spelling as the Agent's own."""
    if isinstance(value, str):
        return "required" if value == "any" else value
    if not isinstance(value, dict):
        return value
    kind = value.get("type")
    function = value.get("function")
    if kind == "function" and isinstance(function, dict) and set(value) <= {"type", "function"}:
        return {"name": function.get("name")}
    if kind == "tool" and set(value) == {"type", "name"}:
        return {"name": value.get("name")}
    if isinstance(kind, str) and kind in ANTHROPIC_CHOICES and set(value) == {"type"}:
        return ANTHROPIC_CHOICES[kind]
    return value
