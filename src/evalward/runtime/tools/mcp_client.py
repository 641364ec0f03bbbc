"""A run's MCP servers, connected through the MCP SDK's `ClientSession`: started, asked for
their tools, called, and ended with the run.

Every exchange is bounded: the start (`initialize` and `tools/list`) by the server's
`connectTimeoutSeconds`, each call by its `timeoutSeconds`, every message and the session's
bytes by the guard (runtime/tools/mcp_wire.py). A server that breaks any of these, or the protocol,
fails with `McpFailure` naming it, and the run is an error; a tool that reports an error
(`isError`, or a JSON-RPC error for the call) is an error result the model reads. The SDK is
given no callback, so every request a server makes of the client (sampling, elicitation,
roots) is refused. The SDK's own logging is kept out of evalward's output.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from evalward import __version__
from evalward.errors import HttpFailure, McpFailure
from evalward.resources.agents.mcp import McpServer
from evalward.runtime.agents.process import Launch
from evalward.runtime.tools.mcp_tools import (
    MAX_TOOLS,
    ListedTool,
    McpAnswer,
    McpTool,
    admitted,
    answer_text,
    offered_tools,
)
from evalward.runtime.tools.mcp_wire import Guard, Streams, http_transport, stdio_transport
from evalward.text.cuts import cap_chars
from evalward.text.escaping import printable

T = TypeVar("T")

BROKEN_EXCHANGE = frozenset(
    {types.PARSE_ERROR, types.INVALID_REQUEST, types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT}
)
"""Error codes that say the exchange itself broke, not the tool: the run's error."""
MAX_PAGES = 20

for _name in ("mcp", "mcp_types", "client", "httpx2", "httpcore2"):
    _logger = logging.getLogger(_name)
    _logger.addHandler(logging.NullHandler())
    _logger.propagate = False


@dataclass
class _Connection:
    name: str
    spec: McpServer
    guard: Guard
    session: ClientSession
    listed: list[ListedTool]

    async def bounded(
        self, what: str, seconds: float, setting: str, op: Callable[[], Awaitable[T]]
    ) -> T:
        """`op`, within `seconds` and ended by the session's first fault."""
        if self.guard.failure is not None:
            raise McpFailure(self.guard.failure_for(what))
        error: Exception | None = None
        with anyio.move_on_after(seconds) as scope, self.guard.watching(scope):
            try:
                return await op()
            except Exception as exc:  # whatever the SDK makes of what the server sent
                error = exc
        if self.guard.failure is not None:
            raise McpFailure(self.guard.failure_for(what))
        if error is None:
            raise McpFailure(
                f"MCP server {self.name!r} did not answer {what} within {seconds:g} s "
                f"(mcpServers.{self.name}.{setting})"
            )
        raise McpFailure(f"MCP server {self.name!r}: {what} failed: {_described(error)}")

    async def start(self) -> None:
        """`initialize`, then every page of `tools/list`, within the connect timeout."""
        seconds = self.spec.connect_timeout_seconds
        setting = "connectTimeoutSeconds"
        with anyio.fail_after(seconds):  # the steps share the bound
            await self.bounded("initialize", seconds, setting, self.session.initialize)
            listed: list[ListedTool] = []
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                ask = functools.partial(self.session.list_tools, params=params)
                page = await self.bounded("tools/list", seconds, setting, ask)
                listed += [
                    ListedTool(t.name, t.description or "", t.input_schema) for t in page.tools
                ]
                if len(listed) > MAX_TOOLS:
                    raise McpFailure(
                        f"MCP server {self.name!r}, answering tools/list, listed over "
                        f"{MAX_TOOLS} tools"
                    )
                if not page.next_cursor or page.next_cursor == cursor:
                    break
                cursor = page.next_cursor
            self.listed = admitted(self.name, self.spec, listed)

    async def call(self, tool: str, arguments: dict[str, Any]) -> McpAnswer:
        """The tool's answer. A JSON-RPC error for the call (unknown tool, invalid
        arguments, the server's own failure) is an error the model reads; one that says the
        exchange broke is the run's failure."""

        async def call_tool() -> types.CallToolResult | types.Result | MCPError:
            try:
                return await self.session.call_tool(tool, arguments)
            except MCPError as exc:
                if exc.code in BROKEN_EXCHANGE:
                    raise
                return exc

        what = f"tools/call {tool!r}"
        result = await self.bounded(what, self.spec.timeout_seconds, "timeoutSeconds", call_tool)
        if isinstance(result, MCPError):
            return McpAnswer(f"error: {printable(result.message)} (code {result.code})", True)
        if not isinstance(result, types.CallToolResult):
            raise McpFailure(f"MCP server {self.name!r} answered {what} with another result")
        blocks = [block.model_dump(by_alias=True, mode="json") for block in result.content]
        return McpAnswer(answer_text(blocks, result.structured_content), result.is_error)


