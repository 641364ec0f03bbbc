"""A run's MCP servers through the MCP SDK's client (`runtime.tools.mcp_client.connected`),
each a real stdio server of the standard library only (tests/agents/mcp_hostile.py, or one
written here): tools listed and called, a JSON-RPC error for a call (or a result marked
`isError`) read as an error result the model sees, and a server that cannot start or breaks
off mid-call failing the run by its name."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from evalward.errors import McpFailure
from evalward.resources.agents.mcp import McpServer
from evalward.runtime.agents.process import Launch
from evalward.runtime.tools.mcp_client import McpServers, connected

pytestmark = pytest.mark.integration

HOSTILE = Path(__file__).resolve().parents[2] / "agents" / "mcp_hostile.py"


def server(mode: str) -> McpServer:
    return McpServer.model_validate({"command": {"run": [sys.executable, str(HOSTILE), mode]}})


def with_servers(tmp_path: Path, servers: dict[str, McpServer], use: Any) -> Any:
    """What `use` made of the connected servers, or the McpFailure that ended them."""
    launch = Launch(root=tmp_path, env={"PATH": "/usr/bin:/bin"}, kill_grace=0.5)

    async def go() -> Any:
        async with connected(servers, [], launch, None) as toolbox:
            return await use(toolbox)

    try:
        return asyncio.run(go())
    except McpFailure as failure:
        return failure


def test_a_servers_tools_are_listed_and_called(tmp_path: Path) -> None:
    async def use(toolbox: McpServers) -> Any:
        (tool,) = toolbox.tools
        return tool, await toolbox.call(tool, {"order": "A-1"})

    tool, answer = with_servers(tmp_path, {"desk": server("ok")}, use)

    assert (tool.server, tool.name, tool.offered, tool.qualified) == (
        "desk",
        "echo",
        "echo",
        "desk__echo",
    )
    assert (answer.text, answer.is_error) == ('{"order": "A-1"}', False)


DESK = """\
import json, sys
TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in ("refund", "cancel")]
for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    method, answer = request["method"], {"jsonrpc": "2.0", "id": request["id"]}
    if method == "initialize":
        answer["result"] = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "desk", "version": "1"},
        }
    elif method == "tools/list":
        answer["result"] = {"tools": TOOLS}
    elif request["params"]["name"] == "refund":
        answer["error"] = {"code": -32602, "message": "amount is required"}
    else:
        text = {"type": "text", "text": "already shipped"}
        answer["result"] = {"content": [text], "isError": True}
    print(json.dumps(answer), flush=True)
"""


def test_a_call_the_server_refuses_or_fails_is_an_error_result_the_model_reads(
    tmp_path: Path,
) -> None:
    (tmp_path / "desk.py").write_text(DESK, encoding="utf-8")
    desk = McpServer.model_validate({"command": {"run": [sys.executable, "desk.py"]}})

    async def use(toolbox: McpServers) -> Any:
        return [await toolbox.call(tool, {}) for tool in toolbox.tools]

    refused, failed = with_servers(tmp_path, {"desk": desk}, use)

    assert (refused.text, refused.is_error) == ("error: amount is required (code -32602)", True)
    assert (failed.text, failed.is_error) == ("already shipped", True)


def test_a_server_that_cannot_start_fails_the_run_by_name(tmp_path: Path) -> None:
    async def use(toolbox: McpServers) -> Any:
        return toolbox.tools

    failure = with_servers(tmp_path, {"fine": server("ok"), "broken": server("exit")}, use)

    assert isinstance(failure, McpFailure)
    assert "'broken'" in str(failure)


def test_a_server_that_exits_mid_call_fails_the_run(tmp_path: Path) -> None:
    async def use(toolbox: McpServers) -> Any:
        (tool,) = toolbox.tools
        return await toolbox.call(tool, {})

    failure = with_servers(tmp_path, {"desk": server("exit-call")}, use)

    assert isinstance(failure, McpFailure)
    assert "'desk'" in str(failure) and "tools/call 'echo'" in str(failure)


def test_the_playgrounds_service_is_refused_when_the_run_has_none(tmp_path: Path) -> None:
    async def use(toolbox: McpServers) -> Any:
        return toolbox.tools

    spec = McpServer.model_validate({"service": "/mcp"})
    failure = with_servers(tmp_path, {"orders": spec}, use)

    assert isinstance(failure, McpFailure)
    assert "this run's playground has no service" in str(failure)
