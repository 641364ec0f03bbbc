"""HTTP/1.1 requests on asyncio's own transports: the path of every direct JSON call.

A model call is one request and one reply of a few kilobytes, and at 32 calls in flight on
2 cores the client's CPU per call bounds a run. aiohttp spends about 0.2 ms of CPU on such a
call, and importing it 0.15 s (two TLS contexts load the CA bundle at import, for runs that
may never open one); this module does what the call needs, in about 0.05 ms: keep-alive
connections pooled per origin, TLS through a default context made on the first `https`
call, a reply framed by content-length, chunked encoding or the end of the connection,
gzip and deflate decoded, a bound on the reply's size and on its head. A request through
a proxy, or to a URL that carries credentials, takes aiohttp's path (httpclient.py).

Hostile servers: every framing rule of RFC 9112 that a reply could break is refused as a
ProtocolError (two different lengths, a bad chunk size, bytes after the reply, a head that
never ends), and a connection is reused only after a reply that ended cleanly.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

MAX_HEAD_BYTES = 64 * 1024
"""A reply's status line and headers larger than this are refused."""

IDLE_SECONDS = 15.0
"""A pooled connection unused this long is closed rather than reused: servers drop idle
connections, and a request sent on one that was just dropped has to be sent again."""

_NO_BODY_STATUS = frozenset({204, 304})
_FRAMING = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class ProtocolError(Exception):
    """The server's reply breaks HTTP/1.1 (or a request could not be written as HTTP)."""


