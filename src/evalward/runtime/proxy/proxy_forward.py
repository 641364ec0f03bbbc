"""One metered forward: a model call the proxy sends on through a provider, in one place.

It is looked up in the response cache, sent upstream (whole, or streamed event by event as
the provider sends it, so the agent's time to first token is the provider's), metered
(priced, counted in the provider's tally and against the run's budget), stored in the cache,
and delivered to the agent — as it is, or as the stream it asked for (a streamed reply is
kept as the whole reply its stream made). `runtime.proxy_calls.Answerer` decides whether a
call gets this far.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalward.errors import EventStreamError, HttpFailure
from evalward.http.sse import Event, EventReader
from evalward.providers.base import RunLabels
from evalward.providers.registry import MeteredProvider
from evalward.providers.retry import Answer, Opened
from evalward.providers.vendor_api import VendorApi
from evalward.rundata.spending import Allowance
from evalward.rundata.trace import Usage
from evalward.runtime.proxy.call_record import (
    NO_RETRY,
    STREAM_HEADERS,
    Call,
    answer_json,
    problem,
    uncancel,
)
from evalward.runtime.proxy.wire import embeddings as embeddings_wire
from evalward.runtime.proxy.wire.base import Accumulator, Format
from evalward.runtime.proxy.wire.problems import WireProblem, error_body, error_event
from evalward.runtime.proxy.wire.routes import WireRoute
from evalward.runtime.proxy.wire.unreported import DeltaTally, turn_tokens, unreported
from evalward.security import Redactor
from evalward.text import jsontext
from evalward.text.cuts import cap_chars

if TYPE_CHECKING:
    from aiohttp import web


@dataclass
class MeteredForward:
    """One call on its way through `provider`: cache → send → meter → store → deliver."""

    call: Call
    fmt: Format | None
    provider: MeteredProvider
    route: WireRoute
    body: dict[str, Any]
    request: web.Request
    redact: Redactor
    allowance: Allowance | None = None
    """The run's budget; None when nothing counts against it (no budget, or a mock)."""
    held_usd: float = 0.0
    """What the call holds of the budget until its reply settles it (`Allowance.admit`)."""

    @property
    def model(self) -> str:
        return str(self.body["model"])

    def cached(self) -> dict[str, Any] | None:
        """The stored reply to this exact request, when the response cache has it."""
        if not self._kept:
            return None
        return self.provider.cached_forward(self.route.upstream, self.body, self._labels)

    async def replay(self, hit: Mapping[str, Any]) -> web.StreamResponse:
        """A reply from the response cache: priced, counted nowhere, delivered."""
        usage = self.provider.priced_usage(self.model, self._usage(hit))
        return await self.deliver(hit, usage, cached=True)

    async def send(self, forwarding: VendorApi) -> web.StreamResponse:
        """Send the call upstream as the agent wrote it, and settle its reply."""
        if self.call.streamed and self.fmt is not None:
            return await self._stream(self.fmt, forwarding)
        sent = self.fmt.upstream(self.body) if self.fmt is not None else self.body
        answer = await forwarding.forward(self.route.upstream, sent, self.request.headers)
        return await self.settle(answer)

    def meter(self, usage: Usage) -> Usage:
        """`usage` priced, counted in the provider's tally and against the run's budget."""
        priced = self.provider.meter(self.model, usage)
        if self.allowance is not None:
            self.allowance.spend(priced.cost_usd, self.held_usd)
        self.held_usd = 0.0
        return priced

    def unsettled(self, *, cut: bool) -> None:
        """A call no reply has settled: its hold given back (the provider refused it or was
        not reached), or, `cut` before its reply came, spent whole: what it cost is unknown,
        and at most what it held. A cut call is spent in what the job spent too, and its
        record in the run's trace carries that cost (`Call.charged`): the spending
        results.json reports is what the budget counted."""
        if self.allowance is not None and self.held_usd:
            if cut:
                self.allowance.cut(self.held_usd)
                self.call.charged = Usage(cost_usd=self.held_usd)
            else:
                self.allowance.release(self.held_usd)
        self.held_usd = 0.0

    def store(self, reply: Mapping[str, Any]) -> None:
        if self._kept:
            self.provider.store_forward(self.route.upstream, self.body, self._labels, reply)

    async def settle(self, answer: Answer) -> web.StreamResponse:
        """A whole reply from upstream: metered, cached and delivered, or its refusal."""
        if answer.data is None:
            return upstream_error(self.call, answer, self.redact)
        usage = self.meter(self._usage(answer.data))
        self.store(answer.data)
        return await self.deliver(answer.data, usage, status=answer.reply.status)

    async def deliver(
        self,
        reply: Mapping[str, Any],
        usage: Usage,
        *,
        status: int = 200,
        cached: bool = False,
    ) -> web.StreamResponse:
        """A whole reply to the agent: as it is, or as the stream it asked for."""
        call, fmt = self.call, self.fmt
        entry = call.record(status, usage, cached=cached)
        if fmt is not None:
            self._observe(fmt, reply)
        if not call.streamed or fmt is None:
            return answer_json(status, reply)
        response = await _open_stream(self.request)
        with contextlib.suppress(ConnectionError):
            for number, event in enumerate(fmt.replay(self.body, reply)):
                await response.write(event)
                if number == 0 and entry is not None:
                    entry.first_byte_ms = call.elapsed_ms()
            await response.write_eof()
        return response

    async def _stream(self, fmt: Format, forwarding: VendorApi) -> web.StreamResponse:
        """Pass an upstream stream on event by event, reading it on the way."""
        sent = fmt.upstream(self.body)
        async with forwarding.stream(self.route.upstream, sent, self.request.headers) as up:
            if isinstance(up, Answer):  # an error, or a server that did not stream
                return await self.settle(up)
            response = await _open_stream(self.request)
            relay = _Relay(fmt.accumulator(self.body))
            await self._relay(fmt, up, response, relay)
        self._account(fmt, relay)
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
        return response

    async def _relay(
        self, fmt: Format, up: Opened, response: web.StreamResponse, relay: _Relay
    ) -> None:
        """Read the upstream stream to its end, passing on what the agent is to see."""
        call = self.call
        try:
            async for chunk in up.reply.chunks():
                # the events this chunk completed, passed on in one write
                passed = relay.take(relay.reader.feed(chunk))
                if passed and relay.failure is None:
                    relay.failure = await _pass_on(response, passed)
                    relay.first = call.elapsed_ms() if relay.first is None else relay.first
            rest = relay.take(relay.reader.finish())
            if rest and relay.failure is None:
                relay.failure = await _pass_on(response, rest)
        except (HttpFailure, EventStreamError) as exc:
            relay.cut = True
            broke = f"the stream from {call.api} broke off: {exc}"
            relay.failure = relay.failure or self.redact(broke)
            with contextlib.suppress(ConnectionError):
                await response.write(error_event(fmt.kind, relay.failure, relay.passed_events))
        except asyncio.CancelledError:  # the run is over (`Grant.end_calls`)
            if not call.grant.ended:
                raise
            uncancel()
            relay.cut = relay.ended = True
            relay.failure = relay.failure or "the run ended before the stream did"

    def _account(self, fmt: Format, relay: _Relay) -> None:
        """A relayed stream metered, cached when whole, and recorded in the trace."""
        call, accumulator = self.call, relay.accumulator
        reply = accumulator.result()
        error = relay.failure or accumulator.error
        if reply is None and error is None:
            error = f"the stream from {call.api} ended before a reply"
        reported = fmt.usage(reply or {})
        if relay.ended and self.held_usd:  # what it wrote no event carried (its thinking)
            self.unsettled(cut=True)  # is unknown, and at most what it held: spent whole
            usage = call.charged
        else:
            if relay.cut or accumulator.error or not reported.total_tokens:  # no usage came
                counted = unreported(reported, self.body, relay.tally.tokens)
                if counted != reported and error is not None:
                    error += f"; charged as the {counted.output_tokens:,} output tokens it carried"
                reported = counted
            usage = self.meter(reported)
        if reply is not None and error is None:
            self.store(reply)
        entry = call.record(200, usage, error=self.redact(error) if error else None)
        if entry is not None:
            entry.first_byte_ms = relay.first
        if reply is not None:
            self._observe(fmt, reply)

    def _observe(self, fmt: Format, reply: Mapping[str, Any]) -> None:
        """The steps the reply shows, in a run whose trace is read from its traffic."""
        call = self.call
        if call.grant.observer is not None:
            turn = fmt.turn(reply, self.body)
            call.grant.observer.reply(
                turn, call.model, call.started, request=self.body, duration_ms=call.elapsed_ms()
            )

    def _usage(self, reply: Mapping[str, Any]) -> Usage:
        """What a whole reply says it used; counted from its text when it says nothing."""
        fmt = self.fmt
        usage = fmt.usage(reply) if fmt is not None else embeddings_wire.usage(reply)
        if usage.total_tokens:
            return usage
        return unreported(
            usage, self.body, turn_tokens(fmt.turn(reply, self.body)) if fmt is not None else 0
        )

    @property
    def _labels(self) -> RunLabels:
        return self.call.grant.labels

    @property
    def _kept(self) -> bool:
        """Whether the response cache answers and keeps the call: a run's, not one an agent
        server makes with its own key, which belongs to no run and so to neither side (the
        head's server would keep the reply it likes for the base's to read)."""
        return self.call.grant.trace is not None


