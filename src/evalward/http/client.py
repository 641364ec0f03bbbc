"""JSON over HTTP for model providers and agent servers, on aiohttp.

Every call (direct, through a proxy, streamed) takes one path: aiohttp, imported on first use
and kept to what a JSON call needs. What this module adds is what a hostile or broken server
must not get round: a bound on the reply's size (decoded, so a compressed bomb stops at it)
and on its head, no redirect followed (a redirect is the server's answer, not a new target),
no cookie kept, a framing error (two lengths, a bad chunk, a reply cut short) a failure, and
two exceptions that say whether a reply arrived. A reply is only ever the answer to the
request written before it: a kept-alive connection on which anything arrived unasked is
closed, not reused (`http.pool`). A header HTTP cannot carry is refused before anything is
written. Proxies come from HTTP(S)_PROXY and NO_PROXY (read once per URL, not per call);
the CAs from the bundle REQUESTS_CA_BUNDLE names, else the one SSL_CERT_FILE names
(requests' variable wins over OpenSSL's), else the system's. docs/decisions/http-client.md
says why aiohttp and not httpx.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import ssl
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from evalward import __version__
from evalward.errors import HttpFailure, HttpTimeout
from evalward.http import aio
from evalward.text import jsontext
from evalward.text.cuts import cap_chars

if TYPE_CHECKING:
    import aiohttp

    from evalward.http.pool import QuietConnector

MAX_REPLY_BYTES = 64 * 1024 * 1024
"""A reply larger than this is refused: no model or agent answer is legitimately this big."""

USER_AGENT = f"evalward/{__version__}"

MAX_HEADER_BYTES = 8190
"""The longest status line or header line of a reply accepted."""
MAX_HEADERS = 100
"""The most header lines a reply may have: its head is bounded at about 800 KB."""

CA_BUNDLE_VARIABLES = ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")
"""Where a user names the CAs to trust instead of the system's (a company's TLS-inspecting
proxy): requests' variable, then OpenSSL's."""


@dataclass(frozen=True)
class Reply:
    """A complete HTTP reply. `headers` is case-insensitive."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON; raises ValueError when it is not JSON."""
        return jsontext.loads(self.body)

    def text(self, limit: int) -> str:
        """The first `limit` characters of the body, for error messages (`cap_chars`)."""
        return cap_chars(self.body[: limit * 4].decode("utf-8", "replace"), limit)


