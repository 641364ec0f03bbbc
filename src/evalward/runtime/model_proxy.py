"""evalward's model proxy: agents' own programs call models through it and never hold a key.

A bring-your-own agent (`runtime.command`, `runtime.http`) and a declarative agent's command
tools are code from the pull request. They get no provider key. Instead, one proxy per run
of evalward listens on loopback and serves the two APIs agents already speak — OpenAI Chat
Completions (`POST /v1/chat/completions`) and Anthropic Messages (`POST /v1/messages`) — and
each fixture run gets its own random key, handed to its processes as

    OPENAI_BASE_URL=http://127.0.0.1:PORT/v1     OPENAI_API_KEY=<the run's key>
    ANTHROPIC_BASE_URL=http://127.0.0.1:PORT     ANTHROPIC_API_KEY=<the run's key>

which is where the official SDKs look. Only the proxy accepts the key, and only while its
run lasts. The proxy sends the call on with the real key (the provider's own retries,
timeouts, base URL and concurrency limit), so the agent sees exactly what the provider
answered. Because the key names the run, every call lands in that run's trace
(`Trace.proxy_calls`: model, tokens, cost, latency), counts against the job's budget (what
the plan's estimate leaves of `max-model-calls` / `max-cost-usd`) and is answered from the
response cache when it is on.

Requests go upstream as the agent wrote them (full fidelity: `response_format`,
`tool_choice`, images, betas). Under a mock script there is no upstream: the request is read
into a ChatRequest for the mock provider, whose reply is written back in the agent's API, so
a dry run needs no key and no network. Streaming is refused with the provider's error shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalward import jsontext
from evalward.errors import ProviderError
from evalward.httpclient import encode_json
from evalward.providers.base import RunLabels
from evalward.providers.registry import Forwarded, MeteredProvider, Providers
from evalward.runtime.proxy_wire import (
    Api,
    Problem,
    WireError,
    chat_request,
    error_body,
    response_body,
)
from evalward.security import Redactor
from evalward.spending import Allowance
from evalward.trace import ModelCall, StepType, Trace

if TYPE_CHECKING:
    from aiohttp import web

KEY_NAMES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""The variables the official SDKs read a key from; they always hold the run's proxy key."""
ROUTES: dict[tuple[str, str], Api] = {
    ("POST", "/v1/chat/completions"): "openai",
    ("POST", "/v1/messages"): "anthropic",
}
MAX_REQUEST_BYTES = 32 * 1024 * 1024
"""Largest request body accepted (long contexts with images)."""
KEY_PREFIX = "evalward-proxy-"
_MIN_SECRET_LENGTH = 8
_NO_RETRY = {"x-should-retry": "false"}
"""The official SDKs obey it: the proxy has retried already, or retrying cannot help."""


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
    configured = [c.key_env for c in providers.credentials.values()]
    return sorted({*KEY_NAMES, *configured})