@dataclass
class _Relay:
    """What reading one upstream stream has found so far."""

    accumulator: Accumulator
    reader: EventReader = field(default_factory=EventReader)
    tally: DeltaTally = field(default_factory=DeltaTally)
    first: float | None = None
    """When the agent got its first bytes (ms into the call)."""
    failure: str | None = None
    cut: bool = False
    """The stream ended before its end: broken off, or the run was over."""
    ended: bool = False
    """The run was over before the stream: what the model wrote that no event carried (a
    reasoning or thinking model's thoughts) is unknown, so the call is spent at its hold."""
    passed_events: int = 0
    """How many events the agent was given: a Responses stream's next `sequence_number`."""

    def take(self, events: list[Event]) -> bytes:
        """The events of a stream read (and counted), that are the agent's to see."""
        passed = []
        for event in events:
            self.tally.feed(event)
            if self.accumulator.feed(event):
                passed.append(event.raw)
                self.passed_events += 1
        return b"".join(passed)


async def _open_stream(request: web.Request) -> web.StreamResponse:
    from aiohttp import web

    response = web.StreamResponse(status=200, headers=STREAM_HEADERS)
    await response.prepare(request)
    return response


async def _pass_on(response: web.StreamResponse, events: bytes) -> str | None:
    """Write `events` to the agent; why not, when it has hung up. The stream from upstream
    is read to its end all the same: its usage comes last, and the call is metered by it."""
    try:
        await response.write(events)
    except ConnectionError:
        return "the agent closed the connection before the stream ended"
    return None


def upstream_error(call: Call, answer: Answer, redact: Redactor) -> web.Response:
    """Pass the provider's refusal on (its status and body) — except a rejected key,
    which is evalward's to fix and whose message may quote part of the real key."""
    api, status = call.api, answer.reply.status
    if status < 300:  # a success that was not a JSON object, on every attempt
        message = f"{api} answered with a body that is not a JSON object"
        call.record(502, error=message)
        return problem(api, WireProblem.upstream, message)
    if status in (401, 403):
        rejected = (
            f"{api} rejected evalward's key (HTTP {status}); the key evalward "
            f"holds for {api} needs fixing, not the agent's"
        )
        call.record(status, error=rejected)
        return problem(api, WireProblem.unauthorized, rejected)
    text = redact(answer.reply.body.decode("utf-8", "replace"))
    call.record(status, error=f"HTTP {status}: {cap_chars(text, 300)}")
    try:
        data = jsontext.loads(text)
    except ValueError:
        data = error_body(
            api, WireProblem.upstream, f"{api} answered HTTP {status}: {cap_chars(text, 500)}"
        )
    return answer_json(status, data, NO_RETRY)
