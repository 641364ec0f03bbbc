"""A reply belongs to its request: HttpClient's kept-alive connections against servers that
write what nobody asked for, and the request heads it refuses to write.

Each server answers the first request on its first connection, then writes `unasked` on
that connection at a moment the test chooses (once the client holds the first reply, or
holds its head); any other request, on any connection, gets ANSWER. Whatever the unasked
bytes are, the second call's reply is ANSWER, from a server that read two requests."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from evalward.errors import HttpFailure
from evalward.http.client import HttpClient, Reply
from support.rawhttp import OK, RawServer, delivered, read_request, until_closed

pytestmark = pytest.mark.conformance

POISON = b'HTTP/1.1 200 OK\r\ncontent-length: 18\r\n\r\n{"reply":"POISON"}'
ANSWER = b'HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\n{"b":2}'


class Unasked:
    """The server the module's docstring describes. `first` is the first reply's bytes
    sent at once; `rest` is sent, with `unasked` right behind it in the same write, when
    the test calls `go`."""

    def __init__(self, first: bytes, rest: bytes, unasked: bytes) -> None:
        self.requests: list[bytes] = []
        self._first, self._rest, self._unasked = first, rest, unasked
        self._go, self._sent = threading.Event(), threading.Event()
        self.server = RawServer(self._serve)

    def _serve(self, connection: socket.socket, index: int) -> None:
        if index == 0 and (request := read_request(connection)) is not None:
            self.requests.append(request)
            connection.sendall(self._first)
            self._go.wait(timeout=60)
            try:
                connection.sendall(self._rest + self._unasked)
                delivered(connection)
            finally:
                self._sent.set()
        while (request := read_request(connection)) is not None:
            self.requests.append(request)
            connection.sendall(ANSWER)

    async def go(self) -> None:
        """Have the server write, and wait until the client's kernel holds every byte (the
        loop reads them at its next turn, before this coroutine resumes), or the write found
        the connection closed (it then waited out the whole bound: 60 s of every run)."""
        self._go.set()
        await asyncio.to_thread(self._sent.wait, 60)
        for _ in range(3):
            await asyncio.sleep(0)


@asynccontextmanager
async def client() -> AsyncIterator[HttpClient]:
    http = HttpClient(timeout_seconds=10)
    try:
        yield http
    finally:
        await http.aclose()


def run(body: Callable[[], Awaitable[Reply]]) -> Reply:
    return asyncio.run(body())


@pytest.mark.parametrize(
    "unasked",
    [
        pytest.param(POISON, id="a-whole-reply"),
        pytest.param(POISON * 3, id="several-replies"),
        pytest.param(POISON[:20], id="the-start-of-a-reply"),
        pytest.param(b"HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n{", id="a-reply-cut-short"),
        pytest.param(b"\r\n", id="an-empty-line"),
    ],
)
def test_bytes_that_reach_an_idle_pooled_connection_never_answer_the_next_request(
    unasked: bytes,
) -> None:
    """The first reply is whole and read; only then does the server write `unasked` on the
    connection, which waits in the pool. The next request goes out on a new connection."""
    server = Unasked(OK, b"", unasked)

    async def go() -> Reply:
        async with client() as http:
            assert (await http.post_json(server.server.url, {"n": 1})).json() == {"a": 1}
            await server.go()
            return await http.post_json(server.server.url, {"n": 2})

    try:
        assert run(go).json() == {"b": 2}
    finally:
        server.server.close()
    assert server.server.connections == 2
    assert [r.split(b"\r\n\r\n")[1] for r in server.requests] == [b'{"n":1}', b'{"n":2}']


def test_an_unasked_reply_in_the_same_read_as_the_end_of_the_asked_one_never_answers() -> None:
    """The reply's head comes first; its body's end and a whole reply nobody asked for come
    later in one write, so aiohttp hands the connection back to the pool while it is still
    reading that write: the unasked reply lands on a connection already pooled."""
    head = b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\n"
    server = Unasked(head, b'{"a":1}', POISON)

    async def go() -> Reply:
        async with client() as http:
            async with http.stream_json(server.server.url, {"n": 1}) as reply:
                await server.go()
                assert (await reply.read()).json() == {"a": 1}
            return await http.post_json(server.server.url, {"n": 2})

    try:
        assert run(go).json() == {"b": 2}
    finally:
        server.server.close()
    assert server.server.connections == 2


def test_a_stream_left_before_its_end_closes_its_connection() -> None:
    """A reply not read to its end: what is still coming on that connection is its rest,
    never the next request's answer."""
    events = b"content-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
    head = b"HTTP/1.1 200 OK\r\n" + events + b"\r\n"
    first_event = b'10\r\ndata: {"n": 1}\n\n\r\n'
    rest = b'10\r\ndata: {"n": 2}\n\n\r\n0\r\n\r\n'
    server = Unasked(head + first_event, rest, POISON)

    async def go() -> Reply:
        async with client() as http:
            async with http.stream_json(server.server.url, {"n": 1}) as reply:
                async for chunk in reply.chunks():
                    assert chunk == b'data: {"n": 1}\n\n'
                    break
            await server.go()
            return await http.post_json(server.server.url, {"n": 2})

    try:
        assert run(go).json() == {"b": 2}
    finally:
        server.server.close()
    assert server.server.connections == 2


