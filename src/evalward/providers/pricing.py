"""Cost of a model call from its token usage: a price table per `provider/model`.

Defaults are list prices in USD per million tokens; `evalward.yaml` `pricing` overrides or
extends them. A model with no price reports tokens only (cost None), never a guessed cost.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalward.providers.config import Price
from evalward.rundata.trace import Usage

DEFAULT_PRICES: dict[str, Price] = {
    "openai/gpt-4.1": Price(input=2.0, output=8.0),
    "openai/gpt-4.1-mini": Price(input=0.4, output=1.6),
    "openai/gpt-4.1-nano": Price(input=0.1, output=0.4),
    "openai/gpt-4o": Price(input=2.5, output=10.0),
    "openai/gpt-4o-mini": Price(input=0.15, output=0.6),
    "anthropic/claude-haiku-4-5": Price(input=1.0, output=5.0),
    "anthropic/claude-sonnet-4-5": Price(input=3.0, output=15.0),
    "anthropic/claude-sonnet-4-6": Price(input=3.0, output=15.0),
    "anthropic/claude-opus-4-5": Price(input=5.0, output=25.0),
}


class PriceTable:
    def __init__(self, overrides: Mapping[str, Price] | None = None) -> None:
        self._prices = {**DEFAULT_PRICES, **(overrides or {})}

    def price(self, provider: str, model: str) -> Price | None:
        return self._prices.get(f"{provider}/{model}")

    def models(self, provider: str) -> list[str]:
        """The models of `provider` that have a price."""
        prefix = f"{provider}/"
        return sorted(k.removeprefix(prefix) for k in self._prices if k.startswith(prefix))

    def of(self, model_id: str) -> Price | None:
        """The price of a `provider/model` id, as definitions name models."""
        return self._prices.get(model_id)

    def with_cost(self, provider: str, model: str, usage: Usage) -> Usage:
        price = self.price(provider, model)
        if price is None:
            return usage.model_copy(update={"cost_usd": None})
        cost = (usage.input_tokens * price.input + usage.output_tokens * price.output) / 1e6
        return usage.model_copy(update={"cost_usd": round(cost, 8)})
