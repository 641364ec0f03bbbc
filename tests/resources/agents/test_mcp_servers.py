"""An Agent's `mcpServers` as written: one kind per server, names a tool can carry, only on a
declarative agent; and the names and schemas its servers' tools are offered under."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from evalward.errors import McpFailure
from evalward.resources.agents.agent import AgentSpec
from evalward.runtime.tools.mcp_tools import ListedTool, admitted, answer_text, offered_tools

pytestmark = pytest.mark.unit

ORDERS = {"command": ["python3", "mcp/orders.py"]}


def spec(**fields: Any) -> AgentSpec:
    return AgentSpec.model_validate({"models": ["openai/gpt-4.1-mini"], **fields})


def refusal(**fields: Any) -> str:
    with pytest.raises(ValidationError) as caught:
        spec(**fields)
    return str(caught.value)


def test_a_server_is_exactly_one_of_a_command_a_url_and_a_service() -> None:
    both = {"command": ["python3", "s.py"], "url": "http://127.0.0.1:1/mcp"}
    assert "this one gives command and url" in refusal(mcpServers={"s": both})
    assert "this one gives none" in refusal(mcpServers={"s": {}})
    assert "starting with `/`" in refusal(mcpServers={"s": {"service": "mcp"}})
    assert spec(mcpServers={"s": {"service": "/mcp"}}).mcp_servers["s"].kind == "service"


@pytest.mark.parametrize("name", ["a__b", "a.b", "", "-a", "x" * 41])
def test_a_server_name_is_one_a_qualified_tool_name_can_carry(name: str) -> None:
    assert "qualifies its tools' names" in refusal(mcpServers={name: ORDERS})


def test_a_bring_your_own_agent_runs_its_own_servers() -> None:
    runtime = {"command": ["python3", "agent.py"]}
    said = refusal(models=[], runtime=runtime, mcpServers={"orders": ORDERS})
    assert "remove `mcpServers`" in said


def test_a_stdio_server_is_a_program_whose_environment_may_be_built() -> None:
    built = spec(mcpServers={"orders": ORDERS}, environment={"python": "mcp/requirements.txt"})
    assert built.runs_programs
    assert [program.what for program in built.programs()] == ["the MCP server 'orders'"]
    remote = {"orders": {"url": "https://example.test/mcp"}}
    assert "runs none" in refusal(mcpServers=remote, environment={"python": "r.txt"})


def tool(name: str, schema: dict[str, Any] | None = None) -> ListedTool:
    return ListedTool(name, "", schema or {"type": "object"})


def test_clashing_names_are_qualified_by_their_server_and_others_kept() -> None:
    offered = offered_tools(
        {"orders": [tool("lookup"), tool("refund")], "crm": [tool("lookup")]}, ["refund"]
    )
    assert [(t.offered, t.qualified) for t in offered] == [
        ("orders__lookup", "orders__lookup"),
        ("orders__refund", "orders__refund"),
        ("crm__lookup", "crm__lookup"),
    ]
    assert offered_tools({"crm": [tool("note")]}, [])[0].offered == "note"


def test_a_name_no_model_api_takes_is_refused_with_how_to_leave_it_out() -> None:
    with pytest.raises(McpFailure, match=r"tools.deny: \[files.read\]"):
        offered_tools({"fs": [tool("files.read")]}, [])


def test_filters_and_side_effects_must_name_listed_tools() -> None:
    server = spec(mcpServers={"s": {**ORDERS, "tools": {"deny": ["delet"]}}}).mcp_servers["s"]
    with pytest.raises(McpFailure, match=r"tools\.deny names 'delet', which the server does not"):
        admitted("s", server, [tool("delete"), tool("read")])
    allowed = spec(mcpServers={"s": {**ORDERS, "tools": {"allow": ["read"]}}}).mcp_servers["s"]
    assert [t.name for t in admitted("s", allowed, [tool("delete"), tool("read")])] == ["read"]


def deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        (deep(20), "nested more than 32 deep"),
        ({"type": "object", "description": "x" * 70_000}, "bytes (at most 65536)"),
        ({"type": "array"}, 'not `"type": "object"`'),
    ],
)
def test_a_listed_schema_out_of_bounds_is_the_servers_failure(
    schema: dict[str, Any], said: str
) -> None:
    server = spec(mcpServers={"s": ORDERS}).mcp_servers["s"]
    with pytest.raises(
        McpFailure,
        match="MCP server 's', answering tools/list: the tool 't' has an input schema.*"
        + re.escape(said),
    ):
        admitted("s", server, [tool("t", schema)])


def test_a_result_is_its_text_with_other_blocks_named() -> None:
    blocks = [
        {"type": "text", "text": "one"},
        {"type": "image", "mimeType": "image/png", "data": "AAAA"},
        {"type": "resource", "resource": {"uri": "file:///a", "text": "two"}},
    ]
    assert answer_text(blocks, None) == "one\n[image image/png, not shown]\ntwo"
    assert answer_text([], {"ok": True}) == '{"ok": true}'