def test_a_reply_refused_at_the_size_bound_closes_its_connection() -> None:
    """A reply over the bound, its body still coming, is not read to its end: its
    connection is closed, and the next request goes out on a new one."""

    def serve(connection: socket.socket, index: int) -> None:
        while read_request(connection) is not None:
            if index > 0:
                connection.sendall(ANSWER)
                continue
            connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 5000\r\n\r\n" + b"x" * 100)
            until_closed(connection)

    server = RawServer(serve)

    async def go() -> Reply:
        http = HttpClient(timeout_seconds=10, max_reply_bytes=4000)
        try:
            with pytest.raises(HttpFailure, match="larger than 4,000 bytes"):
                await http.post_json(server.url, {"n": 1})
            return await http.post_json(server.url, {"n": 2})
        finally:
            await http.aclose()

    try:
        assert run(go).json() == {"b": 2}
    finally:
        server.close()
    assert server.connections == 2


# --- request heads ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        ({"a b": "v"}, r"header name 'a b' is not an HTTP token"),
        ({"": "v"}, r"header name '' is not an HTTP token"),
        ({"é": "v"}, r"header name '\\xe9' is not an HTTP token"),
        ({"x-key:": "v"}, r"header name 'x-key:' is not an HTTP token"),
        ({"x\r\ny": "v"}, r"header name 'x\\r\\ny' is not an HTTP token"),
        ({"x-key": "se\r\ncret"}, r"'x-key' holds a control character \(U\+000D at position 2\)"),
        ({"x-key": "se\ncret"}, r"'x-key' holds a control character \(U\+000A at position 2\)"),
        ({"x-key": "se\x00cret"}, r"'x-key' holds a control character \(U\+0000 at position 2\)"),
        ({"x-key": "se\x7fcret"}, r"'x-key' holds a control character \(U\+007F at position 2\)"),
        ({"x-key": "se\x85cret"}, r"'x-key' holds a control character \(U\+0085 at position 2\)"),
    ],
)
@pytest.mark.parametrize("how", ["post", "get", "stream"])
def test_a_header_http_cannot_carry_is_refused_before_anything_is_written(
    headers: dict[str, str], says: str, how: str
) -> None:
    server = RawServer(replies=(OK,))

    async def go() -> None:
        async with client() as http:
            if how == "post":
                await http.post_json(server.url, {}, headers)
            elif how == "get":
                await http.get(server.url, headers)
            else:
                async with http.stream_json(server.url, {}, headers):
                    pass

    try:
        with pytest.raises(HttpFailure, match=says) as refused:
            asyncio.run(go())
    finally:
        server.close()
    assert "secret" not in str(refused.value) and "cret" not in str(refused.value)
    assert server.connections == 0


def test_every_token_character_and_a_tab_in_a_value_are_written_as_they_are() -> None:
    server = RawServer(replies=(OK,))
    name = "x-!#$%&'*+.^_`|~09AZaz"

    async def go() -> Reply:
        async with client() as http:
            return await http.post_json(server.url, {}, {name: "a\tb é"})

    try:
        assert run(go).json() == {"a": 1}
    finally:
        server.close()
    assert f"\r\n{name}: a\tb é\r\n".encode() in server.requests[0]
