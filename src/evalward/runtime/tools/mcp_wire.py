"""The bytes between evalward and an MCP server, which is code from the pull request.

The MCP SDK speaks the protocol; it bounds none of what a server sends (a message, a
session), ties no malformed frame or misaddressed reply to the call it broke, and cannot
start a server as another user. So evalward supplies the transport's two ends:

- a stdio server is started by `process.spawn` as any program of the checkout (the side's
  agent user, a scratch environment with no secret, a private HOME, the side's working copy,
  the agent's built environment) and its stdout read a line at a time by a bounded reader;
- an HTTP server is reached through the SDK's streamable-HTTP client over an httpx transport
  that counts every byte of every reply and refuses a compressed one;
- between either and the SDK's `ClientSession`, a `Guard` checks every message: JSON-RPC,
  each reply to a request that was sent and is still waiting, within the session's bytes.

The first fault is the session's: the guard cancels whatever call is waiting, which then
fails with that fault's words (`McpFailure`), and the run is an error naming the server
and the requests the fault broke (`tools/call` with its tool).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp_types import (
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from evalward.errors import AgentRunError, McpFailure
from evalward.http.client import tls_context
from evalward.resources.agents.mcp import McpCommand
from evalward.runtime.agents.process import Launch, kill_group, limited_env, read_tail, spawn
from evalward.runtime.agents.process import tail as tail_text
from evalward.text import jsontext
from evalward.text.cuts import cap_chars
from evalward.text.escaping import printable

MESSAGE_BYTES = 4 * 1024 * 1024
"""Largest message a server may send (a line on stdio, a JSON reply or an event on HTTP)."""
SESSION_BYTES = 64 * 1024 * 1024
"""Most bytes a server may send in one run."""
MESSAGE_DEPTH = 64
"""Deepest nesting of one message."""
SERVER_REQUESTS = 32
"""Most requests a server may make of evalward in one run (each is refused)."""
CHUNK = 64 * 1024
"""What a stdio server's stdout is read in, and its stream's limit: evalward holds at most
twice that of it unread (then the pipe waits), where a message is bounded to 4 MiB."""

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


@dataclass
class Guard:
    """One session's bounds and faults."""

    server: str
    message_bytes: int = MESSAGE_BYTES
    session_bytes: int = SESSION_BYTES
    failure: str | None = None
    broke: str = ""
    """What the failure broke: the requests waiting when it came, or nothing."""
    received: int = 0
    server_requests: int = 0
    waiting: dict[tuple[type, Any], str] = field(default_factory=dict)
    """The requests sent and not yet answered, by id (its type too: `"1"` is not 1): what
    each asked (`tools/list`, `tools/call 'refund'`), for the fault that breaks it."""
    _scopes: set[anyio.CancelScope] = field(default_factory=set)

    def fail(self, why: str) -> None:
        """The session's first fault, naming the requests it broke; the call waiting on it
        ends now."""
        if self.failure is None:
            self.broke = " and ".join(self.waiting.values())
            answering = f", answering {self.broke}," if self.broke else ""
            self.failure = f"MCP server {self.server!r}{answering} {why}"
        for scope in self._scopes:
            scope.cancel()

    def failure_for(self, what: str) -> str:
        """The failure as the request `what` meets it: one that came while no request was
        waiting says it was met before `what` was answered."""
        assert self.failure is not None
        return self.failure if self.broke else f"{self.failure} (before {what} was answered)"

    @contextlib.contextmanager
    def watching(self, scope: anyio.CancelScope) -> Any:
        """Cancel `scope` on a fault, for as long as the block runs."""
        self._scopes.add(scope)
        if self.failure is not None:
            scope.cancel()
        try:
            yield
        finally:
            self._scopes.discard(scope)

    def count(self, size: int) -> bool:
        """Count bytes received; False (after failing) past the session's bound."""
        self.received += size
        if self.received > self.session_bytes:
            self.fail(f"sent more than {self.session_bytes // (1024 * 1024)} MiB in one run")
        return self.failure is None

    def sent(self, message: JSONRPCMessage) -> None:
        if isinstance(message, JSONRPCRequest):
            self.waiting[(type(message.id), message.id)] = asked(message)

    def admits(self, message: JSONRPCMessage) -> bool:
        """Whether a message from the server goes on to the session; False after failing."""
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            key = (type(message.id), message.id)
            if key not in self.waiting:
                shown = printable(cap_chars(repr(message.id), 40))
                what = "an error" if isinstance(message, JSONRPCError) else "a reply"
                self.fail(f"sent {what} for no request waiting (id {shown})")
                return False
            del self.waiting[key]
        elif isinstance(message, JSONRPCRequest):
            self.server_requests += 1
            if self.server_requests > SERVER_REQUESTS:
                self.fail(f"made more than {SERVER_REQUESTS} requests of the client")
                return False
        return self.failure is None


