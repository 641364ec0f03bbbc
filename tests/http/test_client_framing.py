"""HttpClient against a hostile server for each way a reply's framing can go wrong.

Every call ends in HttpFailure or HttpTimeout (the case says which) within its bound: never
a hang (a call still going after GUARD seconds fails the test, however slow the machine),
never a reply, and never more memory than the reply limit and a fixed margin for aiohttp's
buffers (tracemalloc's peak over the call, measured after a first call has loaded aiohttp).
Each case runs as a whole call (`post_json`) and as a stream (`stream_json`, read to its
end); where a stream's answer differs by design, the case says so.
"""

from __future__ import annotations

import asyncio
import re
import socket
import time
import tracemalloc
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from evalward.errors import HttpFailure, HttpTimeout
from evalward.http.client import HttpClient, Reply
from support.rawhttp import OK, RawServer, Serve, read_request, until_closed

pytestmark = pytest.mark.conformance

LIMIT = 1_000_000
"""The client's reply limit in these tests."""
MARGIN = 8_000_000
"""What aiohttp may hold besides the reply's bytes: its read buffers, one decompressed
piece, the parsed head."""
PATIENT, IMPATIENT = 30.0, 1.0
"""The client's timeout (of the whole call for `post_json`, of each silence for a stream)
where a case must end in a failure, long enough for any machine to get there first, and
where it must end in a timeout, short enough to keep the suite quick."""
GUARD = 120.0
"""A call still going after this long hangs."""
ANSWER = b'HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\n{"b":2}'


@dataclass
class Outcome:
    result: Reply | HttpFailure
    peak: int
    """tracemalloc's peak during the call, above what was allocated when it began."""


def attempt(serve: Serve, how: str, timeout: float) -> Outcome:
    """One call to a server that answers with `serve`, after a first call to a good server
    (so that aiohttp's import and the client's TLS context are not counted)."""
    hostile, good = RawServer(serve), RawServer(replies=(OK,))

    async def go() -> Outcome:
        client = HttpClient(timeout_seconds=timeout, max_reply_bytes=LIMIT)
        try:
            await client.post_json(good.url, {})
            tracemalloc.start()
            start = tracemalloc.get_traced_memory()[0]
            try:
                async with asyncio.timeout(GUARD):
                    result: Reply | HttpFailure = await call(client, hostile.url, how)
            except HttpFailure as failure:
                result = failure
            except TimeoutError:
                pytest.fail(f"the call was still going after {GUARD:g} s")
            peak = tracemalloc.get_traced_memory()[1] - start
            return Outcome(result, peak)
        finally:
            tracemalloc.stop()
            await client.aclose()

    try:
        return asyncio.run(go())
    finally:
        hostile.close()
        good.close()


async def call(client: HttpClient, url: str, how: str) -> Reply:
    if how == "post":
        return await client.post_json(url, {"q": 1})
    async with client.stream_json(url, {"q": 1}) as reply:
        return await reply.read()


# --- hostile servers --------------------------------------------------------------------


def replying(data: bytes, then: Callable[[socket.socket], None] = until_closed) -> Serve:
    """Read the request, write `data`, then hold the connection until the client closes it
    (or `then`: `closing` drops it)."""

    def serve(connection: socket.socket, index: int) -> None:
        if read_request(connection) is not None:
            connection.sendall(data)
            then(connection)

    return serve


def closing(connection: socket.socket) -> None:
    """Nothing more: the connection closes as the handler returns."""


def endless(head: bytes, piece: bytes) -> Serve:
    """Write `head`, then `piece` again and again, as fast as the client reads, until it
    goes away."""

    def serve(connection: socket.socket, index: int) -> None:
        if read_request(connection) is not None:
            connection.sendall(head)
            while True:
                connection.sendall(piece)

    return serve


class Drip:
    """Write `data` a byte at a time, one every `every` seconds, well under the client's
    timeout for a silence; `sent` counts the bytes written before the client went away."""

    def __init__(self, data: bytes, every: float = 0.05) -> None:
        self.data, self.every, self.sent = data, every, 0

    def __call__(self, connection: socket.socket, index: int) -> None:
        if read_request(connection) is None:
            return
        for index in range(len(self.data)):
            connection.sendall(self.data[index : index + 1])
            self.sent += 1
            time.sleep(self.every)


