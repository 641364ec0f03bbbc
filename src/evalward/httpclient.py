"""JSON over HTTP for model providers and agent servers.

Why not a general-purpose client: at 32 calls in flight on 2 cores, the client's own CPU per
call bounds a run. aiohttp alone costs about 0.2-0.5 ms per call, and 0.15 s to import;
httpx's client over the same aiohttp transport 1.1 ms (request and response models, cookie
jar, redirect and auth flows), over its default transport 5 ms (bench/p1_overhead.py). A JSON
POST needs none of that machinery, so this module keeps only what one needs: pooled
keep-alive connections, a timeout per call, proxies from the environment (read once per URL,
not per call), a bound on the reply's size, and two exceptions that say whether a reply
arrived.

A direct call (no proxy, no credentials in the URL) goes through `http1`, HTTP/1.1 on
asyncio's own transports, at about 0.05 ms a call; a call through a proxy and a streamed
reply go through aiohttp, imported on first use, so runs that need neither never pay for it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import sys
import zlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from evalward import __version__, http1, jsontext

if TYPE_CHECKING:
    import aiohttp

MAX_REPLY_BYTES = 64 * 1024 * 1024
"""A reply larger than this is refused: no model or agent answer is legitimately this big."""

USER_AGENT = f"evalward/{__version__}"

DIRECT_HEADERS = {"user-agent": USER_AGENT, "accept": "*/*", "accept-encoding": "gzip, deflate"}
"""What a direct call sends besides its own headers: aiohttp's defaults, so a server sees the
same request whichever path it took."""


class HttpFailure(Exception):
    """No complete reply: the connection failed or was reset, or the body was cut short."""


class HttpTimeout(HttpFailure):
    """No complete reply within the call's timeout."""


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
        """The first `limit` characters of the body, for error messages."""
        return self.body[: limit * 4].decode("utf-8", "replace")[:limit]


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
        self._pool: http1.Pool | None = None
        self._proxies: dict[str, _Proxy] = {}

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
        self,
        url: str,
        payload: Any,
        headers: Mapping[str, str] | None = None,
        *,
        timeout_seconds: float | None = None,
    ) -> AsyncIterator[StreamingReply]:
        """POST `payload` and hand over the reply as it arrives (a model's streamed answer).

        The timeout bounds the wait for the reply's head and each gap between its chunks,
        not the whole stream: a long answer that keeps coming is not cut off."""
        import aiohttp

        session = self._open()
        idle = timeout_seconds or self._timeout_seconds
        connect = min(self._connect_timeout_seconds or idle, idle)
        all_headers = {"content-type": "application/json", **(headers or {})}
        proxy = self._proxy_for(url)
        if proxy.headers and url.startswith("http:"):
            all_headers = {**all_headers, **proxy.headers}
        try:
            response = await session.request(
                "POST",
                url,
                data=encode_json(payload),
                headers=all_headers,
                timeout=aiohttp.ClientTimeout(total=None, connect=connect, sock_read=idle),
                proxy=proxy.url,
                proxy_headers=proxy.headers,
                allow_redirects=False,
            )
        except TimeoutError as exc:
            raise HttpTimeout(f"no reply within {idle:g} s") from exc
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise HttpFailure(_describe(exc)) from exc
        try:
            yield StreamingReply(response, idle, self._max_reply_bytes)
        finally:
            response.release()

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
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
        total = timeout_seconds or self._timeout_seconds
        connect = min(self._connect_timeout_seconds or total, total)
        proxy = self._proxy_for(url)
        try:
            target = http1.target_of(url)
        except http1.ProtocolError:
            target = None  # aiohttp's path says what is wrong with the URL
        if proxy.url is None and target is not None and not target.credentials:
            return await self._direct(method, target, data, headers, total, connect)
        return await self._via_aiohttp(method, url, data, headers, total, connect, proxy)

    async def _direct(
        self,
        method: str,
        target: http1.Target,
        data: bytes | None,
        headers: Mapping[str, str],
        total: float,
        connect: float,
    ) -> Reply:
        if self._pool is None:
            self._pool = http1.Pool(self._max_connections)
        sent = {**DIRECT_HEADERS, **{name.lower(): value for name, value in headers.items()}}
        try:
            head = http1.request_head(method, target, sent, -1 if data is None else len(data))
            response = await self._pool.request(
                method,
                target,
                head,
                data or b"",
                timeout=total,
                connect_timeout=connect,
                limit=self._max_reply_bytes,
            )
        except TimeoutError as exc:
            raise HttpTimeout(f"no reply within {total:g} s") from exc
        except http1.TooBig as exc:
            raise HttpFailure(str(exc)) from exc
        except (OSError, http1.ProtocolError, zlib.error) as exc:
            raise HttpFailure(_describe(exc)) from exc
        return Reply(response.status, response.headers, response.body)

    async def _via_aiohttp(
        self,
        method: str,
        url: str,
        data: bytes | None,
        headers: Mapping[str, str],
        total: float,
        connect: float,
        proxy: _Proxy,
    ) -> Reply:
        import aiohttp

        session = self._open()
        try:
            if proxy.headers and url.startswith("http:"):
                # no CONNECT tunnel to carry it: a plain-HTTP request names its proxy credentials
                headers = {**headers, **proxy.headers}
            async with session.request(
                method,
                url,
                data=data,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=total, connect=connect),
                proxy=proxy.url,
                proxy_headers=proxy.headers,
                allow_redirects=False,  # a redirect is the server's answer, not a new target
            ) as response:
                body = await _read_bounded(response, self._max_reply_bytes)
                return Reply(response.status, response.headers, body)
        except TimeoutError as exc:
            raise HttpTimeout(f"no reply within {total:g} s") from exc
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            # ValueError: aiohttp refuses some malformed URLs and headers with it.
            raise HttpFailure(_describe(exc)) from exc

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            import aiohttp

            # Not `trust_env`: with it, aiohttp re-reads the proxy settings and ~/.netrc in a
            # worker thread on every call, which cost more CPU than the call itself.
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._max_connections),
                headers={"user-agent": USER_AGENT},
                cookie_jar=aiohttp.DummyCookieJar(),  # calls are independent: no cookies kept
            )
        return self._session

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

        size = 0
        try:
            async for chunk in self._response.content.iter_any():
                size += len(chunk)
                if size > self._limit:
                    raise HttpFailure(f"the reply is larger than {self._limit:,} bytes")
                yield chunk
        except TimeoutError as exc:
            raise HttpTimeout(f"the stream was silent for {self._idle:g} s") from exc
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise HttpFailure(_describe(exc)) from exc

    async def read(self) -> Reply:
        """The whole reply (an error status, or a server that did not stream)."""
        body = bytearray()
        async for chunk in self.chunks():
            body += chunk
        return Reply(self.status, self.headers, bytes(body))


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


def _describe(exc: BaseException) -> str:
    detail = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


async def _read_bounded(response: aiohttp.ClientResponse, limit: int) -> bytes:
    too_big = HttpFailure(f"the reply is larger than {limit:,} bytes")
    if (response.content_length or 0) > limit:
        raise too_big
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)
