"""The models each provider serves, as its own `GET /models` lists them.

`evalward validate --ask-providers` asks every provider the definitions use (with the keys of
the environment, as a run would call it) so that a misspelled model is found before a run: the
price list knows only the vendors' models evalward ships prices for, and nothing of what an
Ollama, a gateway or an Azure resource serves. A provider that does not answer (no key, no
network, a server without the route) is said so, and its models are checked against the price
list alone. Listing models costs nothing and sends no prompt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from evalward.errors import ProviderUnavailable
from evalward.providers.registry import MeteredProvider, Providers

LIST_TIMEOUT_SECONDS = 15.0
"""The longest one provider's list may take, its retries included."""
PAGE = "models?limit=1000"
"""Anthropic lists 20 models a page unless asked for more; OpenAI ignores the parameter."""


@dataclass
class ModelLists:
    """Per provider name, the models it listed, or why it listed none."""

    listed: dict[str, frozenset[str]] = field(default_factory=dict)
    unanswered: dict[str, str] = field(default_factory=dict)


async def ask_providers(providers: Providers, names: Iterable[str]) -> ModelLists:
    """Ask each named provider for its models, all at once."""
    found = ModelLists()

    async def one(name: str) -> None:
        provider = providers.by_name.get(name)
        forwarding = provider.forwarding if isinstance(provider, MeteredProvider) else None
        if forwarding is None:
            found.unanswered[name] = "it cannot be asked"
            return
        try:
            async with asyncio.timeout(LIST_TIMEOUT_SECONDS):
                answer = await forwarding.forward(PAGE, None, {})
        except TimeoutError:
            found.unanswered[name] = f"no answer within {LIST_TIMEOUT_SECONDS:g} s"
            return
        except ProviderUnavailable as exc:
            found.unanswered[name] = str(exc)
            return
        models = _ids(answer.data)
        if models is None:
            status = answer.reply.status
            found.unanswered[name] = answer.problem or f"HTTP {status}: not a list of models"
            return
        found.listed[name] = models

    await asyncio.gather(*(one(name) for name in sorted(set(names))))
    return found


def _ids(data: object) -> frozenset[str] | None:
    """The `id`s of `{"data": [{"id": ...}, ...]}`, both vendors' shape; None for another."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return None
    ids = [item.get("id") for item in data["data"] if isinstance(item, dict)]
    return frozenset(i for i in ids if isinstance(i, str))
