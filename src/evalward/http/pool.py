"""The client's pool of kept-alive connections: a connection carries a request only while
nothing has arrived on it that no request asked for, so a reply is always the answer to the
request written before it.

aiohttp keeps a connection after its reply and hands it to the next request without looking
at what arrived in between: a server that writes a reply nobody asked for (its last one a
second time) would have it read as the answer to the next request, and every later answer
would shift by one. Here a connection notes any byte that reaches it while it waits in the
pool, and a connection taken from the pool with such bytes, or with a reply of any kind
waiting on it, is closed; the request goes out on the next one, in the end a new one. A
reply not read to its end closes its connection already (aiohttp's own rule). What is left
is a part of an unasked reply that came in the same read as the end of the asked one and
nothing after it: the next request's reader starts afresh and never sees it, so it cannot
become an answer either.
"""

from __future__ import annotations

import asyncio
import functools
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast

import aiohttp
from aiohttp.client_proto import ResponseHandler

if TYPE_CHECKING:
    from aiohttp.client_reqrep import ClientRequest
    from aiohttp.tracing import Trace


_KEPT_ALIVE: ContextVar[bool] = ContextVar("evalward_kept_alive", default=False)
"""Whether the connector, asked for a connection by this task's last request, took one from its
pool (kept alive from an earlier request): `QuietConnector.took_kept_alive`."""


class _WatchedConnection(ResponseHandler):
    """aiohttp's reader of replies, noting bytes that arrive while it waits in the pool."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self.pooled = False
        """Back in the pool: its last reply ended and no request has it."""
        self.unasked = False
        """A byte arrived while it was pooled."""

    def data_received(self, data: bytes) -> None:
        if self.pooled and data:
            self.unasked = True
        super().data_received(data)

    def returned(self) -> None:
        self.pooled = True

    def spoiled(self) -> bool:
        """Pooled, and since then given bytes, or holding a reply or an error no request
        read (aiohttp's `should_close`)."""
        return self.pooled and (self.unasked or self.should_close)


class QuietConnector(aiohttp.TCPConnector):
    """aiohttp's TCP connector whose pooled connections are `_WatchedConnection`s, each
    checked as it is taken, and which says whether a request's connection was taken from the
    pool (`took_kept_alive`: aiohttp's tracing said so too, at about 15 µs of every request)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # aiohttp has no public setting for the protocol of its connections; this one
        # attribute has named it since aiohttp 1.0 (the `conformance` tests in tests/http show
        # it working)
        watched = functools.partial(_WatchedConnection, loop=asyncio.get_running_loop())
        self._factory = cast("functools.partial[ResponseHandler]", watched)

    @staticmethod
    def took_kept_alive() -> bool:
        """Whether this task's last request was given a connection from the pool (one that
        was then found spoiled and closed counts too): one the server may have closed
        meanwhile, which is worth sending the request again for."""
        return _KEPT_ALIVE.get()

    async def connect(
        self, req: ClientRequest, traces: list[Trace], timeout: aiohttp.ClientTimeout
    ) -> aiohttp.connector.Connection:
        # aiohttp asks in the task of the request (`ClientSession._request` awaits this), so
        # the request's task reads what is set here (tests/http/test_http_replies.py)
        _KEPT_ALIVE.set(False)
        while True:
            connection = await super().connect(req, traces, timeout)
            watched = connection.protocol
            if not isinstance(watched, _WatchedConnection):
                return connection  # not one of ours: aiohttp built it another way
            if watched.pooled:
                _KEPT_ALIVE.set(True)
            if not watched.spoiled():
                break
            connection.close()  # then the next one from the pool, or a new one
        watched.pooled = watched.unasked = False
        connection.add_callback(watched.returned)
        return connection