def asked(request: JSONRPCRequest) -> str:
    """What a request asks, as a message names it: its method and, for a call, the tool."""
    if request.method == "tools/call" and isinstance(request.params, dict):
        tool = request.params.get("name")
        if isinstance(tool, str):
            return f"tools/call {printable(cap_chars(tool, 80))!r}"
    return printable(cap_chars(request.method, 80))


def parse_message(line: bytes, guard: Guard) -> JSONRPCMessage | None:
    """One line of a stdio server: a JSON-RPC message, or None after failing."""
    try:
        data = jsontext.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        shown = printable(cap_chars(line.decode("utf-8", "replace"), 80))
        guard.fail(f"wrote a line that is not JSON ({exc}): {shown}")
        return None
    try:
        jsontext.check_depth(data, MESSAGE_DEPTH)
    except ValueError:
        guard.fail(f"wrote a message nested more than {MESSAGE_DEPTH} deep")
        return None
    try:
        return jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"][1:]) or "the message"
        guard.fail(f"wrote a message that is not JSON-RPC 2.0 ({where}: {first['msg']})")
        return None


async def _relay_in(
    guard: Guard, source: Any, target: MemoryObjectSendStream[SessionMessage | Exception]
) -> None:
    """Server to session: each message checked by the guard."""
    async with target:
        async for item in source:
            if isinstance(item, Exception):
                guard.fail(
                    f"sent a message that is not MCP ({cap_chars(printable(str(item)), 200)})"
                )
                return
            if _too_deep(item.message):
                guard.fail(f"sent a message nested more than {MESSAGE_DEPTH} deep")
                return
            if not guard.admits(item.message):
                return
            await target.send(item)


def _too_deep(message: JSONRPCMessage) -> bool:
    """Whether a message the SDK parsed (an HTTP reply or event) nests deeper than a stdio
    line may: its payload sits one level in, an error's data two."""
    if isinstance(message, JSONRPCError):
        payload, within = message.error.data, MESSAGE_DEPTH - 2
    elif isinstance(message, JSONRPCResponse):
        payload, within = message.result, MESSAGE_DEPTH - 1
    else:
        payload, within = message.params, MESSAGE_DEPTH - 1
    try:
        jsontext.check_depth(payload, within)
    except ValueError:
        return True
    return False


async def _relay_out(
    guard: Guard, source: MemoryObjectReceiveStream[SessionMessage], target: Any
) -> None:
    """Session to server: each request's id noted as waiting."""
    async with target:
        async for item in source:
            guard.sent(item.message)
            await target.send(item)


@contextlib.asynccontextmanager
async def guarded(guard: Guard, inner: tuple[Any, Any]) -> AsyncIterator[Streams]:
    """The session's streams over a transport's (the SDK's), every message through `guard`."""
    from_server, to_server = inner
    to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    session_writes, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as group:
        group.start_soon(_relay_in, guard, from_server, to_session)
        group.start_soon(_relay_out, guard, from_session, to_server)
        try:
            yield session_reads, session_writes
        finally:
            group.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def stdio_transport(
    guard: Guard, command: McpCommand, launch: Launch
) -> AsyncIterator[Streams]:
    """A stdio server started as a program of the checkout, for as long as the block runs;
    its process group is ended on the way out."""
    env = limited_env(launch.env, command.env, launch.extra_env, sandbox=launch.sandbox)
    try:
        process = await spawn(
            command.run, cwd=launch.root, env=env, sandbox=launch.sandbox, stream_limit=CHUNK
        )
    except AgentRunError as exc:
        raise McpFailure(f"MCP server {guard.server!r} could not start: {exc}") from None
    reads, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    session_writes, writes = anyio.create_memory_object_stream[SessionMessage](0)
    stderr = asyncio.ensure_future(read_tail(process.stderr, 16 * 1024))
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_read_stdout, guard, process, reads, stderr)
            group.start_soon(_write_stdin, guard, process, writes)
            try:
                yield session_reads, session_writes
            finally:
                group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            left = await kill_group(process, launch.kill_grace, sandbox=launch.sandbox)
            if left:  # the run's error, as for any program of the checkout
                launch.left_behind.append(f"MCP server {guard.server!r}: {left}")
            stderr.cancel()
            await asyncio.gather(stderr, return_exceptions=True)