class Headers(Mapping[str, str]):
    """A reply's headers, read case-insensitively; repeated fields joined with ", "."""

    def __init__(self, fields: dict[str, str]) -> None:
        self._fields = fields

    def __getitem__(self, name: str) -> str:
        return self._fields[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


@dataclass(frozen=True)
class Target:
    """Where a URL's request goes: its origin, the request line's target, the Host header."""

    scheme: str
    host: str
    port: int
    path: str
    host_header: str
    credentials: bool
    """The URL names a user: aiohttp's path sends them as Basic authentication."""


@functools.lru_cache(maxsize=256)
def target_of(url: str) -> Target:
    """Parse `url` once (a run calls the same few URLs thousands of times)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ProtocolError(f"not an http(s) URL: {url[:200]!r}")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError as exc:
        raise ProtocolError(f"bad port in {url[:200]!r}: {exc}") from None
    host = parts.hostname
    if not host.isascii():
        host = host.encode("idna").decode("ascii")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    # as yarl does: characters a request line cannot carry are percent-encoded, escapes kept
    path = quote(path, safe="/%:@!$&'()*+,;=-._~?")
    named = f"[{host}]" if ":" in host else host
    default = port == (443 if scheme == "https" else 80)
    host_header = named if default else f"{named}:{port}"
    credentials = parts.username is not None
    return Target(scheme, host, port, path, host_header, credentials)


@functools.cache
def _tls() -> ssl.SSLContext:
    """The system's CA bundle, loaded once and only by a run that calls an https URL."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


def request_head(method: str, target: Target, headers: Mapping[str, str], length: int) -> bytes:
    """The request line and headers; a name or value that would split the head is refused."""
    lines = [f"{method} {target.path} HTTP/1.1", f"host: {target.host_header}"]
    for name, value in headers.items():
        if name.lower() in _FRAMING:
            continue  # the request is framed here, from its body
        if not name or not _TOKEN.issuperset(name):
            raise ProtocolError(f"invalid header name {name[:40]!r}")
        if "\r" in value or "\n" in value or "\0" in value:
            raise ProtocolError(f"invalid value for header {name!r}: it contains a line break")
        lines.append(f"{name}: {value}")
    if length >= 0:
        lines.append(f"content-length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


@dataclass(frozen=True)
class Response:
    status: int
    headers: Headers
    body: bytes


class _Reader:
    """Parses one reply as its bytes arrive; `feed` says when it is complete."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buffer = bytearray()
        self.status = 0
        self.fields: dict[str, str] = {}
        self.keep_alive = False
        self.state = "head"
        self.remaining = 0
        self.body = bytearray()
        self.raw = 0
        self.decoder: zlib._Decompress | None = None

    def feed(self, data: bytes) -> bool:
        self.buffer += data
        while True:
            if self.state == "head":
                if not self._head():
                    return False
            elif self.state == "length":
                taken = self._take(self.remaining)
                self.remaining -= taken
                if self.remaining:
                    return False
                self._finish()
            elif self.state == "close":
                self._take(len(self.buffer))
                return False
            elif self.state == "size":
                if not self._chunk_size():
                    return False
            elif self.state == "chunk":
                self.remaining -= self._take(self.remaining)
                if self.remaining:
                    return False
                self.state = "chunk-end"
            elif self.state == "chunk-end":
                if len(self.buffer) < 2:
                    return False
                if self.buffer[:2] != b"\r\n":
                    raise ProtocolError("a chunk does not end with CRLF")
                del self.buffer[:2]
                self.state = "size"
            elif self.state == "trailers":
                end = self.buffer.find(b"\r\n")
                if end < 0:
                    self._bounded_head()
                    return False
                del self.buffer[: end + 2]
                if end == 0:
                    self._finish()
            else:  # done; bytes past the reply leave the connection unfit for another
                self.keep_alive = self.keep_alive and not self.buffer
                return True

    def feed_eof(self) -> bool:
        """The server closed the connection: the end of a body that runs until then."""
        if self.state != "close":
            return False
        self.keep_alive = False
        self._finish()
        return True

    def response(self) -> Response:
        return Response(self.status, Headers(self.fields), bytes(self.body))

    def _bounded_head(self) -> None:
        if len(self.buffer) > MAX_HEAD_BYTES:
            raise ProtocolError(f"the reply's head is larger than {MAX_HEAD_BYTES:,} bytes")

    def _head(self) -> bool:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            self._bounded_head()
            return False
        head = bytes(self.buffer[:end]).decode("latin-1")
        del self.buffer[: end + 4]
        status_line, *lines = head.split("\r\n")
        version, _, rest = status_line.partition(" ")
        code = rest[:3]
        if version not in ("HTTP/1.1", "HTTP/1.0") or not code.isdigit() or len(code) != 3:
            raise ProtocolError(f"not an HTTP/1.1 status line: {status_line[:80]!r}")
        fields: dict[str, str] = {}
        for line in lines:
            name, colon, value = line.partition(":")
            if not colon or not name or not _TOKEN.issuperset(name):
                raise ProtocolError(f"malformed header line: {line[:80]!r}")
            name, value = name.lower(), value.strip(" \t")
            fields[name] = f"{fields[name]}, {value}" if name in fields else value
        status = int(code)
        if 100 <= status < 200:
            if status == 101:
                raise ProtocolError("the server switched protocols, which was not asked")
            return True  # an interim reply: the real one follows
        self.status, self.fields = status, fields
        connection = {t.strip().lower() for t in fields.get("connection", "").split(",")}
        self.keep_alive = (
            "keep-alive" in connection if version == "HTTP/1.0" else "close" not in connection
        )
        self._decoder(fields.get("content-encoding", "").strip().lower())
        if status in _NO_BODY_STATUS:
            self._finish()
        elif "transfer-encoding" in fields:
            codings = [c.strip().lower() for c in fields["transfer-encoding"].split(",")]
            self.state = "size" if codings[-1] == "chunked" else "close"
            if self.state == "close":
                self.keep_alive = False
        elif "content-length" in fields:
            lengths = {v.strip() for v in fields["content-length"].split(",")}
            length = lengths.pop()
            if lengths or not length.isdigit() or not length.isascii():
                raise ProtocolError(f"invalid content-length {fields['content-length'][:40]!r}")
            self.remaining = int(length)
            if self.remaining > self.limit:
                raise _too_big(self.limit)
            self.state = "length" if self.remaining else "done"
        else:
            self.state, self.keep_alive = "close", False
        return True

    def _decoder(self, encoding: str) -> None:
        if encoding in ("", "identity"):
            return
        if encoding in ("gzip", "x-gzip"):
            self.decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self.decoder = zlib.decompressobj(zlib.MAX_WBITS)
        else:
            raise ProtocolError(f"content-encoding {encoding[:40]!r}, which was not accepted")

    def _chunk_size(self) -> bool:
        end = self.buffer.find(b"\r\n")
        if end < 0:
            if len(self.buffer) > 1024:
                raise ProtocolError("a chunk-size line longer than 1 KB")
            return False
        line = bytes(self.buffer[:end]).split(b";", 1)[0].strip(b" \t")
        del self.buffer[: end + 2]
        if not line or line.strip(b"0123456789abcdefABCDEF"):
            raise ProtocolError(f"invalid chunk size {line[:20]!r}")
        size = int(line, 16)
        if size > self.limit:
            raise _too_big(self.limit)
        self.remaining = size
        self.state = "chunk" if size else "trailers"
        return True

    def _take(self, wanted: int) -> int:
        """Move up to `wanted` bytes of body out of the buffer, decoded and bounded."""
        taken = min(wanted, len(self.buffer))
        if taken:
            self._append(bytes(self.buffer[:taken]))
            del self.buffer[:taken]
        return taken

    def _append(self, data: bytes) -> None:
        self.raw += len(data)
        if self.raw > self.limit:
            raise _too_big(self.limit)
        if self.decoder is not None:
            data = self.decoder.decompress(data, self.limit - len(self.body) + 1)
        self.body += data
        if len(self.body) > self.limit:
            raise _too_big(self.limit)

    def _finish(self) -> None:
        if self.decoder is not None:
            self.body += self.decoder.flush()
            if len(self.body) > self.limit:
                raise _too_big(self.limit)
        self.state = "done"


class TooBig(ProtocolError):
    """The reply is larger than the caller's bound."""


def _too_big(limit: int) -> TooBig:
    return TooBig(f"the reply is larger than {limit:,} bytes")


class _Connection(asyncio.Protocol):
    """One connection: at most one request on it at a time, its reply parsed as it comes."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._reader: _Reader | None = None
        self._waiter: asyncio.Future[Response] | None = None
        self.received = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.received = True
        if self._reader is None or self._waiter is None or self._waiter.done():
            self.close()  # bytes nobody asked for: the connection cannot be trusted
            return
        try:
            if self._reader.feed(data):
                self._waiter.set_result(self._reader.response())
        except (ProtocolError, zlib.error) as exc:
            self._waiter.set_exception(exc)
            self.close()

    def eof_received(self) -> bool:
        if self._reader is not None and self._waiter is not None and not self._waiter.done():
            try:
                if self._reader.feed_eof():
                    self._waiter.set_result(self._reader.response())
            except (ProtocolError, zlib.error) as exc:
                self._waiter.set_exception(exc)
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._waiter is not None and not self._waiter.done():
            said = "the reply was complete" if self.received else "replying"
            self._waiter.set_exception(
                exc or ConnectionResetError(f"the server closed the connection before {said}")
            )

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    async def exchange(self, data: bytes, limit: int) -> tuple[Response, bool]:
        """Send one request; its reply, and whether the connection can carry another."""
        assert self.transport is not None
        self.received = False
        self._reader = reader = _Reader(limit)
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        try:
            return await self._waiter, reader.keep_alive and not self.closed
        finally:
            self._reader = self._waiter = None


class Pool:
    """Connections by origin, at most `max_connections` carrying requests at once."""

    def __init__(self, max_connections: int) -> None:
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}

    async def request(
        self,
        method: str,
        target: Target,
        head: bytes,
        body: bytes,
        *,
        timeout: float,
        connect_timeout: float,
        limit: int,
    ) -> Response:
        """One request with its reply. TimeoutError past `timeout`; OSError or ProtocolError
        when no complete reply came. A request on a kept-alive connection that the server
        had closed, which it did not answer at all, is sent once more on a new one."""
        origin = (target.scheme, target.host, target.port)
        async with asyncio.timeout(timeout), self._slots:
            while True:
                connection = self._pooled(origin)
                reused = connection is not None
                if connection is None:
                    connection = await self._connect(target, connect_timeout)
                try:
                    response, keep = await connection.exchange(head + body, limit)
                except (ConnectionError, OSError):
                    connection.close()
                    if reused and not connection.received:
                        continue
                    raise
                except BaseException:
                    connection.close()  # a reply half read (or cancelled): not reusable
                    raise
                if keep:
                    connection.idle_since = time.monotonic()
                    self._idle.setdefault(origin, []).append(connection)
                else:
                    connection.close()
                return response

    def close(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    def _pooled(self, origin: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if not connection.closed and now - connection.idle_since < IDLE_SECONDS:
                return connection
            connection.close()
        return None

    async def _connect(self, target: Target, timeout: float) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = _tls() if target.scheme == "https" else None
        async with asyncio.timeout(timeout):
            _, connection = await loop.create_connection(
                _Connection,
                target.host,
                target.port,
                ssl=tls,
                server_hostname=target.host if tls else None,
            )
        return connection
