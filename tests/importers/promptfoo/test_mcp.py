"""A promptfoo provider's `config.mcp` as the imported Agent's `mcpServers`
(`importers/promptfoo/mcp.py`): each server named and started as promptfoo starts it, one
server's tool filter and timeout carried over, and no credential ever sent to a server.
Through `evalward import promptfoo`: tests/importers/promptfoo/test_mcp_migration.py."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.errors import Refused
from evalward.importers.promptfoo.mcp import mcp_servers
from evalward.importers.promptfoo.source import Node, Source
from evalward.resources.reading.yamlsource import parse_documents

pytestmark = pytest.mark.unit


def _servers(mcp: str, notes: list[str] | None = None) -> dict[str, dict[str, Any]]:
    (document,) = parse_documents(f"mcp: {mcp}\n")
    node = Node(document.data["mcp"], Source("promptfooconfig.yaml", document), ("mcp",))
    return mcp_servers(node, "openai:gpt-4.1", [] if notes is None else notes)


def test_servers_are_named_and_started_as_promptfoo_starts_them() -> None:
    servers = _servers(
        "{enabled: true, servers: ["
        "{command: python3, args: [orders.py]}, {path: tools/crm.ts, name: 'crm__v2'},"
        "{url: 'http://127.0.0.1:9000/mcp'}, {path: s.js}]}"
    )
    assert servers == {
        "server": {"command": ["python3", "orders.py"]},
        "crm_v2": {"command": ["npx", "tsx", "tools/crm.ts"]},
        "server-2": {"url": "http://127.0.0.1:9000/mcp"},
        "server-3": {"command": ["node", "s.js"]},
    }


def test_one_server_s_filter_and_timeout_are_carried_over() -> None:
    notes: list[str] = []
    servers = _servers(
        "{enabled: true, timeout: 5000, tools: [lookup], exclude_tools: [refund],"
        " pingOnConnect: true, server: {command: node, args: [s.js]}}",
        notes,
    )
    assert servers == {
        "server": {
            "command": ["node", "s.js"],
            "timeoutSeconds": 5.0,
            "tools": {"allow": ["lookup"], "deny": ["refund"]},
        }
    }
    assert any("`pingOnConnect` of its MCP settings change no reply" in n for n in notes)


def test_servers_not_enabled_are_not_carried_over_and_said_so() -> None:
    notes: list[str] = []
    assert _servers("{server: {command: node}}", notes) == {}
    assert notes == ["openai:gpt-4.1: its MCP servers are not `enabled`, so none is carried over"]


@pytest.mark.parametrize(
    ("mcp", "message"),
    [
        (
            "{enabled: true, server: {url: 'http://x', headers: {a: b}}}",
            "evalward sends no credential to an MCP server",
        ),
        (
            "{enabled: true, server: {url: 'http://x', auth: {token: t}}}",
            "evalward sends no credential to an MCP server",
        ),
        (
            "{enabled: true, tools: [a], servers: [{command: a}, {command: b}]}",
            "filters the tools of several servers at once",
        ),
        ("{enabled: true}", "names no `server` or `servers`"),
        ("{enabled: true, server: {path: s.rb}}", "give a .py or .js server"),
        ("{enabled: true, server: {command: a, args: [1]}}", "`args` is a list of strings"),
        ("{enabled: true, timeout: -1, server: {command: a}}", "`timeout` is milliseconds"),
        ("{enabled: true, retries: 3, server: {command: a}}", "`config.mcp.retries` has no"),
    ],
)
def test_what_evalward_will_not_do_is_refused(mcp: str, message: str) -> None:
    with pytest.raises(Refused) as raised:
        _servers(mcp)
    assert message in raised.value.problem.message
