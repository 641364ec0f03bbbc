"""The kept-alive pool (`http/pool.py`) under aiohttp itself: a connection a reply ended is
handed to the next request, and the request says it was; one that was given bytes while it
waited in the pool is closed as it is taken, and the request goes out on a new one."""

from __future__ import annotations

import asyncio
import socket
import threading

import aiohttp
import pytest

from evalward.http.pool import QuietConnector
from support.rawhttp import RawServer, delivered, read_request

pytestmark = pytest.mark.conformance

UNASKED = b'HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\n"POISON"'


def answer(n: int) -> bytes:
    body = b'{"n":%d}' % n
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


class Counting:
    """A server that answers each request with how many it has read; after the first, when
    the test says so, it writes UNASKED on that connection (`unasked`)."""

    def __init__(self, *, unasked: bool) -> None:
        self.read = 0
        self._unasked = unasked
        self._go, self._sent = threading.Event(), threading.Event()
        self.server = RawServer(self._serve)

    def _serve(self, connection: socket.socket, index: int) -> None:
        while read_request(connection) is not None:
            self.read += 1
            connection.sendall(answer(self.read))
            if self._unasked and self.read == 1:
                self._go.wait(timeout=60)
                connection.sendall(UNASKED)
                delivered(connection)
                self._sent.set()

    async def after_first(self) -> None:
        """The first reply is read: have the server write what nobody asked for, and wait
        until the client's kernel holds it (the loop reads it at its next turns)."""
        if self._unasked:
            self._go.set()
            await asyncio.to_thread(self._sent.wait, 60)
        for _ in range(3):
            await asyncio.sleep(0)


def two_requests(server: Counting) -> list[tuple[object, bool]]:
    """Each reply's JSON and whether its request was given a pooled connection."""

    async def go() -> list[tuple[object, bool]]:
        got = []
        async with aiohttp.ClientSession(connector=QuietConnector()) as session:
            for n in (1, 2):
                async with session.get(server.server.url) as reply:
                    got.append(
                        (await reply.json(content_type=None), QuietConnector.took_kept_alive())
                    )
                if n == 1:
                    await server.after_first()
        return got

    try:
        return asyncio.run(go())
    finally:
        server.server.close()


def test_a_connection_whose_reply_ended_carries_the_next_request() -> None:
    server = Counting(unasked=False)
    assert two_requests(server) == [({"n": 1}, False), ({"n": 2}, True)]
    assert server.server.connections == 1


def test_a_pooled_connection_given_bytes_is_closed_and_a_new_one_carries_the_request() -> None:
    server = Counting(unasked=True)
    # the second reply is the second request's own, never the bytes nobody asked for; the
    # request was given the pooled connection first, so it says so
    assert two_requests(server) == [({"n": 1}, False), ({"n": 2}, True)]
    assert server.server.connections == 2