async def _read_stdout(
    guard: Guard,
    process: asyncio.subprocess.Process,
    target: MemoryObjectSendStream[SessionMessage | Exception],
    stderr: asyncio.Future[bytes],
) -> None:
    """Lines of the server's stdout, each at most `message_bytes`, scanned once each."""
    assert process.stdout is not None
    buffer = bytearray()
    async with target:
        while True:
            chunk = await process.stdout.read(CHUNK)
            if not chunk:
                await _ended(guard, process, stderr)
                return
            if not guard.count(len(chunk)):
                return
            scanned = len(buffer)
            buffer += chunk
            start = 0
            while (end := buffer.find(b"\n", scanned)) != -1:
                line = bytes(buffer[start:end]).rstrip(b"\r")
                start = scanned = end + 1
                if not line.strip():
                    continue
                if len(line) > guard.message_bytes:
                    guard.fail(_over(guard))
                    return
                message = parse_message(line, guard)
                if message is None or not guard.admits(message):
                    return
                await target.send(SessionMessage(message))
            del buffer[:start]
            if len(buffer) > guard.message_bytes:
                guard.fail(_over(guard))
                return


def _over(guard: Guard) -> str:
    return f"wrote a message over {guard.message_bytes // (1024 * 1024)} MiB"


async def _ended(
    guard: Guard, process: asyncio.subprocess.Process, stderr: asyncio.Future[bytes]
) -> None:
    """The server closed its stdout: say how it ended, with its last words on stderr."""
    with anyio.move_on_after(2):
        await process.wait()
        await asyncio.wait({stderr})
    words = ""
    if stderr.done() and not stderr.cancelled():
        lines = tail_text(stderr.result(), 500).strip().splitlines()
        words = f": {printable(lines[-1])}" if lines else ""
    if process.returncode is None:
        guard.fail(f"closed its stdout{words}")
    else:
        guard.fail(f"exited with code {process.returncode}{words}")


async def _write_stdin(
    guard: Guard,
    process: asyncio.subprocess.Process,
    source: MemoryObjectReceiveStream[SessionMessage],
) -> None:
    assert process.stdin is not None
    stdin = process.stdin
    async with source:
        async for item in source:
            guard.sent(item.message)
            data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
            try:
                stdin.write(data.encode() + b"\n")
                await stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                return  # it exited: its stdout's end says how


class _CountedStream(httpx2.AsyncByteStream):
    """A reply's body, counted against the session's bound and the reply's own: past one,
    the guard fails and the body ends there (the SDK reads a cut reply as a broken one)."""

    def __init__(self, inner: httpx2.AsyncByteStream, guard: Guard, limit: int | None) -> None:
        self.inner = inner
        self.guard = guard
        self.limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self.inner:
            size += len(chunk)
            if self.limit is not None and size > self.limit:
                self.guard.fail(f"sent a reply over {self.limit // (1024 * 1024)} MiB")
            if not self.guard.count(len(chunk)):
                return
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class _CountedTransport(httpx2.AsyncBaseTransport):
    """Every reply's body counted; a compressed reply refused (its size is not its body's)."""

    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self.inner = httpx2.AsyncHTTPTransport(verify=tls_context(), trust_env=False)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["accept-encoding"] = "identity"
        response = await self.inner.handle_async_request(request)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await response.aclose()
            self.guard.fail(
                f"answered with a compressed reply ({cap_chars(printable(encoding), 40)})"
            )
            return httpx2.Response(502, request=request)  # the SDK fails the call with it
        single = response.headers.get("content-type", "").lower().startswith("application/json")
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        limit = self.guard.message_bytes if single else None
        stream = _CountedStream(response.stream, self.guard, limit)
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=stream,
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextlib.asynccontextmanager
async def http_transport(guard: Guard, url: str, timeout_seconds: float) -> AsyncIterator[Streams]:
    """A streamable-HTTP server at `url`, through the SDK's client over counted replies."""
    client = httpx2.AsyncClient(
        transport=_CountedTransport(guard),
        trust_env=False,
        timeout=httpx2.Timeout(timeout_seconds),
    )
    async with (
        client,
        streamable_http_client(
            url,
            http_client=client,
            terminate_on_close=False,
            max_sse_event_size=guard.message_bytes,
        ) as streams,
        guarded(guard, streams) as session_streams,
    ):
        yield session_streams
