"""evalward's own embeddings calls (a `similar` assertion's), made from the gate's side the
way the model proxy makes an agent's: OpenAI's `POST /embeddings` on the provider the model id
names, looked up in the response cache, sent with evalward's key, metered (priced and counted
in the run's tally, as grading calls), and stored; under a mock script, answered by the
proxy's mock embeddings (equal texts, equal vectors), priced as the named provider's would be.

No agent is involved: the key is evalward's and the texts are the fixture's and the run's
final output; nothing here is reachable from the run's processes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalward.errors import EmbeddingError, EvalwardError, ProviderUnavailable
from evalward.providers.base import RunLabels
from evalward.providers.registry import MeteredProvider, Providers
from evalward.resources.common import is_number
from evalward.runtime.proxy.wire import embeddings as embeddings_wire
from evalward.runtime.proxy.wire.routes import WireRoute, route_of
from evalward.text.cuts import cap_chars

ROUTE = "/v1/embeddings"
"""The model proxy's embeddings route: where these calls go upstream, and how."""


async def embed(
    providers: Providers, model_id: str, texts: list[str], rep: int
) -> list[list[float]]:
    """The embeddings of `texts` (in their order) by `model_id`, one call for all of them."""
    try:
        provider, model = providers.resolve(model_id)
    except EvalwardError as exc:
        raise EmbeddingError(str(exc)) from None
    if not isinstance(provider, MeteredProvider):
        raise EmbeddingError(f"evalward has no provider for {model_id}")
    body: dict[str, Any] = {"model": model, "input": list(texts)}
    labels = RunLabels(rep=rep, purpose="judge")
    if providers.override is not None:
        _admit(providers)
        reply = embeddings_wire.mock_reply(body)
        provider.meter(model, embeddings_wire.usage(reply), purpose="judge")
        return _vectors(reply, len(texts), model_id)
    route = route_of("POST", ROUTE, {})
    assert isinstance(route, WireRoute), "the proxy serves embeddings"
    upstream = route.upstream
    forwarding = provider.forwarding
    if forwarding is None or not providers.endpoints.get(provider.name, "").startswith("openai"):
        raise EmbeddingError(
            f"{model_id}: provider {provider.name!r} does not serve OpenAI's embeddings API; "
            "name an embedding model of `openai` (or of a provider of evalward.yaml with "
            "`api: openai`)"
        )
    # evalward's own grading call: its body and reply are no program's, so both sides share it
    hit = provider.cached_forward(upstream, body, labels)
    if hit is not None:  # counted nowhere, as any reply from the response cache
        return _vectors(hit, len(texts), model_id)
    _admit(providers)
    try:
        answer = await forwarding.forward(upstream, body, {})
    except EvalwardError as exc:
        raise EmbeddingError(
            f"the embeddings of {model_id} failed: {exc}",
            unavailable=isinstance(exc, ProviderUnavailable),
        ) from None
    if answer.data is None:
        status = answer.reply.status
        said = cap_chars(answer.reply.body.decode("utf-8", "replace"), 300)
        raise EmbeddingError(
            f"the embeddings of {model_id} failed: HTTP {status}: {said}",
            unavailable=status >= 500 or status == 429,
        )
    provider.meter(model, embeddings_wire.usage(answer.data), purpose="judge")
    vectors = _vectors(answer.data, len(texts), model_id)
    provider.store_forward(upstream, body, labels, answer.data)
    return vectors


def _admit(providers: Providers) -> None:
    """Hold the call to the providers' ceiling (attribution's budget, while it runs)."""
    refused = providers.ceiling.admit()
    if refused is not None:
        raise EmbeddingError(refused, unavailable=True)


def _vectors(reply: Mapping[str, Any], count: int, model_id: str) -> list[list[float]]:
    """The reply's vectors by `index`, each a list of numbers of one length."""
    data = reply.get("data")
    if not isinstance(data, list) or len(data) != count:
        raise EmbeddingError(f"{model_id} answered with {count} texts asked, not as many vectors")
    found: dict[int, list[float]] = {}
    for item in data:
        index = item.get("index") if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(index, int) or not 0 <= index < count or index in found:
            raise EmbeddingError(f"{model_id} answered with a vector of no text asked")
        if not isinstance(vector, list) or not vector or not all(is_number(v) for v in vector):
            raise EmbeddingError(f"{model_id} answered with an embedding that is not numbers")
        found[index] = [float(v) for v in vector]
    vectors = [found[i] for i in range(count)]
    if len({len(v) for v in vectors}) != 1:
        raise EmbeddingError(f"{model_id} answered with vectors of different lengths")
    return vectors
