"""A promptfoo provider's `config.mcp` as the imported Agent's `mcpServers` (docs/mcp.md,
"Moving servers to evalward"). evalward names each server and filters each server's own
tools, and sends no credential to a server: a server's `auth` or `headers` are refused, as is
a tool filter over several servers, which evalward cannot split between them.
"""

from __future__ import annotations

import re
from typing import Any

from evalward.importers.promptfoo.source import Node

MCP_KEYS = {
    "enabled",
    "server",
    "servers",
    "timeout",
    "tools",
    "exclude_tools",
    "resetTimeoutOnProgress",
    "maxTotalTimeout",
    "pingOnConnect",
    "debug",
    "verbose",
}
SERVER_KEYS = {"command", "args", "path", "url", "name", "auth", "headers"}
INTERPRETERS = {".py": "python3", ".js": "node", ".mjs": "node", ".ts": "npx"}


def mcp_servers(node: Node, label: str, notes: list[str]) -> dict[str, dict[str, Any]]:
    """`config.mcp` as `mcpServers` (empty when it is not `enabled`)."""
    if not isinstance(node.value, dict):
        raise node.refuse("`config.mcp` is a map: `{enabled: true, server: {...}}`")
    for key, child in node.items():
        if key not in MCP_KEYS:
            raise child.refuse(f"`config.mcp.{key}` has no equivalent in evalward's mcpServers")
    enabled = node.get("enabled")
    if enabled is None or enabled.value is not True:
        notes.append(f"{label}: its MCP servers are not `enabled`, so none is carried over")
        return {}
    listed = [n for key in ("server", "servers") if (n := node.get(key)) is not None]
    entries = [entry for n in listed for entry in n.elements()]
    if not entries:
        raise node.refuse("`config.mcp` is enabled and names no `server` or `servers`")
    servers: dict[str, dict[str, Any]] = {}
    for entry in entries:
        name, server = _server(entry, servers)
        servers[name] = server
    _settings(node, servers, label, notes)
    notes.append(
        f"{label}: its MCP servers start for every run, from the repository (a `command`) or "
        "at their `url`; evalward answers each tool call the model makes through them"
    )
    return servers


def _server(entry: Node, taken: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    value = entry.value
    if not isinstance(value, dict):
        raise entry.refuse("an MCP server is a map: `{command: ..., args: [...]}` or `{url: ...}`")
    for key, child in entry.items():
        if key not in SERVER_KEYS:
            raise child.refuse(f"`{key}` of an MCP server has no equivalent in evalward")
        if key in ("auth", "headers"):
            raise child.refuse(
                f"`{key}`: evalward sends no credential to an MCP server (its URL comes from "
                "the pull request); serve it from the repository or a playground instead"
            )
    name = _name(value.get("name"), taken)
    if isinstance(value.get("url"), str):
        return name, {"url": value["url"]}
    argv: list[str]
    if isinstance(value.get("command"), str):
        args = value.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise entry.refuse("`args` is a list of strings")
        argv = [value["command"], *args]
    elif isinstance(value.get("path"), str):
        path = value["path"]
        interpreter = INTERPRETERS.get("." + path.rsplit(".", 1)[-1])
        if interpreter is None:
            raise entry.refuse(f"`path: {path}`: give a .py or .js server, or its `command`")
        argv = [interpreter, *(["tsx"] if interpreter == "npx" else []), path]
    else:
        raise entry.refuse("an MCP server needs a `command`, a `path` or a `url`")
    return name, {"command": argv}


def _name(given: Any, taken: dict[str, Any]) -> str:
    """The server's name as evalward can write it (letters, digits, `-`, single `_`)."""
    base = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_-]+", "-", str(given or ""))).strip("-_")
    base = base[:32] or "server"
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base}-{number}"
    return name


def _settings(node: Node, servers: dict[str, dict[str, Any]], label: str, notes: list[str]) -> None:
    """The timeout and the tool filters, on every server (the filters only on one)."""
    timeout = node.get("timeout")
    if timeout is not None:
        if not isinstance(timeout.value, int | float) or timeout.value <= 0:
            raise timeout.refuse("`timeout` is milliseconds, a positive number")
        for server in servers.values():
            server["timeoutSeconds"] = timeout.value / 1000
    for key, setting in (("tools", "allow"), ("exclude_tools", "deny")):
        child = node.get(key)
        if child is None:
            continue
        names = [str(n.value) for n in child.elements()]
        if len(servers) > 1:
            raise child.refuse(
                f"`{key}` filters the tools of several servers at once; evalward filters each "
                f"server's own (`mcpServers.<name>.tools.{setting}`): import without it and "
                "write each server's"
            )
        for server in servers.values():
            server["tools"] = {**server.get("tools", {}), setting: names}
    ignored = [
        k for k in ("resetTimeoutOnProgress", "maxTotalTimeout", "pingOnConnect") if node.get(k)
    ]
    if ignored:
        notes.append(
            f"{label}: `{'`, `'.join(ignored)}` of its MCP settings change no reply; evalward "
            "bounds each call by `timeoutSeconds`"
        )
