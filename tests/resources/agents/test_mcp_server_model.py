"""An Agent's MCP server as written (`resources/agents/mcp.py`): exactly one kind, a command's
shorthand, a service path, names a tool's qualified name can carry, and the filter of the tools
the model is offered. Loaded from YAML at its line: tests/resources/agents/test_mcp_servers.py."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalward.resources.agents.mcp import McpServer, McpToolFilter, check_server_names

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("written", "kind"),
    [
        ({"command": ["python3", "server.py"]}, "command"),
        ({"command": {"run": ["node", "s.js"], "env": ["API_TOKEN"]}}, "command"),
        ({"url": "http://127.0.0.1:9000/mcp"}, "url"),
        ({"service": "/mcp"}, "service"),
    ],
)
def test_each_kind_of_server_as_written(written: dict[str, object], kind: str) -> None:
    server = McpServer.model_validate(written)
    assert server.kind == kind
    if kind == "command":
        assert server.command is not None and server.command.run[0] in ("python3", "node")


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ({}, "this one gives none"),
        ({"url": "http://x/mcp", "service": "/mcp"}, "this one gives url and service"),
        ({"service": "mcp"}, "give a path on the service, starting with `/`"),
        ({"service": "/m cp"}, "give a path on the service"),
        ({"url": "ftp://x"}, "String should match pattern"),
        ({"command": {"run": []}}, "at least 1 item"),
        ({"command": {"run": ["x"], "env": ["1BAD"]}}, "is not an environment variable name"),
        ({"service": "/mcp", "tools": {"deny": ["a", "a"]}}, "names listed twice"),
    ],
)
def test_a_server_that_is_not_one_kind_in_its_shape_is_refused(
    written: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        McpServer.model_validate(written)


def test_the_filter_offers_what_it_allows_and_never_what_it_denies() -> None:
    every = McpToolFilter()
    assert every.admits("anything")
    some = McpToolFilter(allow=["lookup", "refund"], deny=["refund"])
    assert some.admits("lookup")
    assert not some.admits("refund")
    assert not some.admits("delete")


@pytest.mark.parametrize("name", ["orders", "crm-2", "my_server", "A1"])
def test_a_server_name_a_qualified_tool_name_can_carry(name: str) -> None:
    check_server_names({name: McpServer(service="/mcp")})


@pytest.mark.parametrize("name", ["a__b", "_lead", "has space", "x" * 41, "dot.name"])
def test_a_server_name_that_would_break_qualified_names_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="must be letters, digits, `-` and single `_`"):
        check_server_names({name: McpServer(service="/mcp")})
