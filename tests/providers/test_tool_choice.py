"""An Agent's `toolChoice` as each call gets it and each API writes it
(`providers/tool_choice.py`): a forced choice holds for the first call only, so the tool loop
can end in an answer."""

from __future__ import annotations

import pytest

from evalward.providers.base import ToolChoice
from evalward.providers.tool_choice import anthropic_choice, choice_for, openai_choice
from evalward.resources.agents.agent import NamedToolChoice

pytestmark = pytest.mark.unit


def test_a_forced_choice_holds_for_the_first_call_only() -> None:
    named = NamedToolChoice(name="lookup_order")
    assert choice_for(named, 0) == ToolChoice("tool", "lookup_order")
    assert choice_for(named, 1) is None
    assert choice_for("required", 0) == ToolChoice("required")
    assert choice_for("required", 3) is None


def test_auto_and_none_hold_for_every_call() -> None:
    for call in (0, 1, 5):
        assert choice_for("auto", call) == ToolChoice("auto")
        assert choice_for("none", call) == ToolChoice("none")
    assert choice_for(None, 0) is None


@pytest.mark.parametrize(
    ("choice", "openai", "anthropic"),
    [
        (None, "auto", None),
        (ToolChoice("auto"), "auto", {"type": "auto"}),
        (ToolChoice("none"), "none", {"type": "none"}),
        (ToolChoice("required"), "required", {"type": "any"}),
        (
            ToolChoice("tool", "refund"),
            {"type": "function", "function": {"name": "refund"}},
            {"type": "tool", "name": "refund"},
        ),
    ],
)
def test_each_api_writes_the_choice_in_its_own_shape(
    choice: ToolChoice | None, openai: object, anthropic: object
) -> None:
    assert openai_choice(choice) == openai
    assert anthropic_choice(choice) == anthropic
