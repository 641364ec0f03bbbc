"""evalward's model proxy: agents' own programs call models through it and never hold a key.

A bring-your-own agent (`runtime.command`, `runtime.http`) and a declarative agent's command
tools are code from the pull request. They get no provider key. Instead, one proxy per run
of evalward listens on loopback and serves the APIs the agent SDKs speak (`runtime.wire`:
OpenAI Chat Completions and Responses, Anthropic Messages, Google's Gemini
`generateContent` — each whole or streamed —
embeddings and the model lists), and each fixture run gets its own random key, handed to its
processes as

    OPENAI_BASE_URL=http://127.0.0.1:PORT/v1     OPENAI_API_KEY=<the run's key>
    ANTHROPIC_BASE_URL=http://127.0.0.1:PORT     ANTHROPIC_API_KEY=<the run's key>
    GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT GOOGLE_API_KEY=<the run's key>

which is where the official SDKs look (and under every other name an SDK reads,
`runtime.endpoints`). Only the proxy accepts the key, only while its run lasts and, where
the sandbox tracks the run's processes, only from them (`_refused_presenter`,
`isolation.key_holders`). Because the key names the run, every call lands in that run's trace
(`Trace.proxy_calls`), counts against the job's budget and is answered from the response
cache when it is on (`runtime.proxy_calls`); what the model asked for becomes the run's steps
(`runtime.observed`). The same server is the run's OpenTelemetry receiver (`runtime.otlp`),
and the run's processes are told to send their traces there rather than to a vendor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from evalward.http import aio
from evalward.providers.base import RunLabels
from evalward.providers.registry import Providers
from evalward.rundata.spending import Allowance
from evalward.rundata.trace import Trace
from evalward.runtime.processes import socket_holders
from evalward.runtime.proxy.call_record import ENDPOINT_CHARS, Call, clipped, problem, uncancel
from evalward.runtime.proxy.grants import KEY_NAMES, Grant, new_grant
from evalward.runtime.proxy.proxy_calls import Answerer
from evalward.runtime.proxy.wire.base import Api
from evalward.runtime.proxy.wire.problems import WireProblem
from evalward.runtime.proxy.wire.routes import SERVED, Unnamed, WireRoute, api_of, route_of
from evalward.runtime.telemetry import otlp
from evalward.security import Redactor
from evalward.text import jsontext

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["Grant", "ModelProxy"]

MAX_REQUEST_BYTES = 32 * 1024 * 1024
"""Largest request body accepted (long contexts with images)."""
IDLE_SECONDS = 75.0
"""How long a connection may wait for its next request, or take to send a request's head,
before the proxy closes it: a head dripped a byte at a time holds a connection no longer.
(SDKs drop an idle connection sooner: httpx after 5 s, Node after 4 s.)"""
_MIN_SECRET_LENGTH = 8


def agent_environment(
    env: Mapping[str, str], key_names: Sequence[str]
) -> tuple[dict[str, str], list[str]]:
    """`env` without the provider keys, and the keys it held.

    A variable is dropped when it is named as a key (`key_names`, e.g. `OPENAI_API_KEY` or a
    provider's `apiKeyEnv`) or its value contains one of their values: an allow-list from the
    pull request may name any variable, and a copy of a key under another name is the key.
    """
    keys = [env[n].strip() for n in key_names if len(env.get(n, "").strip()) >= _MIN_SECRET_LENGTH]
    kept = {
        name: value
        for name, value in env.items()
        if name not in key_names and not any(key in value for key in keys)
    }
    return kept, keys


def provider_key_names(providers: Providers) -> list[str]:
    """The standard key variables and every provider's configured `apiKeyEnv`."""
    configured = [c.key_env for c in providers.credentials.values() if c.key_env]
    return sorted({*KEY_NAMES, *configured})


@dataclass
class ModelProxy:
    """The loopback model server of one run of evalward. Started on first use (`ensure_started`)
    so runs the result cache answers never open it; stopped by `aclose`."""

    providers: Providers
    allowance: Allowance | None = None
    secrets: Sequence[str] = ()
    """The real keys: never repeated to an agent, even when an upstream error quotes one."""
    key_names: Sequence[str] = KEY_NAMES
    host: str = "127.0.0.1"
    idle_seconds: float = IDLE_SECONDS
    _grants: dict[str, Grant] = field(default_factory=dict)
    _runner: web.AppRunner | None = None
    _port: int = 0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _answerer: Answerer | None = None

    @property
    def url(self) -> str:
        assert self._port, "the proxy is not started"
        return f"http://{self.host}:{self._port}"

    async def ensure_started(self) -> None:
        async with self._lock:
            if self._runner is not None:
                return
            aio.load()  # without the CA store aiohttp would load for nothing
            from aiohttp import web

            app = web.Application(client_max_size=MAX_REQUEST_BYTES)
            app.router.add_route("*", "/{path:.*}", self._handle)
            runner = web.AppRunner(
                app,
                access_log=None,
                handle_signals=False,
                keepalive_timeout=self.idle_seconds,
                logger=_SERVER_LOG,
                # a body is read as it came, within MAX_REQUEST_BYTES: inflated by aiohttp,
                # a megabyte of gzip held hundreds of megabytes at once (the OTLP receiver
                # inflates an export itself, to its bound)
                auto_decompress=False,
            )
            await runner.setup()
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, 0))
            await web.SockSite(runner, sock).start()
            self._port = int(sock.getsockname()[1])
            self._runner = runner
            self._answerer = Answerer(self.providers, self.allowance, Redactor(list(self.secrets)))

    async def aclose(self) -> None:
        runner, self._runner = self._runner, None
        grants = list(self._grants.values())
        self._grants.clear()
        for grant in grants:  # a call still in flight ends now, not at aiohttp's shutdown
            await grant.end_calls(within=0)
        if runner is not None:
            await runner.cleanup()

    # --- keys ---------------------------------------------------------------------------

    def open_grant(self, labels: RunLabels, trace: Trace | None, *, observe: bool = False) -> Grant:
        """A new key (`grants.new_grant`), valid until `revoke`."""
        grant = new_grant(self.url, self.key_names, labels, trace, observe=observe)
        self._grants[grant.key] = grant
        return grant

    def revoke(self, grant: Grant) -> None:
        self._grants.pop(grant.key, None)

    @contextlib.contextmanager
    def granted(
        self, labels: RunLabels, trace: Trace | None, *, observe: bool = False
    ) -> Iterator[Grant]:
        """A key valid while the block runs: a fixture run's processes get it."""
        grant = self.open_grant(labels, trace, observe=observe)
        try:
            yield grant
        finally:
            self.revoke(grant)

    # --- serving ------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.path.startswith(otlp.PREFIX):
            return await otlp.receive(request, self._grants)
        route = route_of(request.method, request.raw_path, request.headers)
        shape: Api = route.api if route is not None else api_of(request.headers)
        grant = self._grants.get(_presented_key(request.headers))
        if grant is None:
            return problem(
                shape,
                WireProblem.unauthorized,
                "evalward's model proxy does not accept this key: use the OPENAI_API_KEY / "
                "ANTHROPIC_API_KEY evalward gave this run (it is valid only while the run lasts)",
            )
        stranger = await _refused_presenter(grant, request)
        if stranger is not None:
            return problem(shape, WireProblem.unauthorized, stranger)
        endpoint = clipped(f"{request.method} {request.path}", ENDPOINT_CHARS)
        call = Call(grant, shape, endpoint, time.time())
        with grant.calling():
            try:
                return await self._answer(call, route, request)
            except asyncio.CancelledError:
                if not grant.ended:
                    raise
                uncancel()
                message = "the run ended before this call was answered"
                status = WireProblem.upstream.value.status
                call.record(status, call.charged, error=message, made=bool(call.model))
                return problem(call.api, WireProblem.upstream, message)

    async def _answer(
        self, call: Call, route: WireRoute | Unnamed | None, request: web.Request
    ) -> web.StreamResponse:
        if route is None:
            return call.refuse(
                WireProblem.not_found,
                f"evalward's model proxy serves {SERVED}, not {call.endpoint}",
            )
        if isinstance(route, Unnamed):
            return call.refuse(
                WireProblem.bad_request,
                f"evalward's model proxy refused this request: {route.reason}",
            )
        assert self._answerer is not None
        if route.kind is None:
            return await self._answerer.models(call, route, request.headers)
        from aiohttp import web

        if request.headers.get("content-encoding", "identity").strip().lower() != "identity":
            return call.refuse(
                WireProblem.bad_request,
                "evalward's model proxy reads request bodies as they are, not compressed "
                "(Content-Encoding); the model SDKs send them so",
            )
        try:
            body = jsontext.loads(await request.read(), max_depth=jsontext.AGENT_DEPTH)
        except ValueError:
            return call.refuse(WireProblem.bad_request, "the request body is not JSON")
        except web.HTTPRequestEntityTooLarge:
            return call.refuse(
                WireProblem.too_large, f"the request is larger than {MAX_REQUEST_BYTES:,} bytes"
            )
        if isinstance(body, dict) and route.api == "gemini":
            if "model" in body:
                return call.refuse(
                    WireProblem.bad_request,
                    "a Gemini request names its model in the path alone; remove `model` "
                    "from the body",
                )
            body["model"] = route.model_id  # what the call is metered and cached by
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return call.refuse(WireProblem.bad_request, "`model` (a string) is required")
        return await self._answerer.answer(call, route, body, request)


