"""Cost of a model call from its token usage: a price table per `provider/model`.

Defaults are list prices in USD per million tokens; `evalward.yaml` `pricing` overrides or
extends them. A model with no price reports tokens only (cost None), never a guessed cost.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from evalward.providers.config import Price
from evalward.rundata.trace import Usage

DEFAULT_PRICES: dict[str, Price] = {
    "openai/gpt-5": Price(input=1.25, output=10.0),
    "openai/gpt-5-mini": Price(input=0.25, output=2.0),
    "openai/gpt-5-nano": Price(input=0.05, output=0.4),
    "openai/gpt-5-chat-latest": Price(input=1.25, output=10.0),
    "openai/gpt-5.1": Price(input=1.25, output=10.0),
    "openai/gpt-4.1": Price(input=2.0, output=8.0),
    "openai/gpt-4.1-mini": Price(input=0.4, output=1.6),
    "openai/gpt-4.1-nano": Price(input=0.1, output=0.4),
    "openai/gpt-4o": Price(input=2.5, output=10.0),
    "openai/gpt-4o-mini": Price(input=0.15, output=0.6),
    "openai/gpt-4-turbo": Price(input=10.0, output=30.0),
    "openai/gpt-4": Price(input=30.0, output=60.0),
    "openai/gpt-3.5-turbo": Price(input=0.5, output=1.5),
    "openai/o1": Price(input=15.0, output=60.0),
    "openai/o1-mini": Price(input=1.1, output=4.4),
    "openai/o3": Price(input=2.0, output=8.0),
    "openai/o3-mini": Price(input=1.1, output=4.4),
    "openai/o3-pro": Price(input=20.0, output=80.0),
    "openai/o4-mini": Price(input=1.1, output=4.4),
    "openai/text-embedding-3-large": Price(input=0.13, output=0.0),
    "openai/text-embedding-3-small": Price(input=0.02, output=0.0),
    "openai/text-embedding-ada-002": Price(input=0.1, output=0.0),
    "anthropic/claude-3-haiku": Price(input=0.25, output=1.25),
    "anthropic/claude-3-opus": Price(input=15.0, output=75.0),
    "anthropic/claude-3-5-haiku": Price(input=0.8, output=4.0),
    "anthropic/claude-3-5-sonnet": Price(input=3.0, output=15.0),
    "anthropic/claude-3-7-sonnet": Price(input=3.0, output=15.0),
    "anthropic/claude-sonnet-4": Price(input=3.0, output=15.0),
    "anthropic/claude-opus-4": Price(input=15.0, output=75.0),
    "anthropic/claude-opus-4-1": Price(input=15.0, output=75.0),
    "anthropic/claude-haiku-4-5": Price(input=1.0, output=5.0),
    "anthropic/claude-sonnet-4-5": Price(input=3.0, output=15.0),
    "anthropic/claude-sonnet-4-6": Price(input=3.0, output=15.0),
    "anthropic/claude-opus-4-5": Price(input=5.0, output=25.0),
}


SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)\Z")
"""The end of a dated (or `-latest`) model id."""


class PriceTable:
    def __init__(self, overrides: Mapping[str, Price] | None = None) -> None:
        self._prices = {**DEFAULT_PRICES, **(overrides or {})}

    def models(self, provider: str) -> list[str]:
        """The models of `provider` that have a price."""
        prefix = f"{provider}/"
        return sorted(k.removeprefix(prefix) for k in self._prices if k.startswith(prefix))

    def of(self, model_id: str) -> Price | None:
        """The price of a `provider/model` id, as definitions name models; a dated snapshot
        (`gpt-4.1-mini-2025-04-14`, `claude-sonnet-4-20250514`) or Anthropic's `-latest` costs
        what its model does, unless it has a price of its own."""
        found = self._prices.get(model_id)
        return found if found is not None else self._prices.get(SNAPSHOT.sub("", model_id))

    def with_cost(self, provider: str, model: str, usage: Usage) -> Usage:
        price = self.of(f"{provider}/{model}")
        if price is None:
            return usage.model_copy(update={"cost_usd": None})
        cost = (usage.input_tokens * price.input + usage.output_tokens * price.output) / 1e6
        return usage.model_copy(update={"cost_usd": round(cost, 8)})
