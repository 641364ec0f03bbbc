"""The MCP server `evalward init --mcp` writes into a new repository (cli/init_files/
mcp_server.py), imported and asked as an MCP client asks it: the one tool the agent's fixtures
and mock replies call, with the arguments they give it, and its answers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from evalward.cli.init_files import mcp_server

pytestmark = pytest.mark.unit


def test_it_offers_lookup_order_taking_the_order_id_the_fixtures_pass() -> None:
    (tool,) = asyncio.run(mcp_server.server.list_tools())
    assert tool.name == "lookup_order"
    assert tool.description == "Look up an order's shipping status by its id."
    assert tool.input_schema["required"] == ["order_id"]
    assert tool.input_schema["properties"]["order_id"]["type"] == "string"


def call(order_id: str) -> Any:
    return asyncio.run(mcp_server.server.call_tool("lookup_order", {"order_id": order_id}))


def test_a_known_order_s_status_is_its_answer() -> None:
    for order, status in mcp_server.ORDERS.items():
        (content,) = call(order).content
        assert json.loads(content.text) == {"order": order, "status": status}


def test_an_unknown_order_is_an_error_not_an_answer() -> None:
    with pytest.raises(Exception, match="lookup_order") as raised:
        call("11111")
    assert "no order 11111" in repr(raised.value.__cause__)