def _not_a_refused_request(record: logging.LogRecord) -> bool:
    """A request that is not HTTP aiohttp can read (two lengths, a folded header, a head too
    long) is answered 400 and its connection closed: that is the whole of it. Logged, it
    would print a traceback in evalward's output each time an agent sends one."""
    from aiohttp.http_exceptions import HttpProcessingError  # loaded: aiohttp is logging

    return not (record.exc_info and isinstance(record.exc_info[1], HttpProcessingError))


_SERVER_LOG = logging.Logger("evalward.model_proxy")
"""What aiohttp's server says of the proxy's connections: an error of evalward's own still
shows (on stderr, as Python's last-resort handler writes it); a refused request does not."""
_SERVER_LOG.addFilter(_not_a_refused_request)


def _presented_key(headers: Mapping[str, str]) -> str:
    """The key in `x-api-key` (Anthropic), `x-goog-api-key` (Gemini), `api-key` (Azure) or
    `Authorization: Bearer` (OpenAI), any route."""
    key = (
        headers.get("x-api-key", "")
        or headers.get("x-goog-api-key", "")
        or headers.get("api-key", "")
    )
    if not key:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        key = token.strip() if scheme.lower() == "bearer" else ""
    return key


async def _refused_presenter(grant: Grant, request: web.BaseRequest) -> str | None:
    """Why `request` may not use `grant`'s key (None: it may). A key whose grant names no
    processes (no sandbox: the command line on a developer's machine) is taken from whoever
    presents it; otherwise the processes holding the call's connection are looked up (off
    the event loop: it reads /proc) and the key is refused unless every one is its run's."""
    if grant.holders is None:
        return None
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport is not None else None
    local = transport.get_extra_info("sockname") if transport is not None else None
    found: list[socket_holders.Holder] = []
    if peer and local:
        client, server = (str(peer[0]), int(peer[1])), (str(local[0]), int(local[1]))
        user = grant.holders.run.uid
        others = os.getuid() if user is not None and user != os.getuid() else None
        found = await asyncio.to_thread(
            partial(socket_holders.holders, client, server, among_others_than=others)
        )
    why = grant.holders.refusal(found)
    if why is None:
        return None
    labels = grant.labels
    whose = (
        f"the run of fixture {labels.fixture!r} (agent {labels.agent!r})"
        if grant.trace is not None
        else f"the server of agent {labels.agent!r}"
    )
    return (
        f"evalward's model proxy refused this key: it is the key of {whose}, and {why}. "
        "A run's calls are made with "
        "the OPENAI_API_KEY / ANTHROPIC_API_KEY evalward gave that run's own processes (an "
        "http agent: the request's `modelProxy` key), never with another run's"
    )
