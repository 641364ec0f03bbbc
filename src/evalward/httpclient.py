"""JSON over HTTP for model providers and agent servers, on aiohttp.

Why not a general-purpose client: at 32 calls in flight on 2 cores, the client's own CPU per
call bounds a run. aiohttp alone costs about 0.5 ms per call; httpx's client over the same
aiohttp transport 1.1 ms (request and response models, cookie jar, redirect and auth flows),
over its default transport 5 ms (bench/p1_overhead.py). A JSON POST needs none of that
machinery, so this module keeps only what one needs: pooled keep-alive connections, a
timeout per call, proxies from the environment (read once per host, not per call), a bound
on the reply's size, and two exceptions that say whether a reply arrived.

aiohttp is imported on first use, so runs that make no HTTP call (the mock provider, `plan`,
`validate`) never pay for it.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from evalward import __version__, jsontext

if TYPE_CHECKING:
    import aiohttp

MAX_REPLY_BYTES = 64 * 1024 * 1024
"""A reply larger than this is refused: no model or agent answer is legitimately this big."""

USER_AGENT = f"evalward/{__version__}"


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
        self._proxies: dict[tuple[str, str], _Proxy] = {}

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
        import aiohttp

        session = self._open()
        total = timeout_seconds or self._timeout_seconds
        connect = min(self._connect_timeout_seconds or total, total)
        try:
            proxy = self._proxy_for(url)
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
        parts = urlsplit(url)
        key = (parts.scheme, parts.hostname or "")
        proxy = self._proxies.get(key)
        if proxy is None:
            proxy = self._proxies[key] = _env_proxy(*key)
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
    from urllib.request import getproxies, proxy_bypass

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