@dataclass
class Grant:
    """One key: a fixture run's (its calls go to `trace`), or an http agent server's
    (no trace: its calls are metered against the budget only)."""

    key: str
    labels: RunLabels
    trace: Trace | None
    env: dict[str, str]
    """What the agent's processes get: base URLs and this key under every key name."""
    refused: bool = False

    def request_field(self) -> dict[str, str]:
        """`modelProxy` of the request an http agent receives for this run."""
        return {
            "apiKey": self.key,
            "openaiBaseUrl": self.env["OPENAI_BASE_URL"],
            "anthropicBaseUrl": self.env["ANTHROPIC_BASE_URL"],
        }


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
    _grants: dict[str, Grant] = field(default_factory=dict)
    _runner: web.AppRunner | None = None
    _port: int = 0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _calls: int = 0

    @property
    def url(self) -> str:
        assert self._port, "the proxy is not started"
        return f"http://{self.host}:{self._port}"

    async def ensure_started(self) -> None:
        async with self._lock:
            if self._runner is not None:
                return
            from aiohttp import web

            app = web.Application(client_max_size=MAX_REQUEST_BYTES)
            app.router.add_route("*", "/{path:.*}", self._handle)
            runner = web.AppRunner(app, access_log=None, handle_signals=False)
            await runner.setup()
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, 0))
            await web.SockSite(runner, sock).start()
            self._port = int(sock.getsockname()[1])
            self._runner = runner

    async def aclose(self) -> None:
        runner, self._runner = self._runner, None
        self._grants.clear()
        if runner is not None:
            await runner.cleanup()

    # --- keys ---------------------------------------------------------------------------

    def open_grant(self, labels: RunLabels, trace: Trace | None) -> Grant:
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        env = {name: key for name in self.key_names}
        env["OPENAI_BASE_URL"] = f"{self.url}/v1"
        env["ANTHROPIC_BASE_URL"] = self.url
        grant = Grant(key, labels, trace, env)
        self._grants[key] = grant
        return grant

    def revoke(self, grant: Grant) -> None:
        self._grants.pop(grant.key, None)

    @contextlib.contextmanager
    def granted(self, labels: RunLabels, trace: Trace | None) -> Iterator[Grant]:
        """A key valid while the block runs: a fixture run's processes get it."""
        grant = self.open_grant(labels, trace)
        try:
            yield grant
        finally:
            self.revoke(grant)

    # --- serving ------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        api = ROUTES.get((request.method, request.path))
        shape: Api = api or _shape_of(request)
        grant = self._grants.get(_presented_key(request.headers))
        if grant is None:
            return self._problem(
                shape,
                Problem.unauthorized,
                "evalward's model proxy does not accept this key: use the OPENAI_API_KEY / "
                "ANTHROPIC_API_KEY evalward gave this run (it is valid only while the run lasts)",
            )
        if api is None:
            return self._problem(
                shape,
                Problem.not_found,
                f"evalward's model proxy serves POST /v1/chat/completions (OpenAI Chat "
                f"Completions) and POST /v1/messages (Anthropic Messages), not "
                f"{request.method} {request.path}",
            )
        from aiohttp import web

        try:
            body = jsontext.loads(await request.read())
        except ValueError:
            return self._problem(api, Problem.bad_request, "the request body is not JSON")
        except web.HTTPRequestEntityTooLarge:
            return self._problem(
                api,
                Problem.too_large,
                f"the request is larger than {MAX_REQUEST_BYTES:,} bytes",
            )
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return self._problem(api, Problem.bad_request, "`model` (a string) is required")
        if body.get("stream"):
            return self._problem(
                api,
                Problem.bad_request,
                "streaming is not supported through evalward's model proxy: send the "
                "request with `stream: false`",
            )
        return await self._call(api, body, request.headers, grant)

    async def _call(
        self, api: Api, body: dict[str, Any], headers: Mapping[str, str], grant: Grant
    ) -> web.StreamResponse:
        started, clock = time.time(), time.monotonic()
        model_id = f"{api}/{body['model']}"
        provider = self.providers.override or self.providers.by_name.get(api)
        if not isinstance(provider, MeteredProvider):
            return self._problem(api, Problem.upstream, f"evalward has no {api} provider")
        if self.providers.override is None:
            missing = self._missing_key(api)
            if missing:
                return self._problem(api, Problem.unauthorized, missing)
            hit = provider.cached_forward(body, grant.labels.rep)
            if hit is not None:
                self._record(grant, api, model_id, hit, started, clock)
                return self._json(200, hit.data or {})
        refusal = self._uncountable(provider, body["model"]) or (
            self.allowance.admit() if self.allowance is not None else None
        )
        if refusal is not None:
            if grant.trace is not None and not grant.refused:
                grant.trace.add(StepType.error, content=f"a model call was refused: {refusal}")
            grant.refused = True
            return self._problem(api, Problem.budget, f"evalward refused this call: {refusal}")
        try:
            if self.providers.override is not None:
                answer = await self._mock(api, provider, body, grant)
            else:
                answer = await provider.forward(body, headers, grant.labels.rep)
        except WireError as exc:
            return self._problem(api, Problem.bad_request, str(exc))
        except ProviderError as exc:
            message = self._redact(str(exc))
            self._record(grant, api, model_id, None, started, clock, status=502, error=message)
            return self._problem(
                api, Problem.upstream, f"evalward could not reach {api}: {message}"
            )
        if self.allowance is not None and answer.usage is not None:
            self.allowance.spend(answer.usage.cost_usd)
        if answer.data is not None:
            self._record(grant, api, model_id, answer, started, clock)
            return self._json(answer.status, answer.data)
        return self._upstream_error(api, model_id, answer, grant, started, clock)

    async def _mock(
        self, api: Api, provider: MeteredProvider, body: dict[str, Any], grant: Grant
    ) -> Forwarded:
        request = chat_request(api, body, grant.labels)
        response = await provider.complete(request)
        self._calls += 1
        data = response_body(api, response, request.model, self._calls)
        return Forwarded(200, data, usage=response.usage, cached=response.cached)

    def _upstream_error(
        self,
        api: Api,
        model_id: str,
        answer: Forwarded,
        grant: Grant,
        started: float,
        clock: float,
    ) -> web.StreamResponse:
        """Pass the provider's refusal on (its status and body) — except a rejected key,
        which is evalward's to fix and whose message may quote part of the real key."""
        if answer.status < 300:  # a success that was not a JSON object, on every attempt
            message = f"{api} answered with a body that is not a JSON object"
            self._record(grant, api, model_id, answer, started, clock, status=502, error=message)
            return self._problem(api, Problem.upstream, message)
        if answer.status in (401, 403):
            message = (
                f"{api} rejected evalward's key (HTTP {answer.status}); the key evalward holds "
                f"for {api} needs fixing, not the agent's"
            )
            self._record(grant, api, model_id, answer, started, clock, error=message)
            return self._problem(api, Problem.unauthorized, message)
        text = self._redact(answer.raw.decode("utf-8", "replace"))
        self._record(
            grant,
            api,
            model_id,
            answer,
            started,
            clock,
            error=f"HTTP {answer.status}: {text[:300]}",
        )
        try:
            data = jsontext.loads(text)
        except ValueError:
            data = error_body(
                api, Problem.upstream, f"{api} answered HTTP {answer.status}: {text[:500]}"
            )
        return self._json(answer.status, data, _NO_RETRY)

    def _uncountable(self, provider: MeteredProvider, model: str) -> str | None:
        """Why a call is refused that `max-cost-usd` could not count: the model is the agent's
        to choose, and one missing from the price table would cost nothing against it. Under
        a mock script nothing is spent."""
        if self.allowance is None or self.allowance.max_cost_usd is None:
            return None
        if self.providers.override is not None or provider.priced(model):
            return None
        return (
            f"{provider.name}/{model} has no price, so its cost cannot be counted against "
            "max-cost-usd; call a priced model, or give this one a price under `pricing` "
            "in evalward.yaml"
        )

    def _missing_key(self, api: Api) -> str | None:
        credentials = self.providers.credentials.get(api)
        if credentials is None or credentials.has_key:
            return None
        if credentials.base_url != credentials.default_base_url:
            return None  # a server that may need no key
        return (
            f"evalward holds no key for {api}: set {credentials.key_env} in the environment "
            "evalward runs in (agents get a key of evalward's model proxy, never that one)"
        )

    def _record(
        self,
        grant: Grant,
        api: Api,
        model_id: str,
        answer: Forwarded | None,
        started: float,
        clock: float,
        *,
        status: int | None = None,
        error: str | None = None,
    ) -> None:
        trace = grant.trace
        if trace is None:
            return
        cached = answer is not None and answer.cached
        trace.proxy_calls.append(
            ModelCall(
                api=api,
                model=model_id,
                status=status or (answer.status if answer is not None else 502),
                usage=answer.usage if answer is not None else None,
                started_at=started,
                duration_ms=(time.monotonic() - clock) * 1000,
                cached=cached,
                error=error,
                after_step=len(trace.steps),
            )
        )
        trace.model_calls += 1
        trace.cache_hits += cached

    def _redact(self, text: str) -> str:
        return Redactor(list(self.secrets))(text)

    def _problem(self, api: Api, problem: Problem, message: str) -> web.StreamResponse:
        return self._json(problem.value.status, error_body(api, problem, message), _NO_RETRY)

    @staticmethod
    def _json(
        status: int, data: object, headers: Mapping[str, str] | None = None
    ) -> web.StreamResponse:
        from aiohttp import web

        return web.Response(
            status=status,
            body=encode_json(data),
            content_type="application/json",
            headers=headers,
        )


def _presented_key(headers: Mapping[str, str]) -> str:
    """The key in `x-api-key` (Anthropic) or `Authorization: Bearer` (OpenAI), either route."""
    key = headers.get("x-api-key", "")
    if not key:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        key = token.strip() if scheme.lower() == "bearer" else ""
    return key


def _shape_of(request: web.Request) -> Api:
    """Which error shape an unknown route gets: Anthropic's for an Anthropic client."""
    anthropic = "x-api-key" in request.headers or "anthropic-version" in request.headers
    return "anthropic" if anthropic else "openai"