def _described(error: Exception) -> str:
    """An error in one line: its first (the SDK's validation errors run to dozens)."""
    if isinstance(error, MCPError):
        return f"{_first_line(error.message)} (code {error.code})"
    return f"{type(error).__name__}: {_first_line(str(error))}"


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return cap_chars(printable(lines[0] if lines else ""), 300)


@dataclass(frozen=True)
class McpServers:
    """The run's connected servers: the agent's tools from MCP, and how to call each."""

    connections: Mapping[str, _Connection]
    tools: Sequence[McpTool]

    async def call(self, tool: McpTool, arguments: dict[str, Any]) -> McpAnswer:
        return await self.connections[tool.server].call(tool.name, arguments)


@contextlib.asynccontextmanager
async def connected(
    servers: Mapping[str, McpServer],
    own_tools: Sequence[str],
    launch: Launch,
    service_url: str | None,
) -> AsyncIterator[McpServers]:
    """Start and connect every server for one run (all at once), and end them with it.
    McpFailure naming the first server (in the definition's order) that could not start.

    The SDK's sessions and evalward's transports hold anyio task groups, which wrap what
    passes through them in exception groups: what leaves here is unwrapped again."""
    guards = {name: Guard(name) for name in servers}
    try:
        async with contextlib.AsyncExitStack() as stack:
            connections: list[_Connection] = []
            for name, spec in servers.items():
                guard = guards[name]
                try:
                    streams = await stack.enter_async_context(
                        _transport(guard, name, spec, launch, service_url)
                    )
                except HttpFailure as exc:  # the CA bundle named cannot be read
                    raise McpFailure(f"MCP server {name!r}: {exc}") from None
                session = ClientSession(
                    streams[0],
                    streams[1],
                    client_info=types.Implementation(name="evalward", version=__version__),
                )
                await stack.enter_async_context(session)
                connections.append(_Connection(name, spec, guard, session, []))
            failures: dict[str, McpFailure] = {}

            async def start(connection: _Connection) -> None:
                try:
                    await connection.start()
                except McpFailure as failure:
                    failures[connection.name] = failure
                except TimeoutError:
                    waiting = " and ".join(connection.guard.waiting.values())
                    failures[connection.name] = McpFailure(
                        f"MCP server {connection.name!r} did not start within "
                        f"{connection.spec.connect_timeout_seconds:g} s"
                        f"{f' (no answer to {waiting})' if waiting else ''} "
                        f"(mcpServers.{connection.name}.connectTimeoutSeconds)"
                    )

            async with anyio.create_task_group() as group:
                for connection in connections:
                    group.start_soon(start, connection)
            for name in servers:
                if name in failures:
                    raise failures[name]
            tools = offered_tools({c.name: c.listed for c in connections}, own_tools)
            yield McpServers({c.name: c for c in connections}, tools)
    except BaseExceptionGroup as group:
        raise _sole(group, guards) from None


def _sole(group: BaseExceptionGroup[BaseException], guards: Mapping[str, Guard]) -> BaseException:
    """The first exception an exception group holds, out of any groups around it; one the
    SDK's own tasks raised (what a server sent broke them) as the McpFailure it means."""
    inner: BaseException = group
    while isinstance(inner, BaseExceptionGroup):
        inner = inner.exceptions[0]
    if not isinstance(inner, Exception) or isinstance(inner, McpFailure):
        return inner
    said = next((g.failure for g in guards.values() if g.failure is not None), None)
    return McpFailure(said or f"an MCP server's connection failed: {_described(inner)}")


def _transport(
    guard: Guard, name: str, spec: McpServer, launch: Launch, service_url: str | None
) -> contextlib.AbstractAsyncContextManager[Streams]:
    if spec.command is not None:
        return stdio_transport(guard, spec.command, launch)
    url = spec.url
    if spec.service is not None:
        if service_url is None:
            raise McpFailure(
                f"MCP server {name!r} is the playground's service (`service: {spec.service}`), "
                "and this run's playground has no service: give the fixture or its Eval a "
                "playground with a `service`"
            )
        url = service_url + spec.service
    assert url is not None, "a server is a command, a url or a service"
    return http_transport(guard, url, spec.timeout_seconds)
