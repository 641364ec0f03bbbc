"""One model call through the proxy, from request to answer.

A call is answered from the response cache, refused by the budget, answered by the mock
script, or sent upstream as the agent wrote it (full fidelity: `response_format`,
`tool_choice`, images, betas) — whole, or streamed event by event as the provider sends it,
so the agent's time to first token is the provider's. Whichever way, it is recorded in the
run's trace with its tokens and cost (`Trace.proxy_calls`), counted against the budget, and
read for the steps it shows (`runtime.observed`). A streamed reply is kept in the cache as
the whole reply its stream made and replayed as a stream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalward.errors import ProviderError
from evalward.http.client import HttpFailure
from evalward.http.sse import Event, EventReader, EventStreamError
from evalward.providers.registry import Forwarding, MeteredProvider, Providers
from evalward.providers.retry import Answer
from evalward.rundata.spending import Allowance
from evalward.rundata.trace import StepType, Usage
from evalward.runtime.call_record import (
    FREE,
    NO_RETRY,
    STREAM_HEADERS,
    Call,
    answer_json,
    problem,
    uncancel,
)
from evalward.runtime.wire import FORMATS, Api, Format, Kind, Route, WireError
from evalward.runtime.wire import embeddings as embeddings_wire
from evalward.runtime.wire.base import Accumulator
from evalward.runtime.wire.problems import Problem, error_body, error_event
from evalward.runtime.wire.unreported import DeltaTally, turn_tokens, unreported
from evalward.security import Redactor
from evalward.text import jsontext

if TYPE_CHECKING:
    from aiohttp import web


class Answerer:
    """Answers the model calls of one run of evalward."""

    def __init__(self, providers: Providers, allowance: Allowance | None, redact: Redactor) -> None:
        self.providers = providers
        self.allowance = allowance
        self._redact = redact
        self._mocked = 0

    async def answer(
        self, call: Call, route: Route, body: dict[str, Any], request: web.Request
    ) -> web.StreamResponse:
        assert route.kind is not None
        fmt = FORMATS.get(route.kind)
        call.model = f"{route.api}/{body['model']}"
        call.streamed = fmt is not None and fmt.streamed(body)
        provider = self.providers.override or self.providers.by_name.get(route.api)
        if not isinstance(provider, MeteredProvider):
            return call.refuse(Problem.upstream, f"evalward has no {route.api} provider")
        observer = call.grant.observer
        if observer is not None and fmt is not None:
            observer.request(fmt.results(body), call.started, body)
        mocked = self.providers.override is not None
        if not mocked:
            missing = self._missing_key(route.api)
            if missing:
                return call.refuse(Problem.unauthorized, missing)
            hit = provider.cached_forward(route.upstream, body, call.grant.labels.rep)
            if hit is not None:
                usage = provider.priced_usage(body["model"], _usage(route.kind, body, hit))
                return await self._deliver(call, fmt, body, hit, usage, request, cached=True)
        refused = self._admit(call, self._uncountable(provider, body["model"]))
        if refused is not None:
            return refused
        try:
            if mocked:
                reply, usage = await self._mock(route.kind, fmt, provider, body, call)
                return await self._deliver(call, fmt, body, reply, usage, request)
            forwarding = provider.forwarding
            assert forwarding is not None, f"{provider.name} cannot forward requests"
            if call.streamed and fmt is not None:
                return await self._stream(call, fmt, provider, forwarding, route, body, request)
            sent = fmt.upstream(body) if fmt is not None else body
            answer = await forwarding.forward(route.upstream, sent, request.headers)
        except WireError as exc:
            return call.refuse(Problem.bad_request, str(exc))
        except ProviderError as exc:
            message = self._redact(str(exc))
            call.record(502, error=message)
            return problem(
                call.api, Problem.upstream, f"evalward could not reach {call.api}: {message}"
            )
        return await self._settle(call, fmt, provider, route, body, answer, request)

    async def _settle(
        self,
        call: Call,
        fmt: Format | None,
        provider: MeteredProvider,
        route: Route,
        body: dict[str, Any],
        answer: Answer,
        request: web.Request,
    ) -> web.StreamResponse:
        """A whole reply from upstream: metered, cached and delivered, or its refusal."""
        if answer.data is None:
            return self._upstream_error(call, answer)
        assert route.kind is not None
        usage = self._spend(provider, body["model"], _usage(route.kind, body, answer.data))
        provider.store_forward(route.upstream, body, call.grant.labels.rep, answer.data)
        return await self._deliver(
            call, fmt, body, answer.data, usage, request, status=answer.reply.status
        )

    async def _deliver(
        self,
        call: Call,
        fmt: Format | None,
        body: Mapping[str, Any],
        reply: Mapping[str, Any],
        usage: Usage,
        request: web.Request,
        *,
        status: int = 200,
        cached: bool = False,
    ) -> web.StreamResponse:
        """A whole reply to the agent: as it is, or as the stream it asked for."""
        entry = call.record(status, usage, cached=cached)
        if call.grant.observer is not None and fmt is not None:
            call.grant.observer.reply(fmt.turn(reply), call.model, call.started)
        if not call.streamed or fmt is None:
            return answer_json(status, reply)
        from aiohttp import web

        response = web.StreamResponse(status=200, headers=STREAM_HEADERS)
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):
            for number, event in enumerate(fmt.replay(body, reply)):
                await response.write(event)
                if number == 0 and entry is not None:
                    entry.first_byte_ms = call.elapsed_ms()
            await response.write_eof()
        return response

    async def _stream(
        self,
        call: Call,
        fmt: Format,
        provider: MeteredProvider,
        forwarding: Forwarding,
        route: Route,
        body: dict[str, Any],
        request: web.Request,
    ) -> web.StreamResponse:
        """Pass an upstream stream on event by event, reading it on the way."""
        from aiohttp import web

        async with forwarding.stream(route.upstream, fmt.upstream(body), request.headers) as up:
            if isinstance(up, Answer):  # an error, or a server that did not stream
                return await self._settle(call, fmt, provider, route, body, up, request)
            response = web.StreamResponse(status=200, headers=STREAM_HEADERS)
            await response.prepare(request)
            accumulator, reader, tally = fmt.accumulator(body), EventReader(), DeltaTally()
            first: float | None = None
            failure: str | None = None
            cut = False
            try:
                async for chunk in up.reply.chunks():
                    # the events this chunk completed, passed on in one write
                    passed = _take(reader.feed(chunk), accumulator, tally)
                    if passed and failure is None:
                        failure = await _pass_on(response, passed)
                        first = call.elapsed_ms() if first is None else first
                rest = _take(reader.finish(), accumulator, tally)
                if rest and failure is None:
                    failure = await _pass_on(response, rest)
            except (HttpFailure, EventStreamError) as exc:
                cut = True
                failure = failure or self._redact(f"the stream from {call.api} broke off: {exc}")
                with contextlib.suppress(ConnectionError):
                    await response.write(error_event(fmt.kind, failure))
            except asyncio.CancelledError:  # the run is over (`Grant.end_calls`)
                if not call.grant.ended:
                    raise
                uncancel()
                cut = True
                failure = failure or "the run ended before the stream did"
        reply = accumulator.result()
        error = failure or accumulator.error
        if reply is None and error is None:
            error = f"the stream from {call.api} ended before a reply"
        reported = fmt.usage(reply or {})
        if cut or accumulator.error or not reported.total_tokens:  # its usage may never come
            counted = unreported(reported, body, tally.tokens)
            if counted != reported and error is not None:
                error += f"; charged as the {counted.output_tokens:,} output tokens it carried"
            reported = counted
        usage = self._spend(provider, body["model"], reported)
        if reply is not None and error is None:
            provider.store_forward(route.upstream, body, call.grant.labels.rep, reply)
        entry = call.record(200, usage, error=self._redact(error) if error else None)
        if entry is not None:
            entry.first_byte_ms = first
        if reply is not None and call.grant.observer is not None:
            call.grant.observer.reply(fmt.turn(reply), call.model, call.started)
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
        return response

    async def models(
        self, call: Call, route: Route, headers: Mapping[str, str]
    ) -> web.StreamResponse:
        """A model list (or one model), as the provider has it; under a mock script, the
        models evalward knows a price for (the mock serves any model). A call like any
        other: admitted by the budget, counted, and recorded in the run's trace; it costs
        nothing."""
        anthropic = route.api == "anthropic"
        call.model = f"{route.api}/{route.model_id}"
        mocked = self.providers.override
        provider = mocked or self.providers.by_name.get(route.api)
        forwarding = provider.forwarding if isinstance(provider, MeteredProvider) else None
        missing = None if mocked else self._missing_key(route.api)
        if not isinstance(provider, MeteredProvider) or missing or not (mocked or forwarding):
            return call.refuse(
                Problem.unauthorized, missing or f"evalward has no {route.api} provider"
            )
        refused = self._admit(call, None)
        if refused is not None:
            return refused
        provider.spent.add(FREE)
        if mocked is not None or forwarding is None:
            if route.model_id:
                data = embeddings_wire.model_entry(route.model_id, anthropic=anthropic)
            else:
                names = self.providers.prices.models(route.api)
                data = embeddings_wire.models_list(names, anthropic=anthropic)
            call.record(200, FREE)
            return answer_json(200, data)
        try:
            answer = await forwarding.forward(route.upstream, None, headers)
        except ProviderError as exc:
            message = self._redact(str(exc))
            call.record(502, error=message)
            return problem(
                route.api, Problem.upstream, f"evalward could not reach {route.api}: {message}"
            )
        if answer.data is not None:
            call.record(answer.reply.status, FREE)
            return answer_json(answer.reply.status, answer.data)
        return self._upstream_error(call, answer)

    def _admit(self, call: Call, uncountable: str | None) -> web.Response | None:
        """Count `call` against the budget and the run's share, or refuse it (recorded in
        the trace, and once per run as an error step)."""
        refusal = uncountable or (
            self.allowance.admit(call.grant.key) if self.allowance is not None else None
        )
        if refusal is None:
            return None
        trace = call.grant.trace
        if trace is not None and not call.grant.refused:
            trace.add(StepType.error, content=f"a model call was refused: {refusal}")
        call.grant.refused = True
        return call.refuse(Problem.budget, f"evalward refused this call: {refusal}")

    async def _mock(
        self,
        kind: Kind,
        fmt: Format | None,
        provider: MeteredProvider,
        body: dict[str, Any],
        call: Call,
    ) -> tuple[dict[str, Any], Usage]:
        """The mock script's answer, written in the agent's API."""
        self._mocked += 1
        if fmt is None:
            reply = embeddings_wire.mock_reply(body)
            usage = self._spend(provider, body["model"], embeddings_wire.usage(reply))
            return reply, usage
        response = await provider.complete(fmt.chat_request(body, call.grant.labels))
        return fmt.reply(response, body, self._mocked), response.usage

    def _spend(self, provider: MeteredProvider, model: str, usage: Usage) -> Usage:
        priced = provider.meter(model, usage)
        if self.allowance is not None and self.providers.override is None:  # a mock is free
            self.allowance.spend(priced.cost_usd)
        return priced

    def _upstream_error(self, call: Call, answer: Answer) -> web.Response:
        """Pass the provider's refusal on (its status and body) — except a rejected key,
        which is evalward's to fix and whose message may quote part of the real key."""
        if answer.reply.status < 300:  # a success that was not a JSON object, on every attempt
            message = f"{call.api} answered with a body that is not a JSON object"
            call.record(502, error=message)
            return problem(call.api, Problem.upstream, message)
        if answer.reply.status in (401, 403):
            call.record(answer.reply.status, error=self._rejected_key(call.api, answer))
        else:
            text = self._redact(answer.reply.body.decode("utf-8", "replace"))
            call.record(answer.reply.status, error=f"HTTP {answer.reply.status}: {text[:300]}")
        return self._passed_on(call.api, answer)

    def _passed_on(self, api: Api, answer: Answer) -> web.Response:
        status = answer.reply.status
        if status in (401, 403):
            return problem(api, Problem.unauthorized, self._rejected_key(api, answer))
        text = self._redact(answer.reply.body.decode("utf-8", "replace"))
        try:
            data = jsontext.loads(text)
        except ValueError:
            data = error_body(api, Problem.upstream, f"{api} answered HTTP {status}: {text[:500]}")
        return answer_json(status, data, NO_RETRY)

    @staticmethod
    def _rejected_key(api: Api, answer: Answer) -> str:
        return (
            f"{api} rejected evalward's key (HTTP {answer.reply.status}); the key evalward "
            f"holds for {api} needs fixing, not the agent's"
        )

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


async def _pass_on(response: web.StreamResponse, events: bytes) -> str | None:
    """Write `events` to the agent; why not, when it has hung up. The stream from upstream
    is read to its end all the same: its usage comes last, and the call is metered by it."""
    try:
        await response.write(events)
    except ConnectionError:
        return "the agent closed the connection before the stream ended"
    return None


def _take(events: list[Event], accumulator: Accumulator, tally: DeltaTally) -> bytes:
    """The events of a stream read (and counted), that are the agent's to see."""
    passed = []
    for event in events:
        tally.feed(event)
        if accumulator.feed(event):
            passed.append(event.raw)
    return b"".join(passed)


def _usage(kind: Kind, body: Mapping[str, Any], reply: Mapping[str, Any]) -> Usage:
    """What a whole reply says it used; counted from its text when it says nothing."""
    fmt = FORMATS.get(kind)
    usage = fmt.usage(reply) if fmt is not None else embeddings_wire.usage(reply)
    if usage.total_tokens:
        return usage
    return unreported(usage, body, turn_tokens(fmt.turn(reply)) if fmt is not None else 0)
