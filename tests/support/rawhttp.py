"""A loopback server whose replies are whatever bytes a test writes, for the HTTP client's
tests: every framing a server may choose, and every way a hostile one gets it wrong."""

from __future__ import annotations

import contextlib
import fcntl
import select
import socket
import ssl
import struct
import termios
import threading
import time
from collections.abc import Callable

from fakes.http import bound_quietly

Serve = Callable[[socket.socket, int], None]
"""Handles one accepted connection; the int counts connections from 0."""

OK = b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 7\r\n\r\n{"a":1}'


def read_request(connection: socket.socket) -> bytes | None:
    """One request's head and body, or None when the client closed the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += connection.recv(65536)
    return head + b"\r\n\r\n" + body


def until_closed(connection: socket.socket) -> None:
    """Hold the connection, reading and dropping what comes, until the client closes it."""
    while connection.recv(65536):
        pass


def delivered(connection: socket.socket, *, bound: float = 60.0) -> None:
    """Wait until the client's kernel holds every byte written so far (its TCP stack has
    acknowledged them): from then on its event loop sees them the next time it looks; or
    until the client has closed the connection, which acknowledges nothing more. An event,
    not a guess at how long the loopback takes; `bound` only keeps a broken test from
    waiting forever."""
    end = time.monotonic() + bound
    closed = select.poll()
    closed.register(connection, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
    while time.monotonic() < end:
        unacknowledged = fcntl.ioctl(connection.fileno(), termios.TIOCOUTQ, b"\0" * 4)
        if struct.unpack("i", unacknowledged)[0] == 0 or closed.poll(0):
            return
        time.sleep(0.001)


class RawServer:
    """A loopback server whose replies are whatever bytes the test writes: `serve` handles
    each connection, or each request on a connection gets the next of `replies` (then the
    connection closes). `requests` holds what the default handler read."""

    def __init__(
        self,
        serve: Serve | None = None,
        *,
        replies: tuple[bytes, ...] = (),
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.requests: list[bytes] = []
        self.connections = 0
        # off the ports evalward's servers are given, whose readiness probes could reach it
        self._listener = bound_quietly(lambda port: socket.create_server(("127.0.0.1", port)))
        self._serve, self._replies, self._tls = serve or self._answer, replies, tls
        self.port = self._listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    @property
    def url(self) -> str:
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self.port}"

    def _answer(self, connection: socket.socket, index: int) -> None:
        for reply in self._replies:
            request = read_request(connection)
            if request is None:
                return
            self.requests.append(request)
            connection.sendall(reply)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            index, self.connections = self.connections, self.connections + 1
            threading.Thread(target=self._one, args=(connection, index), daemon=True).start()

    def _one(self, connection: socket.socket, index: int) -> None:
        try:
            if self._tls is not None:
                connection = self._tls.wrap_socket(connection, server_side=True)
            with connection:
                self._serve(connection, index)
        except (OSError, ssl.SSLError):
            pass

    def close(self) -> None:
        """Stop accepting, and only then free the socket: a thread still in accept() on a
        closed descriptor would take connections meant for the next server given its number."""
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        self._acceptor.join(timeout=10)
        self._listener.close()
