"""The tools an agent's MCP servers list, as its model is offered them: filtered, named, bounded.

A server's tool keeps its own name unless another server or one of the agent's own `tools`
has it too; then it is offered as `<server>__<tool>`. Whatever name the model sees, the trace
records the qualified one (`orders__lookup_order`), so assertions, `toolReplay` and
`shadowTools` find it by either name (text/tool_names.py). What a server lists is its
author's text, from the pull request: every listed schema is bounded in size and depth and
every name must be one both vendors accept, or the run is an error naming the server.

This module holds no MCP SDK: the runner imports it always, the SDK only when an agent names
servers (runtime/tools/mcp_client.py).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from evalward.errors import McpFailure
from evalward.resources.agents.mcp import QUALIFIER, McpServer
from evalward.text import jsontext
from evalward.text.cuts import cap_chars

WIRE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}\Z")
"""A tool name OpenAI's and Anthropic's APIs both accept."""

MAX_TOOLS = 200
"""Most tools one server may list."""
MAX_SCHEMA_BYTES = 64 * 1024
"""Largest input schema of one tool, as JSON."""
MAX_SCHEMA_DEPTH = 32
"""Deepest nesting of one tool's input schema."""
MAX_DESCRIPTION_CHARS = 8 * 1024
"""Longest description of one tool (the model reads it whole)."""


@dataclass(frozen=True)
class ListedTool:
    """One tool as its server listed it."""

    name: str
    description: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class McpTool:
    """One server's tool as the model is offered it."""

    server: str
    name: str
    """Its name on its server."""
    offered: str
    """The name the model sees: `name`, or `qualified` where names clash."""
    description: str
    parameters: dict[str, Any]

    @property
    def qualified(self) -> str:
        """The name the trace records: `<server>__<tool>`."""
        return f"{self.server}{QUALIFIER}{self.name}"


@dataclass(frozen=True)
class McpAnswer:
    """A tool call's result as the model reads it."""

    text: str
    is_error: bool


class McpToolbox(Protocol):
    """The run's connected servers (runtime/tools/mcp_client.py), as the tool executor sees them."""

    @property
    def tools(self) -> Sequence[McpTool]: ...

    async def call(self, tool: McpTool, arguments: dict[str, Any]) -> McpAnswer:
        """The tool's answer; McpFailure when its server broke the protocol or a bound."""
        ...


def admitted(name: str, spec: McpServer, listed: Sequence[ListedTool]) -> list[ListedTool]:
    """The listed tools the server's `tools` filter lets through, each checked. Every name the
    filter and `sideEffects` give must be listed: a misspelt `deny` would offer the tool."""
    names = [tool.name for tool in listed]
    for setting, given in (
        ("tools.allow", spec.tools.allow or []),
        ("tools.deny", spec.tools.deny),
        ("sideEffects", spec.side_effects),
    ):
        missing = [n for n in given if n not in names]
        if missing:
            raise McpFailure(
                f"MCP server {name!r}, answering tools/list: mcpServers.{name}.{setting} names "
                f"{', '.join(map(repr, missing))}, which the server does not list (it lists "
                f"{', '.join(names[:20]) or 'no tool'}{', ...' if len(names) > 20 else ''})"
            )
    kept = [tool for tool in listed if spec.tools.admits(tool.name)]
    for tool in kept:
        check_listed(name, tool)
    return kept


def check_listed(server: str, tool: ListedTool) -> None:
    """A tool the model may be offered: its schema an object within the bounds."""
    where = f"MCP server {server!r}, answering tools/list: the tool {cap_chars(tool.name, 80)!r}"
    if len(tool.description) > MAX_DESCRIPTION_CHARS:
        raise McpFailure(f"{where} has a description over {MAX_DESCRIPTION_CHARS} characters")
    try:
        jsontext.check_depth(tool.schema, MAX_SCHEMA_DEPTH)
    except ValueError:
        raise McpFailure(
            f"{where} has an input schema nested more than {MAX_SCHEMA_DEPTH} deep"
        ) from None
    size = len(json.dumps(tool.schema, ensure_ascii=False).encode())
    if size > MAX_SCHEMA_BYTES:
        raise McpFailure(
            f"{where} has an input schema of {size} bytes (at most {MAX_SCHEMA_BYTES})"
        )
    if tool.schema.get("type") != "object":
        raise McpFailure(f'{where} has an input schema that is not `"type": "object"`')


def offered_tools(
    servers: Mapping[str, Sequence[ListedTool]], own_tools: Iterable[str]
) -> list[McpTool]:
    """Every server's admitted tools, named for the model: a name another server or one of
    the agent's own tools also has is qualified by the server's."""
    own = set(own_tools)
    count = Counter(tool.name for listed in servers.values() for tool in listed)
    offered: list[McpTool] = []
    for server, listed in servers.items():
        for tool in listed:
            clash = count[tool.name] > 1 or tool.name in own
            name = f"{server}{QUALIFIER}{tool.name}" if clash else tool.name
            if not WIRE_NAME.match(name):
                shown = cap_chars(tool.name, 80)
                raise McpFailure(
                    f"MCP server {server!r}, answering tools/list: the tool {shown!r} cannot be "
                    f"offered to a model as {cap_chars(name, 80)!r} (a name is 1 to 64 letters, "
                    f"digits, `_` and `-`); leave it out with `tools.deny: [{shown}]`"
                )
            qualified = f"{server}{QUALIFIER}{tool.name}"
            if name in own or qualified in own:  # the trace records it by `qualified`
                raise McpFailure(
                    f"MCP server {server!r}, answering tools/list: its tool {tool.name!r} would "
                    f"be offered as {name!r} and recorded as {qualified!r}, one of which is "
                    "already one of the agent's own tools; rename that tool"
                )
            offered.append(McpTool(server, tool.name, name, tool.description, tool.schema))
    return offered


def answer_text(blocks: Sequence[Mapping[str, Any]], structured: Any) -> str:
    """A result's content as the text the model reads: text blocks and embedded text as they
    are, other blocks named (an image is not sent on); the structured content as JSON when
    there is no content."""
    parts: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "resource":
            resource = block.get("resource") or {}
            if "text" in resource:
                parts.append(str(resource["text"]))
            else:
                parts.append(f"[resource {resource.get('uri', '')} ({resource.get('mimeType')})]")
        elif kind == "resource_link":
            parts.append(f"[resource link {block.get('uri', '')}]")
        else:
            parts.append(f"[{kind} {block.get('mimeType', '')}, not shown]")
    if not parts and structured is not None:
        return json.dumps(structured, ensure_ascii=False)
    return "\n".join(parts)