def encode_json(payload: Any) -> bytes:
    """Compact UTF-8 JSON; NaN and infinities are refused, as JSON has no such values."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class HttpClient:
    """One connection pool. Create it anywhere; its session opens inside the running loop."""

    def __init__(
        self,
        *,
        timeout_seconds: float,
        connect_timeout_seconds: float | None = None,
        max_connections: int = 100,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        self._max_reply_bytes = max_reply_bytes
        self._timeout_seconds = timeout_seconds
        self._connect_timeout_seconds = connect_timeout_seconds
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._pool: QuietConnector | None = None
        self._proxies: dict[str, _Proxy] = {}
        self._tls: ssl.SSLContext | None = None

    async def post_json(
        self,
        url: str,
        payload: Any,
        headers: Mapping[str, str] | None = None,
        *,
        timeout_seconds: float | None = None,
    ) -> Reply:
        """POST `payload` as JSON and return the whole reply, whatever its status."""
        all_headers = {"content-type": "application/json", **(headers or {})}
        return await self._request("POST", url, encode_json(payload), all_headers, timeout_seconds)

    async def get(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        timeout_seconds: float | None = None,
    ) -> Reply:
        return await self._request("GET", url, None, headers or {}, timeout_seconds)

    @contextlib.asynccontextmanager
    async def stream_json(
        self, url: str, payload: Any, headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[StreamingReply]:
        """POST `payload` and hand over the reply as it arrives (a model's streamed answer).

        The timeout bounds each gap between the reply's chunks, not the whole stream: a long
        answer that keeps coming is not cut off. Its head must be whole within the connect
        timeout and this one together, however it comes (a head sent a byte at a time, or
        an endless run of interim replies, keeps no stream open)."""
        aio.load()
        import aiohttp

        _check_headers(headers or {})
        session = self._open()
        idle = self._timeout_seconds
        connect = min(self._connect_timeout_seconds or idle, idle)
        all_headers = {"content-type": "application/json", **(headers or {})}
        try:
            async with asyncio.timeout(connect + idle):
                response = await session.request(
                    "POST",
                    url,
                    data=encode_json(payload),
                    timeout=aiohttp.ClientTimeout(total=None, connect=connect, sock_read=idle),
                    **self._routing(url, all_headers),
                )
        except TimeoutError as exc:
            raise HttpTimeout(
                f"no reply within {idle:g} s, or its head not whole within {connect + idle:g} s"
            ) from exc
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise HttpFailure(_describe(exc)) from exc
        try:
            _refuse_upgrade(response)
            yield StreamingReply(response, idle, self._max_reply_bytes)
        finally:
            response.release()

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def _request(
        self,
        method: str,
        url: str,
        data: bytes | None,
        headers: Mapping[str, str],
        timeout_seconds: float | None,
    ) -> Reply:
        """One request and its whole reply. A request sent on a kept-alive connection that
        the server had closed meanwhile (it dropped it without a reply) is sent once more, on
        a new connection; a new connection that does the same is a failure."""
        aio.load()
        import aiohttp

        _check_headers(headers)
        total = timeout_seconds or self._timeout_seconds
        connect = min(self._connect_timeout_seconds or total, total)
        # The total is this `asyncio.timeout`'s alone (over a send and its one retry): aiohttp
        # keeps the connect bound; a total of its own would be a second timer per request
        # for the same deadline.
        timeout = aiohttp.ClientTimeout(None, connect=connect)
        try:
            async with asyncio.timeout(total):
                for again in (True, False):
                    try:
                        return await self._send(method, url, data, headers, timeout)
                    except aiohttp.ServerDisconnectedError as exc:
                        if not (again and self._pool is not None and self._pool.took_kept_alive()):
                            raise HttpFailure(
                                "the server closed the connection before replying"
                            ) from exc
        except TimeoutError as exc:
            raise HttpTimeout(f"no reply within {total:g} s") from exc
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            # ValueError: aiohttp refuses some malformed URLs and headers with it.
            raise HttpFailure(_describe(exc)) from exc
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    async def _send(
        self,
        method: str,
        url: str,
        data: bytes | None,
        headers: Mapping[str, str],
        timeout: aiohttp.ClientTimeout,
    ) -> Reply:
        session = self._open()
        async with session.request(
            method, url, data=data, timeout=timeout, **self._routing(url, headers)
        ) as response:
            _refuse_upgrade(response)
            body = await _read_bounded(response, self._max_reply_bytes)
            return Reply(response.status, response.headers, body)

    def _routing(self, url: str, headers: Mapping[str, str]) -> dict[str, Any]:
        """What every request to `url` is sent with beside its method, body and timeout: its
        headers, its proxy, its CAs, and no redirect followed."""
        proxy = self._proxy_for(url)
        if proxy.headers and url.startswith("http:"):
            # no CONNECT tunnel to carry it: a plain-HTTP request names its proxy credentials
            headers = {**headers, **proxy.headers}
        return {
            "headers": headers,
            "proxy": proxy.url,
            "proxy_headers": proxy.headers,
            "allow_redirects": False,  # a redirect is the server's answer, not a new target
            "ssl": self._tls_for(url),
        }

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            import aiohttp

            # lazy: it builds on aiohttp, which loads on the first call
            from evalward.http.pool import QuietConnector

            # Not `trust_env`: with it, aiohttp re-reads the proxy settings and ~/.netrc in a
            # worker thread on every call, which cost more CPU than the call itself.
            self._pool = QuietConnector(limit=self._max_connections)
            self._session = aiohttp.ClientSession(
                connector=self._pool,
                headers={"user-agent": USER_AGENT},
                cookie_jar=aiohttp.DummyCookieJar(),  # calls are independent: no cookies kept
                max_line_size=MAX_HEADER_BYTES,
                max_field_size=MAX_HEADER_BYTES,
                max_headers=MAX_HEADERS,
            )
        return self._session

    def _tls_for(self, url: str) -> ssl.SSLContext | bool:
        """The CAs an https request trusts (`tls_context`), made for this client's first https
        request; a plain-http request needs none (True: aiohttp's default, never used)."""
        if urlsplit(url).scheme.lower() != "https":
            return True
        if self._tls is None:
            self._tls = tls_context()
        return self._tls

    def _proxy_for(self, url: str) -> _Proxy:
        """The proxy that HTTP(S)_PROXY and NO_PROXY name for `url`'s host."""
        proxy = self._proxies.get(url)
        if proxy is None:
            if len(self._proxies) >= 256:
                self._proxies.clear()  # URLs an agent chose: bounded, not kept forever
            parts = urlsplit(url)
            proxy = self._proxies[url] = _env_proxy(parts.scheme, parts.hostname or "")
        return proxy


class StreamingReply:
    """A reply whose body is still arriving: its status and headers, then its chunks."""

    def __init__(self, response: aiohttp.ClientResponse, idle: float, limit: int) -> None:
        self._response = response
        self._idle = idle
        self._limit = limit
        self.status = response.status
        self.headers: Mapping[str, str] = response.headers

    @property
    def event_stream(self) -> bool:
        return self.headers.get("content-type", "").startswith("text/event-stream")

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes as they come; HttpFailure (HttpTimeout after a silence longer
        than the timeout) when the stream breaks off or grows past the reply limit."""
        import aiohttp

        try:
            async for chunk in _bounded(self._response, self._limit):
                yield chunk
        except TimeoutError as exc:
            raise HttpTimeout(f"the stream was silent for {self._idle:g} s") from exc
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise HttpFailure(_describe(exc)) from exc

    async def read(self) -> Reply:
        """The whole reply (an error status, or a server that did not stream)."""
        return Reply(self.status, self.headers, b"".join([c async for c in self.chunks()]))


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""A header name (RFC 9110's `token`)."""
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
"""What a header value may not hold: control characters, but for the tab."""


def _check_headers(headers: Mapping[str, str]) -> None:
    """Refuse, before anything is written, a header HTTP cannot carry: a name that is not a
    token (a space, a colon, nothing, a letter outside ASCII) would be written as it is and
    read otherwise by the server, and a control character in a value (CR, LF) would split
    the head. The error names the header, never its value (it may be a key)."""
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            raise HttpFailure(
                f"the header name {name[:64]!a} is not an HTTP token (RFC 9110: ASCII "
                "letters, digits and !#$%&'*+-.^_`|~ only), so the request was not sent"
            )
        if control := _CONTROL.search(value):
            raise HttpFailure(
                f"the value of the header {name!r} holds a control character "
                f"(U+{ord(control.group()):04X} at position {control.start()}), so the "
                "request was not sent"
            )


def _refuse_upgrade(response: aiohttp.ClientResponse) -> None:
    if response.status == 101:
        raise HttpFailure("the server switched protocols, which was not asked")


@dataclass(frozen=True)
class _Proxy:
    url: str | None = None
    headers: Mapping[str, str] | None = None


def _env_proxy(scheme: str, host: str) -> _Proxy:
    if sys.platform == "linux" and not any(name.lower().endswith("_proxy") for name in os.environ):
        # No proxy is configured (on Linux only the environment configures one): no need
        # for urllib.request, whose import costs more than a run's calls to it.
        return _Proxy()
    from urllib.request import getproxies, proxy_bypass  # lazy: see above

    configured = getproxies().get(scheme)
    if not configured or not host or proxy_bypass(host):
        return _Proxy()
    parts = urlsplit(configured)
    if parts.username is None:
        return _Proxy(configured)
    bare = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
    user_pass = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    credentials = base64.b64encode(user_pass.encode()).decode()
    return _Proxy(bare, {"proxy-authorization": f"Basic {credentials}"})


def tls_context() -> ssl.SSLContext:
    """The CAs every https call of evalward's trusts (this module's, and a client of its own,
    an MCP server's): the bundle a CA_BUNDLE_VARIABLES names, else the system's (which
    OpenSSL takes from SSL_CERT_DIR too); HttpFailure when the bundle named cannot be read."""
    for name in CA_BUNDLE_VARIABLES:
        bundle = os.environ.get(name)
        if bundle:
            try:
                return ssl.create_default_context(cafile=bundle)
            except (OSError, ssl.SSLError) as exc:
                raise HttpFailure(
                    f"{name} names {bundle!r}, which is not a readable CA bundle "
                    f"({_describe(exc)}); point it at a PEM file of certificates, or unset it"
                ) from None
    return ssl.create_default_context()


def _describe(exc: BaseException) -> str:
    cause = getattr(exc, "os_error", None)  # aiohttp's ClientConnectorError: name the cause
    if isinstance(cause, OSError) and cause is not exc:
        where = f"{getattr(exc, 'host', '?')}:{getattr(exc, 'port', '?')}"
        return f"cannot connect to {where}: {_describe(cause)}"
    detail = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


async def _read_bounded(response: aiohttp.ClientResponse, limit: int) -> bytes:
    length = response.content_length
    if length is not None and length > limit:
        raise _too_big(limit)
    if length is not None and "content-encoding" not in response.headers:
        # aiohttp reads a Content-Length body to that length and no further; a compressed
        # one is read below, as it is decoded, since its length bounds only what was sent
        return await response.read()
    return b"".join([chunk async for chunk in _bounded(response, limit)])


async def _bounded(response: aiohttp.ClientResponse, limit: int) -> AsyncIterator[bytes]:
    """The body's chunks as they come, decoded; HttpFailure once they pass `limit` bytes."""
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise _too_big(limit)
        yield chunk


def _too_big(limit: int) -> HttpFailure:
    return HttpFailure(f"the reply is larger than {limit:,} bytes")
