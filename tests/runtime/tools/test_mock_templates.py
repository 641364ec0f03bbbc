"""A tool's mock output rendered over the call's arguments, in jinja2's sandbox."""

from __future__ import annotations

import pytest

from evalward.runtime.tools.tools import render_mock

pytestmark = pytest.mark.unit


def test_every_string_of_a_mock_output_renders_over_the_arguments() -> None:
    output = {"order": "{{ order_id }}", "lines": ["{{ qty * 2 }}", 3], "note": "plain"}
    assert render_mock(output, {"order_id": "A-7", "qty": 4}) == {
        "order": "A-7",
        "lines": ["8", 3],
        "note": "plain",
    }


def test_a_broken_template_is_the_tools_error_not_the_runs() -> None:
    shown = render_mock("{{ order_id ", {"order_id": "A-7"})
    assert shown.startswith("error: the mock output template failed:")


def test_a_template_cannot_reach_past_the_sandbox() -> None:
    """An agent's arguments are hostile, and so is a template that walks to Python's
    internals: the sandbox refuses it, and the refusal is the tool's output."""
    escape = "{{ ''.__class__.__mro__[1].__subclasses__() }}"
    shown = render_mock(escape, {})
    assert shown.startswith("error: the mock output template failed:")
    assert "is unsafe" in shown
