"""A call's tool choice (`ChatRequest.tool_choice`) in each API's own shape."""

from __future__ import annotations

from typing import Any

from evalward.providers.base import ToolChoice
from evalward.resources.agents.agent import NamedToolChoice


def openai_choice(choice: ToolChoice | None) -> Any:
    """Chat Completions' `tool_choice`; "auto" when none is set (llama-cpp-python's server
    ignores the tools without it)."""
    if choice is None:
        return "auto"
    if choice.mode == "tool":
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode


def anthropic_choice(choice: ToolChoice | None) -> dict[str, Any] | None:
    """The Messages API's `tool_choice` (None: its default, `auto`)."""
    if choice is None:
        return None
    if choice.mode == "tool":
        return {"type": "tool", "name": choice.name}
    return {"type": "any" if choice.mode == "required" else choice.mode}


def gemini_choice(choice: ToolChoice | None) -> dict[str, Any] | None:
    """The Gemini API's `toolConfig` (None: its default, `AUTO`): a required call is `ANY`,
    one of a named tool `ANY` limited to that name."""
    if choice is None:
        return None
    mode = {"auto": "AUTO", "none": "NONE"}.get(choice.mode, "ANY")
    config: dict[str, Any] = {"mode": mode}
    if choice.mode == "tool":
        config["allowedFunctionNames"] = [choice.name]
    return {"functionCallingConfig": config}


def choice_for(chosen: str | NamedToolChoice | None, call: int) -> ToolChoice | None:
    """An Agent's `toolChoice` on the `call`-th model call (0: the first) of a run or of a
    user turn: a forced one (`required`, a named tool) holds for the first call only, so the
    tool loop can end in an answer; `auto` and `none` hold for every call."""
    if chosen is None:
        return None
    if isinstance(chosen, NamedToolChoice):
        return ToolChoice("tool", chosen.name) if call == 0 else None
    if chosen == "required":
        return ToolChoice("required") if call == 0 else None
    return ToolChoice("none" if chosen == "none" else "auto")
