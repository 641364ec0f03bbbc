"""Tools and tool choices copied from either vendor's code read as an Agent's own
(`resources/agents/tool_shapes.py`); anything else is left as written for the model's own checks."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalward.resources.agents.agent import AgentSpec, Tool, ToolMock
from evalward.resources.agents.tool_shapes import agent_tool, tool_choice

pytestmark = pytest.mark.unit

PARAMETERS = {"type": "object", "properties": {"id": {"type": "integer"}}}
AGENT_TOOL = {"name": "lookup", "description": "Find an order", "parameters": PARAMETERS}


@pytest.mark.parametrize(
    "written",
    [
        AGENT_TOOL,
        {"type": "function", "function": AGENT_TOOL},
        {"name": "lookup", "description": "Find an order", "input_schema": PARAMETERS},
    ],
)
def test_a_tool_in_any_vendor_s_shape_is_the_agent_s(written: dict[str, object]) -> None:
    assert agent_tool(written) == AGENT_TOOL


def test_what_a_tool_adds_to_the_vendor_s_shape_is_kept_for_the_model_to_refuse() -> None:
    written = {"type": "function", "function": AGENT_TOOL, "strict": True}
    assert agent_tool(written) == AGENT_TOOL | {"strict": True}
    both = {"name": "x", "input_schema": {}, "parameters": PARAMETERS}
    assert agent_tool(both) is both  # neither shape alone: left for the schema to name
    assert agent_tool("lookup") == "lookup"


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("any", "required"),
        ({"name": "lookup"}, {"name": "lookup"}),
        ({"type": "function", "function": {"name": "lookup"}}, {"name": "lookup"}),
        ({"type": "tool", "name": "lookup"}, {"name": "lookup"}),
        ({"type": "any"}, "required"),
        ({"type": "auto"}, "auto"),
        ({"type": "none"}, "none"),
    ],
)
def test_each_vendor_s_tool_choice_is_the_agent_s(written: object, meant: object) -> None:
    assert tool_choice(written) == meant


@pytest.mark.parametrize(
    "written",
    [
        {"type": "tool", "name": "lookup", "disable_parallel_tool_use": True},
        {"type": "auto", "extra": 1},
        {"type": "function", "function": {"name": "x"}, "other": 2},
        7,
        {"type": ["tool"]},  # unhashable: looking it up among the words was a TypeError
        {"type": {"name": "x"}},
    ],
)
def test_a_choice_with_fields_beyond_a_vendor_s_is_left_as_written(written: object) -> None:
    assert tool_choice(written) == written


def test_a_tool_choice_naming_a_tool_the_agent_does_not_have_is_refused() -> None:
    """It forces a call no run can make: the provider refuses the request, or the model
    answers with none. Validate passed it, and so did a run with a mock provider."""
    agent = {
        "models": ["openai/gpt-4.1-mini"],
        "tools": [{"name": "lookup_order", "description": "Find an order."}],
    }
    with pytest.raises(ValidationError) as refused:
        AgentSpec.model_validate({**agent, "toolChoice": {"name": "lookup_ordr"}})
    assert (
        "`toolChoice` names the tool 'lookup_ordr', which the agent does not have (did you mean "
        "'lookup_order'?); its tools: lookup_order"
    ) in str(refused.value)
    AgentSpec.model_validate({**agent, "toolChoice": {"name": "lookup_order"}})
    # an MCP server's tools are known only as it lists them
    server = {"orders": {"command": ["python3", "server.py"]}}
    AgentSpec.model_validate({**agent, "mcpServers": server, "toolChoice": {"name": "refund"}})


@pytest.mark.parametrize(
    "output", ["{{ order_id ", {"status": ["{% if x %}shipped"]}], ids=["text", "nested"]
)
def test_a_mock_output_template_that_does_not_parse_is_refused(output: object) -> None:
    """It failed at every call, the model told so in the tool's reply, the run green."""
    with pytest.raises(ValidationError) as refused:
        ToolMock.model_validate({"output": output})
    assert "does not parse: unexpected end of template" in str(refused.value).lower()
    ToolMock.model_validate({"output": "Order {{ order_id }} {{ '{{' }}"})


@pytest.mark.parametrize(
    "output",
    [
        "{{ order_id }} {{ carrier | default('post') }}",
        {"lines": "{% for item in items %}{{ loop.index }}: {{ item.sku }}{% endfor %}"},
        "{% set total = items | length %}{{ total }} of {{ range(3) | list | length }}",
        "{% if order_id %}{{ order_id | upper }}{% endif %}",
    ],
    ids=["an optional argument", "a loop", "set and a global", "a test"],
)
def test_a_mock_template_of_the_tool_s_arguments_and_jinja_s_own_names_loads(
    output: object,
) -> None:
    """Only a name that is neither an argument nor one the template makes or Jinja has is
    refused: an optional argument the model leaves out renders as nothing."""
    parameters = {
        "type": "object",
        "properties": {"order_id": {}, "carrier": {}, "items": {}},
        "required": ["order_id"],
    }
    Tool.model_validate({"name": "lookup", "parameters": parameters, "mock": {"output": output}})


@pytest.mark.parametrize(
    "extra",
    [
        {"additionalProperties": {"type": "string"}},
        {"additionalProperties": True},
        {"patternProperties": {"^x-": {"type": "string"}}},
        {"anyOf": [{"required": ["sku"]}, {"required": ["order_id"]}]},
    ],
    ids=["additional", "additional: true", "patterns", "combined"],
)
def test_a_mock_template_of_a_tool_whose_arguments_are_free_form_loads(
    extra: dict[str, object],
) -> None:
    """The model may name an argument beside `properties` there: a template may too."""
    parameters = {"type": "object", "properties": {"order_id": {}}, **extra}
    mock = {"output": "looked up {{ sku }}"}
    Tool.model_validate({"name": "lookup", "parameters": parameters, "mock": mock})
    with pytest.raises(ValidationError, match="no argument of tool 'lookup'"):
        Tool.model_validate(
            {"name": "lookup", "parameters": {"type": "object", "properties": {}}, "mock": mock}
        )
