"""A tiny threaded HTTP server on 127.0.0.1 with a free port, for the fakes below.

Its port is one the kernel never hands out for `bind(("127.0.0.1", 0))`: evalward picks its
services' and agents' ports that way and asks them for readiness before they bind, so a fake
on a port of that range could be given one just picked and receive another test's probe.

A reply is either one body (`content-length`) or a stream of Server-Sent Events: chunked
transfer encoding, one chunk per event, each written and flushed as it is produced, so a
client holds the first event while the server has not sent the last, and the connection is
kept alive after the final chunk as HTTP/1.1 wants.
"""

from __future__ import annotations

import contextlib
import errno
import json
import random
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    target: str = ""
    """The request target exactly as it arrived (path and query, undecoded)."""
    received: float = 0.0
    """When it had arrived whole (`time.monotonic`): what a client's pacing is seen by."""
    answering: float = 0.0
    """When its answer began to go out (`time.monotonic`; 0.0 until then): a client that
    waits for each answer sends its next request after this."""

    def json(self) -> Any:
        return json.loads(self.body or b"null")


def sse(data: Any, event: str | None = None) -> bytes:
    """One Server-Sent Event: an optional `event:` line, then `data:` (JSON, or a str as is)."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    lines = [f"event: {event}"] if event else []
    lines += [f"data: {line}" for line in payload.split("\n")]
    return ("\n".join(lines) + "\n\n").encode()


@dataclass
class EventStream:
    """A streamed reply (`content-type: text/event-stream`), and what became of it.

    The fields after `hold` are written by the server as it sends: a test reads them to see
    how far a stream has got (`sent`) and whether it has ended (`finished`)."""

    events: Iterable[bytes]
    delay: float = 0.0
    """Seconds to wait before each event."""
    cut_after: int | None = None
    """Reset the connection after this many events, without the closing chunk."""
    hold_after: int | None = None
    hold: threading.Event | None = None
    """After `hold_after` events, wait until this is set before sending the rest."""
    sent: list[float] = field(default_factory=list)
    """`time.monotonic()` as each event is written (recorded just before, so a client that
    holds an event always finds it counted here)."""
    finished: threading.Event = field(default_factory=threading.Event)
    """Set once the stream ended: completed, cut, or the client went away."""
    completed: bool = False
    """The closing chunk went out."""


@dataclass
class Response:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    delay: float = 0.0
    cut: bool = False
    """Announce the whole body, send half of it, then reset the connection."""
    stream: EventStream | None = None
    """Send these events instead of a body."""


Handler = Callable[[Request], Response]


def _reset(connection: socket.socket) -> None:
    """Close with a TCP reset, as a crashed or cut-off upstream does."""
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()


class LoopbackServer:
    """Serves `handler` on a free loopback port until `close()`."""

    def __init__(self, handler: Handler) -> None:
        outer = self
        self._closing = threading.Event()

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # each event leaves at once, not when the previous one is acknowledged
            disable_nagle_algorithm = True

            def handle(self) -> None:
                # a client that hangs up (a stream it stopped reading, a kept-alive
                # connection it drops) is no server error
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    super().handle()

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                request = Request(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    self.path,
                    time.monotonic(),
                )
                response = outer.handler(request)
                if response.delay:
                    outer._closing.wait(response.delay)
                request.answering = time.monotonic()
                try:
                    if response.stream is not None:
                        self._send_stream(response, response.stream)
                    else:
                        self._send_body(response)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
                finally:
                    if response.stream is not None:
                        response.stream.finished.set()

            def _send_head(self, response: Response, defaults: dict[str, str]) -> None:
                self.send_response(response.status)
                for name, value in {**defaults, **response.headers}.items():
                    self.send_header(name, value)
                self.end_headers()

            def _send_body(self, response: Response) -> None:
                payload = (
                    response.raw
                    if response.raw is not None
                    else (b"" if response.body is None else json.dumps(response.body).encode())
                )
                self._send_head(
                    response,
                    {"content-type": "application/json", "content-length": str(len(payload))},
                )
                if response.cut:
                    self.wfile.write(payload[: len(payload) // 2])
                    self.wfile.flush()
                    self._cut()
                    return
                self.wfile.write(payload)

            def _send_stream(self, response: Response, stream: EventStream) -> None:
                self._send_head(
                    response,
                    {
                        "content-type": "text/event-stream; charset=utf-8",
                        "cache-control": "no-cache",
                        "transfer-encoding": "chunked",
                    },
                )
                for index, event in enumerate(stream.events):
                    if index == stream.cut_after:
                        self._cut()
                        return
                    if index == stream.hold_after and stream.hold is not None:
                        while not (stream.hold.wait(0.05) or outer._closing.is_set()):
                            pass
                    if stream.delay:
                        outer._closing.wait(stream.delay)
                    stream.sent.append(time.monotonic())
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    self.wfile.flush()
                if stream.cut_after is not None and stream.cut_after >= len(stream.sent):
                    self._cut()
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                stream.completed = True

            def _cut(self) -> None:
                self.close_connection = True
                _reset(self.connection)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.handler = handler
        self._server = bound_quietly(
            lambda port: ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        )
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        """Stop serving; a stream waiting on a hold or a delay ends at once."""
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()


EPHEMERAL_PORTS = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_QUIET_PORT = 10000
"""Below the ports a system's servers commonly use."""

_Bound = TypeVar("_Bound")


def _held(port: int) -> bool:
    """Whether a socket holds `port` on 127.0.0.1. A bind without SO_REUSEADDR fails where
    any does, one merely bound too: a test holding a port unlistened (with SO_REUSEADDR, to
    take back a closed server's) for connections to be refused there, where a server binding
    with SO_REUSEADDR, as `HTTPServer` and `socket.create_server` do, could listen beside it."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            return True
    return False


def bound_quietly(bind: Callable[[int], _Bound]) -> _Bound:
    """`bind(port)` on a free loopback port outside the kernel's ephemeral range (below it,
    where the range leaves room; one of the range, `bind(0)`, where it does not), and one no
    socket holds."""
    try:
        low = int(EPHEMERAL_PORTS.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = LOWEST_QUIET_PORT
    candidates = list(range(LOWEST_QUIET_PORT, low))
    random.shuffle(candidates)
    for port in candidates[:200]:
        if _held(port):
            continue
        try:
            return bind(port)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
    return bind(0)


def quiet_listener(
    family: socket.AddressFamily = socket.AF_INET,
    host: str = "127.0.0.1",
    *,
    v6only: int | None = None,
) -> socket.socket:
    """A TCP socket listening on `host` at a port `bound_quietly` picks; `v6only` sets
    IPV6_V6ONLY (None leaves the system's default)."""

    def bind(port: int) -> socket.socket:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            if v6only is not None:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, v6only)
            sock.bind((host, port))
            sock.listen()
        except OSError:
            sock.close()
            raise
        return sock

    return bound_quietly(bind)


def quiet_port() -> int:
    """A loopback port outside the kernel's ephemeral range, free now, for a server another
    program binds: `free_port` never hands it to one of evalward's, which could bind it first
    or probe it for readiness."""
    with quiet_listener() as probe:
        return int(probe.getsockname()[1])
