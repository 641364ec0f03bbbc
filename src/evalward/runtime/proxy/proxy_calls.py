"""One model call through the proxy, from request to answer.

A call is refused when it asks for what evalward could not observe (`Format.unobserved`),
answered from the response cache, refused by the budget, answered by the mock script, or
sent upstream as the agent wrote it (full fidelity: `response_format`, `tool_choice`,
images, betas; `runtime.proxy_forward`). Whichever way, it is recorded in the run's trace
with its tokens and cost (`Trace.proxy_calls`) and read for the steps it shows
(`runtime.observed`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalward.errors import ProviderError, WireError
from evalward.providers.registry import MeteredProvider, Providers
from evalward.rundata.spending import Allowance
from evalward.rundata.trace import StepType, Usage
from evalward.runtime.proxy import text_tools
from evalward.runtime.proxy.call_record import (
    FREE,
    Call,
    answer_json,
    clipped,
    problem,
)
from evalward.runtime.proxy.proxy_forward import MeteredForward, upstream_error
from evalward.runtime.proxy.wire import FORMATS, worst_case
from evalward.runtime.proxy.wire import embeddings as embeddings_wire
from evalward.runtime.proxy.wire.base import Api, Kind
from evalward.runtime.proxy.wire.problems import WireProblem
from evalward.runtime.proxy.wire.routes import WireRoute
from evalward.security import Redactor

if TYPE_CHECKING:
    from aiohttp import web


MODEL_NAME_CHARS = 200
"""Characters of a call's model name its record keeps: names are short, and the agent's
bytes must not decide how much of them every record of the run holds."""


class Answerer:
    """Answers the model calls of one run of evalward."""

    def __init__(self, providers: Providers, allowance: Allowance | None, redact: Redactor) -> None:
        self.providers = providers
        self.allowance = allowance
        self._redact = redact
        self._mocked = 0

    async def answer(
        self, call: Call, route: WireRoute, body: dict[str, Any], request: web.Request
    ) -> web.StreamResponse:
        assert route.kind is not None
        fmt = FORMATS.get(route.kind)
        name = self.providers.serving(route.api)
        call.model = f"{name}/{clipped(str(body['model']), MODEL_NAME_CHARS)}"
        call.streamed = fmt is not None and fmt.streamed(body)
        provider = self.providers.override or self.providers.by_name.get(name)
        if not isinstance(provider, MeteredProvider):
            return call.refuse(WireProblem.upstream, _no_provider(route.api))
        unobserved = fmt.unobserved(body) if fmt is not None else None
        if unobserved is not None:
            return call.refuse(WireProblem.bad_request, unobserved)
        observer = call.grant.observer
        if observer is not None and fmt is not None:
            observer.request(fmt.results(body), call.started, body)
            observer.offer(fmt.offered(body))
            if text_tools.asks_for_calls(body):  # ReAct's tools are listed in its prompt
                observer.offer(text_tools.offered(body))
        mocked = self.providers.override is not None
        forward = MeteredForward(
            call,
            fmt,
            provider,
            route,
            body,
            request,
            self._redact,
            allowance=None if mocked else self.allowance,
        )
        if not mocked:
            missing = self._missing_key(name)
            if missing:
                return call.refuse(WireProblem.unauthorized, missing)
            hit = forward.cached()
            if hit is not None:
                return await forward.replay(hit)
        worst = self._worst(provider, route.kind, body, len(await request.read()))
        held = worst if isinstance(worst, float) else 0.0
        unheld = worst if isinstance(worst, str) else None
        refused = await self._admit(
            call, self._uncountable(provider, body["model"]) or unheld, held
        )
        if refused is not None:
            return refused
        forward.held_usd = held
        try:
            if mocked:
                reply, usage = await self._mock(forward)
                return await forward.deliver(reply, usage)
            forwarding = provider.forwarding
            assert forwarding is not None, f"{provider.name} cannot forward requests"
            return await forward.send(forwarding)
        except WireError as exc:
            return call.refuse(WireProblem.bad_request, str(exc))
        except ProviderError as exc:
            return self._unreached(call, exc)
        except asyncio.CancelledError:
            forward.unsettled(cut=True)
            raise
        finally:
            forward.unsettled(cut=False)

    async def models(
        self, call: Call, route: WireRoute, headers: Mapping[str, str]
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
                WireProblem.unauthorized, missing or f"evalward has no {route.api} provider"
            )
        refused = await self._admit(call, None)
        if refused is not None:
            return refused
        provider.spent.add(FREE)
        if mocked is not None or forwarding is None:
            if route.model_id:
                data = embeddings_wire.models_list([route.model_id], anthropic=anthropic)["data"][0]
            else:
                names = self.providers.prices.models(route.api)
                data = embeddings_wire.models_list(names, anthropic=anthropic)
            call.record(200, FREE)
            return answer_json(200, data)
        try:
            answer = await forwarding.forward(route.upstream, None, headers)
        except ProviderError as exc:
            return self._unreached(call, exc)
        if answer.data is not None:
            call.record(answer.reply.status, FREE)
            return answer_json(answer.reply.status, answer.data)
        return upstream_error(call, answer, self._redact)

    def _unreached(self, call: Call, exc: ProviderError) -> web.Response:
        """A call its provider could not be reached for: recorded, and answered in its API."""
        message = self._redact(str(exc))
        call.record(502, error=message)
        return problem(
            call.api, WireProblem.upstream, f"evalward could not reach {call.api}: {message}"
        )

    async def _admit(
        self, call: Call, uncountable: str | None, held: float = 0.0
    ) -> web.Response | None:
        """Count `call` against the budget (holding `held`, its cost at its worst, once the
        calls in flight leave room for it), the run's share and the providers' ceiling, or
        refuse it (recorded in the trace, and once per run as an error step)."""
        allowance, refusal = self.allowance, uncountable
        if refusal is None and allowance is not None:
            refusal = await allowance.admit(call.grant.key, held)
        if refusal is None:
            refusal = self.providers.ceiling.admit()
            if refusal is None:
                return None
            if allowance is not None:
                allowance.release(held)  # held for a call that is not sent
        trace = call.grant.trace
        if trace is not None:
            trace.budget_refused = True
        if trace is not None and not call.grant.refused:
            trace.add(StepType.error, content=f"a model call was refused: {refusal}")
        call.grant.refused = True
        return call.refuse(WireProblem.budget, f"evalward refused this call: {refusal}")

    async def _mock(self, forward: MeteredForward) -> tuple[dict[str, Any], Usage]:
        """The mock script's answer, written in the agent's API."""
        self._mocked += 1
        fmt, body = forward.fmt, forward.body
        if fmt is None:
            reply = embeddings_wire.mock_reply(body)
            return reply, forward.meter(embeddings_wire.usage(reply))
        response = await forward.provider.complete(
            fmt.chat_request(body, forward.call.grant.labels), admitted=True
        )
        return fmt.reply(response, body, self._mocked), response.usage

    def _worst(
        self, provider: MeteredProvider, kind: Kind, body: dict[str, Any], size: int
    ) -> float | str:
        """What `max-cost-usd` holds for a call of `size` bytes while it is in flight: its
        cost at its worst (`wire.worst_case`), or why its size does not bound it; 0.0 where
        no dollars are counted (no `max-cost-usd`, a mock script's free replies)."""
        allowance = self.allowance
        if allowance is None or allowance.max_cost_usd is None or self.providers.override:
            return 0.0
        tier = worst_case.dearer_tier(kind, body)
        if tier is not None:
            return (
                f"the call asks for service_tier {tier!r}, which is billed above the price "
                "table's prices, so max-cost-usd cannot count what it costs; leave "
                "service_tier out, or ask for auto, default or flex"
            )
        unbounded = worst_case.unbounded(kind, body)
        if unbounded is not None:
            return (
                f"the call sends {unbounded}, whose tokens its size does not bound, so "
                "max-cost-usd cannot hold what it may cost before it is sent; send the "
                "content itself (text, images), or run without max-cost-usd"
            )
        usage = worst_case.worst_usage(kind, body, size)
        cost = provider.priced_usage(str(body["model"]), usage).cost_usd
        return float(cost or 0.0)

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

    def _missing_key(self, name: str) -> str | None:
        """Why provider `name` cannot be called: evalward holds none of the key it needs."""
        credentials = self.providers.credentials.get(name)
        if credentials is None or credentials.has_key or not credentials.needs_key:
            return None  # or a server that may need no key
        return (
            f"evalward holds no key for {name}: set {credentials.key_env} in the environment "
            "evalward runs in (agents get a key of evalward's model proxy, never that one)"
        )


def _no_provider(api: Api) -> str:
    """Why a route has no provider: only Gemini's is one evalward.yaml adds."""
    if api == "gemini":
        return (
            "evalward has no provider that speaks Gemini's API: add one under `providers` in "
            "evalward.yaml, e.g. `gemini: { api: gemini, baseUrl: "
            "https://generativelanguage.googleapis.com, apiKeyEnv: GEMINI_API_KEY }`"
        )
    return f"evalward has no {api} provider"