def bomb(coding: str) -> tuple[bytes, bytes]:
    """A compressed body that never ends: its start, then a piece that inflates a thousand
    times (each a MiB of zeros after a full flush, so every piece is the same bytes)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31 if coding == "gzip" else 15)
    zeros = b"\0" * (1 << 20)
    start = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    piece = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    return start, piece


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def bomb_server(coding: str, framing: str) -> Serve:
    start, piece = bomb(coding)
    head = f"HTTP/1.1 200 OK\r\ncontent-encoding: {coding}\r\n".encode()
    if framing == "chunked":
        return endless(head + b"transfer-encoding: chunked\r\n\r\n" + chunk(start), chunk(piece))
    if framing == "length":  # a length that is honest: 4,000 pieces, 4 GiB inflated
        body = start + piece * 4000
        return replying(head + f"content-length: {len(body)}\r\n\r\n".encode() + body)
    return endless(head + b"\r\n" + start, piece)  # until the server closes: never


# --- the suite ----------------------------------------------------------------------------

CHUNKED = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
EARLY_HINTS = b"HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n"

TOO_BIG = "larger than 1,000,000 bytes"
H = b"HTTP/1.1 200 OK\r\n"
CASES = [
    pytest.param(
        lambda: replying(H + b"content-length: 7\r\ncontent-length: 8\r\n\r\n"),
        HttpFailure,
        "Content-Length",
        id="two-content-lengths",
    ),
    pytest.param(
        lambda: replying(H + b'content-length: 7\r\ncontent-length: 7\r\n\r\n{"a":1}'),
        HttpFailure,
        "Content-Length",
        id="two-equal-content-lengths",
    ),
    pytest.param(
        lambda: replying(
            H
            + b"content-length: 3\r\ntransfer-encoding: chunked\r\n\r\n"
            + chunk(b'{"a":1}')
            + b"0\r\n\r\n"
        ),
        HttpFailure,
        "Transfer-Encoding",
        id="content-length-and-chunked",
    ),
    pytest.param(
        lambda: replying(
            H
            + b"transfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n"
            + chunk(b'{"a":1}')
            + b"0\r\n\r\n"
        ),
        HttpFailure,
        "Content-Length",
        id="chunked-and-content-length",
    ),
    pytest.param(
        lambda: endless(CHUNKED + b"7fffffff\r\n", b"x" * 65536),
        HttpFailure,
        TOO_BIG,
        id="a-chunk-past-the-limit",
    ),
    pytest.param(
        lambda: replying(CHUNKED + b"1" * 40 + b"\r\nx"),
        HttpFailure,
        "[Cc]hunk size",
        id="a-chunk-size-that-overflows",
    ),
    pytest.param(
        lambda: endless(CHUNKED, chunk(b"x" * 4096)), HttpFailure, TOO_BIG, id="endless-chunks"
    ),
    pytest.param(lambda: endless(H + b"\r\n", b"x" * 65536), HttpFailure, TOO_BIG, id="endless"),
    pytest.param(lambda: bomb_server("gzip", "chunked"), HttpFailure, TOO_BIG, id="a-gzip-bomb"),
    pytest.param(
        lambda: bomb_server("deflate", "chunked"), HttpFailure, TOO_BIG, id="a-deflate-bomb"
    ),
    pytest.param(
        lambda: bomb_server("gzip", "length"), HttpFailure, TOO_BIG, id="a-gzip-bomb-of-a-length"
    ),
    pytest.param(
        lambda: bomb_server("deflate", "close"), HttpFailure, TOO_BIG, id="a-deflate-bomb-to-close"
    ),
    pytest.param(
        lambda: replying(H + b"content-length: 100\r\n\r\n"),
        HttpTimeout,
        "",
        id="a-body-that-never-comes",
    ),
    pytest.param(
        lambda: replying(H + b'\r\n{"a":1}'), HttpTimeout, "", id="a-reply-that-never-closes"
    ),
    pytest.param(lambda: replying(H + b"x-a: b\r\n"), HttpTimeout, "", id="a-head-that-never-ends"),
    pytest.param(
        lambda: Drip(H + b"x-drip: " + b"y" * 8000), HttpTimeout, "", id="a-slowly-dripped-head"
    ),
    pytest.param(lambda: endless(b"", CONTINUE * 1000), HttpTimeout, "", id="a-flood-of-100s"),
    pytest.param(lambda: endless(b"", EARLY_HINTS * 500), HttpTimeout, "", id="a-flood-of-103s"),
    pytest.param(
        lambda: replying(H + b"content-length: 50\r\n\r\n"),
        HttpTimeout,
        "",
        id="a-reply-framed-as-for-head",
    ),
    pytest.param(
        lambda: replying(H + b"content-length: 100\r\n\r\n0123456789", closing),
        HttpFailure,
        "received 10 of 100 bytes",
        id="an-early-close-mid-body",
    ),
    pytest.param(
        lambda: replying(CHUNKED + b"64\r\n0123456789", closing),
        HttpFailure,
        "ClientPayloadError",
        id="an-early-close-mid-chunk",
    ),
    pytest.param(
        lambda: replying(CHUNKED + chunk(b'{"a":1}'), closing),
        HttpFailure,
        "ClientPayloadError",
        id="an-early-close-before-the-last-chunk",
    ),
    pytest.param(
        lambda: replying(H + b"content-le", closing),
        HttpFailure,
        "",
        id="an-early-close-in-the-head",
    ),
    pytest.param(
        lambda: replying(b"junk\r\n" + OK), HttpFailure, "status line", id="a-line-before-the-head"
    ),
    pytest.param(
        lambda: replying(b"\x16\x03\x01\x00" + OK),
        HttpFailure,
        "status line",
        id="bytes-before-the-status-line",
    ),
    pytest.param(
        lambda: replying(b'{"a":1}', closing), HttpFailure, "status line", id="no-status-line"
    ),
]


@pytest.mark.parametrize(("serve", "expected", "says"), CASES)
@pytest.mark.parametrize("how", ["post", "stream"])
def test_a_broken_reply_ends_in_a_failure_within_its_bound(
    serve: Callable[[], Serve], expected: type[HttpFailure], says: str, how: str
) -> None:
    outcome = attempt(serve(), how, IMPATIENT if expected is HttpTimeout else PATIENT)
    assert isinstance(outcome.result, expected), outcome.result
    if expected is HttpFailure:
        assert not isinstance(outcome.result, HttpTimeout), outcome.result
    assert re.search(says, str(outcome.result)), outcome.result
    assert outcome.peak < LIMIT + MARGIN, f"{outcome.peak:,} bytes at the peak"


def test_a_reply_dripped_under_the_silence_timeout_ends_at_the_calls_timeout() -> None:
    """Each byte comes well within the timeout, the whole body never would: a whole call's
    timeout bounds all of it. (A stream's bounds each silence only, by design: a long
    answer that keeps coming is not cut off; the stream's reader bounds its length.)"""
    drip = Drip(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n" + b"x" * 100000)
    outcome = attempt(drip, "post", IMPATIENT)
    assert isinstance(outcome.result, HttpTimeout), outcome.result
    assert drip.sent < len(drip.data)


@pytest.mark.parametrize("status", [b"204 No Content", b"304 Not Modified"])
def test_a_body_on_a_reply_that_has_none_never_answers_the_next_request(status: bytes) -> None:
    """A 204 or a 304 has no body whatever its headers say (as a reply to HEAD would not):
    the bytes after its head are nobody's reply. The call gets the empty reply or a failure
    (aiohttp refuses them when they come in the same read), and the next call its own."""
    poison = b'content-length: 18\r\n\r\n{"reply":"POISON"}'

    def serve(connection: socket.socket, index: int) -> None:
        replies = [b"HTTP/1.1 " + status + b"\r\n" + poison] if index == 0 else []
        while read_request(connection) is not None:
            connection.sendall(replies.pop(0) if replies else ANSWER)

    server = RawServer(serve)

    async def go() -> tuple[Reply | HttpFailure, Reply]:
        client = HttpClient(timeout_seconds=PATIENT)
        try:
            async with asyncio.timeout(GUARD):
                try:
                    first: Reply | HttpFailure = await client.post_json(server.url, {})
                except HttpFailure as failure:
                    first = failure
                return first, await client.post_json(server.url, {})
        finally:
            await client.aclose()

    try:
        first, second = asyncio.run(go())
    finally:
        server.close()
    if isinstance(first, Reply):
        assert (first.status, first.body) == (int(status[:3]), b"")
    assert second.json() == {"b": 2}
