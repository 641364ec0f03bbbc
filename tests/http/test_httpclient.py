"""The JSON client that model providers and agent servers share, against a loopback server."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator

import pytest

from evalward import __version__
from evalward.errors import HttpFailure, HttpTimeout
from evalward.http.client import HttpClient
from fakes.http import LoopbackServer, Request, Response, quiet_listener

pytestmark = pytest.mark.integration


@pytest.fixture
def echo() -> Iterator[LoopbackServer]:
    def handle(request: Request) -> Response:
        if request.path == "/slow":
            return Response(body={}, delay=1.0)
        if request.path == "/cut":
            return Response(raw=b"x" * 10_000, cut=True)
        if request.path == "/big":
            return Response(raw=b"x" * 5_000)
        return Response(
            status=201,
            body={"got": request.json(), "headers": request.headers},
            headers={"Retry-After": "7"},
        )

    server = LoopbackServer(handle)
    yield server
    server.close()


def test_posts_compact_utf8_json_and_returns_the_whole_reply(echo: LoopbackServer) -> None:
    async def go() -> None:
        client = HttpClient(timeout_seconds=5)
        try:
            reply = await client.post_json(
                echo.url + "/x", {"text": "héllo ✓", "n": [1, 2]}, {"authorization": "Bearer k"}
            )
        finally:
            await client.aclose()
        assert reply.status == 201
        assert reply.headers["retry-after"] == "7"  # case-insensitive
        data = reply.json()
        assert data["got"] == {"text": "héllo ✓", "n": [1, 2]}
        sent = data["headers"]
        assert sent["content-type"] == "application/json"
        assert sent["authorization"] == "Bearer k"
        assert sent["user-agent"] == f"evalward/{__version__}"
        assert int(sent["content-length"]) == len(
            json.dumps(
                {"text": "héllo ✓", "n": [1, 2]}, ensure_ascii=False, separators=(",", ":")
            ).encode()
        )

    asyncio.run(go())


def test_a_slow_server_is_a_timeout_and_a_reset_is_a_failure(echo: LoopbackServer) -> None:
    async def go() -> None:
        client = HttpClient(timeout_seconds=5)
        try:
            with pytest.raises(HttpTimeout):
                await client.post_json(echo.url + "/slow", {}, timeout_seconds=0.2)
            with pytest.raises(HttpFailure) as cut:
                await client.get(echo.url + "/cut")
            assert not isinstance(cut.value, HttpTimeout)
        finally:
            await client.aclose()

    asyncio.run(go())


def test_a_reply_over_the_size_bound_is_refused(echo: LoopbackServer) -> None:
    async def go() -> None:
        client = HttpClient(timeout_seconds=5, max_reply_bytes=4_000)
        try:
            with pytest.raises(HttpFailure, match="larger than 4,000 bytes"):
                await client.get(echo.url + "/big")
            assert (await client.get(echo.url + "/x")).status == 201  # the pool still works
        finally:
            await client.aclose()

    asyncio.run(go())


def test_an_endless_chunked_reply_stops_at_the_bound() -> None:
    """No content-length to check up front: the bound applies while reading."""
    # off the ports evalward's servers are given: the one connection it accepts is the client's
    listener = quiet_listener()
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
            chunk = b"x" * 1024
            try:
                while not stop.is_set():
                    connection.sendall(b"400\r\n" + chunk + b"\r\n")
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    async def go() -> None:
        client = HttpClient(timeout_seconds=10, max_reply_bytes=100_000)
        try:
            with pytest.raises(HttpFailure, match="larger than 100,000 bytes"):
                await client.get(f"http://127.0.0.1:{port}/")
        finally:
            await client.aclose()

    try:
        asyncio.run(go())
    finally:
        stop.set()
        listener.close()


def test_nothing_listening_is_a_failure_that_names_the_cause() -> None:
    async def go(port: int) -> None:
        client = HttpClient(timeout_seconds=5)
        try:
            with pytest.raises(HttpFailure, match="ConnectionRefusedError"):
                await client.post_json(f"http://127.0.0.1:{port}/", {})
        finally:
            await client.aclose()

    # bound, never listened on: refused, and no other process's server can take the port
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        asyncio.run(go(held.getsockname()[1]))


def test_proxies_come_from_the_environment_and_no_proxy_is_honoured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A runner behind a proxy sets HTTP(S)_PROXY; the proxy sees absolute-form requests."""
    seen: list[Request] = []

    def proxy(request: Request) -> Response:
        seen.append(request)
        return Response(body={"via": "proxy"})

    def target(request: Request) -> Response:
        return Response(body={"via": "direct"})

    proxy_server, target_server = LoopbackServer(proxy), LoopbackServer(target)
    proxy_host = proxy_server.url.removeprefix("http://")
    target_url = "http://evalward-target.invalid:8080/v1/chat"
    monkeypatch.setenv("HTTP_PROXY", f"http://user:p%40ss@{proxy_host}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")

    async def go() -> None:
        client = HttpClient(timeout_seconds=5)
        try:
            via_proxy = await client.post_json(target_url, {"q": 1})
            direct = await client.post_json(target_server.url + "/x", {"q": 2})
        finally:
            await client.aclose()
        assert via_proxy.json() == {"via": "proxy"}
        assert direct.json() == {"via": "direct"}

    try:
        asyncio.run(go())
    finally:
        proxy_server.close()
        target_server.close()
    assert len(seen) == 1
    assert seen[0].json() == {"q": 1}
    assert seen[0].headers["host"] == "evalward-target.invalid:8080"
    assert seen[0].headers["proxy-authorization"] == "Basic dXNlcjpwQHNz"  # user:p@ss


def test_redirects_and_cookies_are_not_followed() -> None:
    """A redirect is the server's answer (the key must not travel to another host), and no
    cookie set by one reply rides on the next call."""
    seen: list[Request] = []

    def handle(request: Request) -> Response:
        seen.append(request)
        return Response(
            status=307,
            body={"moved": True},
            headers={"location": "http://127.0.0.1:9/elsewhere", "set-cookie": "s=1; Path=/"},
        )

    server = LoopbackServer(handle)

    async def go() -> None:
        client = HttpClient(timeout_seconds=5)
        try:
            first = await client.post_json(server.url + "/v1", {}, {"authorization": "Bearer k"})
            await client.post_json(server.url + "/v1", {})
        finally:
            await client.aclose()
        assert first.status == 307
        assert first.json() == {"moved": True}

    try:
        asyncio.run(go())
    finally:
        server.close()
    assert [r.path for r in seen] == ["/v1", "/v1"]
    assert "cookie" not in seen[1].headers
