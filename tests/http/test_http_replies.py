"""HttpClient against raw loopback servers: every way a reply can be framed, every way a
hostile or broken server can get it wrong, kept-alive connections, TLS and the CA bundles a
user names."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import socket
import subprocess
import sys
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evalward.errors import HttpFailure
from evalward.http.client import HttpClient, Reply
from support.rawhttp import OK, RawServer, read_request
from support.tls import self_signed

pytestmark = pytest.mark.integration


@pytest.fixture
def raw() -> Iterator[Callable[..., RawServer]]:
    started: list[RawServer] = []

    def start(*replies: bytes) -> RawServer:
        started.append(RawServer(replies=replies))
        return started[-1]

    yield start
    for server in started:
        server.close()


def call(url: str, *, posts: int = 1, limit: int = 1_000_000, **headers: str) -> list[Reply]:
    async def go() -> list[Reply]:
        client = HttpClient(timeout_seconds=10, max_reply_bytes=limit)
        try:
            return [await client.post_json(url + "/v1", {"n": n}, headers) for n in range(posts)]
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_a_reply_framed_by_length_keeps_its_connection_for_the_next_call(
    raw: Callable[..., RawServer],
) -> None:
    server = raw(OK, OK, OK)
    replies = call(server.url, posts=3, authorization="Bearer k")
    assert [r.json() for r in replies] == [{"a": 1}] * 3
    assert replies[0].headers["Content-Type"] == "application/json"
    assert server.connections == 1
    head = server.requests[0].split(b"\r\n\r\n")[0].decode().lower()
    assert head.startswith("post /v1 http/1.1\r\n")
    assert f"host: 127.0.0.1:{server.port}" in head
    assert "authorization: bearer k" in head
    assert "content-length: 7" in head and "accept-encoding: gzip, deflate" in head


@pytest.mark.parametrize(
    ("reply", "body", "reused"),
    [
        (  # chunked, with an extension, and a trailer
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
            b'3;ext=1\r\n{"a\r\n4\r\n":1}\r\n0\r\nx-trailer: t\r\n\r\n',
            b'{"a":1}',
            True,
        ),
        (  # an interim reply before the real one
            b"HTTP/1.1 100 Continue\r\n\r\n" + OK,
            b'{"a":1}',
            True,
        ),
        (b"HTTP/1.1 204 No Content\r\n\r\n", b"", True),
        (  # no length: the body runs until the server closes
            b'HTTP/1.1 200 OK\r\n\r\n{"a":1}',
            b'{"a":1}',
            False,
        ),
        (  # HTTP/1.0 closes unless asked not to
            b'HTTP/1.0 200 OK\r\ncontent-length: 7\r\n\r\n{"a":1}',
            b'{"a":1}',
            False,
        ),
        (b'HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 7\r\n\r\n{"a":1}', None, False),
    ],
)
def test_every_framing_of_a_reply_is_read_whole(
    raw: Callable[..., RawServer], reply: bytes, body: bytes | None, reused: bool
) -> None:
    closes = b"content-length" not in reply and b"chunked" not in reply and b"204" not in reply
    server = raw(reply) if closes else raw(reply, reply)
    replies = call(server.url, posts=2)
    assert replies[0].body == (body if body is not None else b'{"a":1}')
    assert replies[1].body == replies[0].body
    assert server.connections == (1 if reused else 2)


@pytest.mark.parametrize(
    "extra",
    [
        b"HTTP/1.1 200 OK\r\n",  # the start of a reply nobody asked for
        b'HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\n{"smuggled"}',  # a whole one
    ],
)
def test_bytes_after_a_reply_never_answer_the_next_request(extra: bytes) -> None:
    replies = [OK + extra, b'HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\n{"b":2}']

    def serve(connection: socket.socket, index: int) -> None:
        while replies and read_request(connection) is not None:
            connection.sendall(replies.pop(0))  # the next reply, on whichever connection

    server = RawServer(serve)
    try:
        assert [r.json() for r in call(server.url, posts=2)] == [{"a": 1}, {"b": 2}]
    finally:
        server.close()


def test_gzip_and_deflate_replies_are_decoded_and_a_bomb_stops_at_the_bound(
    raw: Callable[..., RawServer],
) -> None:
    def encoded(coding: str, payload: bytes) -> bytes:
        data = gzip.compress(payload) if coding == "gzip" else zlib.compress(payload)
        return (
            f"HTTP/1.1 200 OK\r\ncontent-encoding: {coding}\r\n"
            f"content-length: {len(data)}\r\n\r\n".encode()
            + data
        )

    server = raw(encoded("gzip", b'{"a":1}'), encoded("deflate", b'{"b":2}'))
    assert [r.json() for r in call(server.url, posts=2)] == [{"a": 1}, {"b": 2}]
    bomb = raw(encoded("gzip", b"0" * 10_000_000))  # 10 MB in about 10 KB
    with pytest.raises(HttpFailure, match=r"^the reply is larger than 100,000 bytes$"):
        call(bomb.url, limit=100_000)


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\ncontent-length: 9\r\n\r\n{}", "content-length"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n", "content-length"),
        # both framings: the body is never read to a length the other one contradicts
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n"
            + b"30d40\r\n"
            + b"x" * 200_000
            + b"\r\n0\r\n\r\n",
            "Transfer-Encoding can't be present with Content-Length",
        ),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1_0\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabXY", "after chunk data"),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "status line"),
        (b"HTTP/1.1 200 OK\r\n bad header\r\n\r\n", "Invalid header"),
        (b"HTTP/1.1 200 OK\r\n" + b"x: y\r\n" * 101 + b"\r\n", "Too many headers"),
        (b"HTTP/1.1 101 Switching Protocols\r\n\r\n", "switched"),
        (b"HTTP/1.1 200 OK\r\nx: " + b"y" * 70_000, "more than 8190 bytes"),
        (b"HTTP/1.1 200 OK\r\ncontent-encoding: br\r\ncontent-length: 2\r\n\r\nxx", "br"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort", "received 5 of 10 bytes"),
    ],
)
def test_a_reply_that_breaks_http_is_a_failure_that_says_how(
    raw: Callable[..., RawServer], reply: bytes, says: str
) -> None:
    server = raw(reply)
    with pytest.raises(HttpFailure, match=says):
        call(server.url)


def test_a_kept_alive_connection_the_server_dropped_is_replaced_once(
    raw: Callable[..., RawServer],
) -> None:
    """Servers close idle connections: a request that meets such a close before any byte of
    its reply is sent again on a new connection, once; a new connection that does the same
    is a failure, not a loop."""
    dropped: list[bytes] = []

    def serve(connection: socket.socket, index: int) -> None:
        if index == 0:
            read_request(connection)
            connection.sendall(OK)  # kept alive...
            request = read_request(connection)
            dropped.append(request or b"")  # ...until the next request arrives
            return
        read_request(connection)
        connection.sendall(OK)

    server = RawServer(serve)
    try:
        replies = call(server.url, posts=2)
    finally:
        server.close()
    assert [r.json() for r in replies] == [{"a": 1}] * 2
    assert server.connections == 2 and dropped and dropped[0].startswith(b"POST /v1")

    never = RawServer(lambda connection, index: read_request(connection) and None)
    try:
        with pytest.raises(HttpFailure, match="before replying"):
            call(never.url)
        assert never.connections == 1
    finally:
        never.close()


def test_a_header_value_that_would_split_the_request_is_refused(
    raw: Callable[..., RawServer],
) -> None:
    server = raw(OK)
    with pytest.raises(HttpFailure, match="control character"):
        call(server.url, **{"anthropic-beta": "x\r\nx-injected: 1"})
    assert server.requests == []


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"])
def test_https_verifies_the_server_against_the_ca_bundle_a_user_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    trusted, good = self_signed(tmp_path, "127.0.0.1")
    _, wrong_name = self_signed(tmp_path, "elsewhere.invalid")
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    servers = [RawServer(replies=(OK,), tls=good), RawServer(replies=(OK,), tls=wrong_name)]
    try:
        with pytest.raises(HttpFailure, match="CERTIFICATE_VERIFY_FAILED"):
            call(servers[0].url)  # the system's CAs know nothing of this one
        monkeypatch.setenv(variable, str(trusted))  # the only CA the client trusts
        assert call(servers[0].url)[0].json() == {"a": 1}
        with pytest.raises(HttpFailure, match="CERTIFICATE_VERIFY_FAILED"):
            call(servers[1].url)
        assert servers[1].requests == []
        monkeypatch.setenv(variable, str(tmp_path / "missing.pem"))
        with pytest.raises(HttpFailure, match=f"^{variable} names .*missing.pem.*not a readable"):
            call(servers[0].url)
    finally:
        for server in servers:
            server.close()


def test_requests_ca_bundle_wins_over_ssl_cert_file_when_both_are_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The precedence docs/providers.md states: the bundle REQUESTS_CA_BUNDLE names is the
    only one trusted, whatever SSL_CERT_FILE says; unset, SSL_CERT_FILE's is."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    bundle_a, tls_a = self_signed(tmp_path / "a", "127.0.0.1")
    bundle_b, tls_b = self_signed(tmp_path / "b", "127.0.0.1")
    server_a = RawServer(replies=(OK,) * 2, tls=tls_a)
    server_b = RawServer(replies=(OK,) * 2, tls=tls_b)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle_a))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle_b))
    try:
        assert call(server_a.url)[0].json() == {"a": 1}
        with pytest.raises(HttpFailure, match="CERTIFICATE_VERIFY_FAILED"):
            call(server_b.url)
        monkeypatch.delenv("REQUESTS_CA_BUNDLE")
        assert call(server_b.url)[0].json() == {"a": 1}
        with pytest.raises(HttpFailure, match="CERTIFICATE_VERIFY_FAILED"):
            call(server_a.url)
    finally:
        server_a.close()
        server_b.close()
    assert len(server_a.requests) == len(server_b.requests) == 1


class TunnelProxy:
    """An HTTPS proxy on loopback: it answers CONNECT and relays the bytes both ways."""

    def __init__(self) -> None:
        self.connects: list[bytes] = []
        self.server = RawServer(self._tunnel)

    def _tunnel(self, connection: socket.socket, index: int) -> None:
        head = read_request(connection) or b""
        self.connects.append(head.split(b"\r\n")[0])
        host, _, port = head.split(b" ")[1].decode().rpartition(":")
        with socket.create_connection((host, int(port))) as upstream:
            connection.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

            def pipe(source: socket.socket, sink: socket.socket) -> None:
                with contextlib.suppress(OSError):
                    while data := source.recv(65536):
                        sink.sendall(data)
                with contextlib.suppress(OSError):
                    sink.shutdown(socket.SHUT_WR)

            back = threading.Thread(target=pipe, args=(upstream, connection), daemon=True)
            back.start()
            pipe(connection, upstream)
            back.join(timeout=10)


def test_https_goes_through_the_proxy_https_proxy_names_unless_no_proxy_says_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through a CONNECT tunnel, with the user's CA bundle verifying the server at its end;
    NO_PROXY sends the same call direct."""
    trusted, good = self_signed(tmp_path, "127.0.0.1")
    target = RawServer(replies=(OK, OK), tls=good)
    proxy = TunnelProxy()
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(trusted))
    monkeypatch.setenv("HTTPS_PROXY", proxy.server.url)
    for name in ("NO_PROXY", "no_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    try:
        assert call(target.url)[0].json() == {"a": 1}
        assert proxy.connects == [f"CONNECT 127.0.0.1:{target.port} HTTP/1.1".encode()]
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert call(target.url)[0].json() == {"a": 1}
        assert len(proxy.connects) == 1 and len(target.requests) == 2
    finally:
        proxy.server.close()
        target.close()


def test_a_plain_http_call_loads_no_ca_and_an_https_call_still_needs_its_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CAs are read for the first https request, not for a run that only talks plain
    HTTP: a bundle variable naming a missing file stops the https call alone."""
    _, good = self_signed(tmp_path, "127.0.0.1")
    plain, tls = RawServer(replies=(OK,)), RawServer(replies=(OK,), tls=good)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "missing.pem"))
    try:
        assert call(plain.url)[0].json() == {"a": 1}
        with pytest.raises(HttpFailure, match=r"REQUESTS_CA_BUNDLE names .*not a readable"):
            call(tls.url)
        assert tls.requests == []
    finally:
        plain.close()
        tls.close()


def test_aiohttp_is_loaded_with_default_contexts_that_trust_nothing() -> None:
    """aiohttp's own default TLS contexts, which evalward never uses, are built without the
    system's CA store: a request that reached one would fail its check, never pass
    unchecked. Every context made after the import loads the CAs as before."""
    probe = (
        "import ssl\n"
        "from evalward.http import aio\n"
        "aio.load()\n"
        "import aiohttp.connector as c\n"
        "made = ssl.create_default_context()\n"
        "print(c._SSL_CONTEXT_VERIFIED.cert_store_stats()['x509_ca'],"
        " c._SSL_CONTEXT_VERIFIED.verify_mode == ssl.CERT_REQUIRED,"
        " made.cert_store_stats()['x509_ca'] > 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["0", "True", "True"]
