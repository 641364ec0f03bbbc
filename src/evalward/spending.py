"""What a run may spend on models, and what it has: the budget's limits, a plan's estimate,
and the allowance the model proxy counts down.

Plain records, below both the planning that estimates a plan (`budget`) and the model proxy
that enforces what is left (`runtime.model_proxy`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    """The limits a run is given (`max-model-calls`, `max-cost-usd`); None is no limit."""

    max_model_calls: int | None = None
    max_cost_usd: float | None = None

    @property
    def limited(self) -> bool:
        return self.max_model_calls is not None or self.max_cost_usd is not None


@dataclass
class Allowance:
    """The model calls and dollars left to calls made through the model proxy.

    A call is counted when it is let through (so concurrent calls cannot all take the last
    one); its cost when its reply arrives, so calls already in flight when the dollars run
    out still finish. Cached replies cost nothing. A call to a model with no price counts
    against the calls only.
    """

    max_calls: int | None = None
    max_cost_usd: float | None = None
    calls: int = 0
    cost_usd: float = 0.0

    @classmethod
    def left_by(cls, budget: Budget, estimate: Estimate | None) -> Allowance | None:
        """What `budget` leaves after the plan's `estimate`; None for an unlimited budget."""
        if not budget.limited:
            return None
        calls = budget.max_model_calls
        cost = budget.max_cost_usd
        if estimate is not None:
            calls = None if calls is None else max(calls - estimate.calls, 0)
            if cost is not None and estimate.cost_usd is not None:
                cost = max(cost - estimate.cost_usd, 0.0)
        return cls(max_calls=calls, max_cost_usd=cost)

    def admit(self) -> str | None:
        """Count one call, or say why it is refused."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            return (
                f"the job's model-call budget is spent: "
                f"{'1 call was' if self.max_calls == 1 else f'{self.max_calls} calls were'} "
                "left to agents' own calls after the plan's estimate (max-model-calls)"
            )
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return (
                f"the job's cost budget is spent: ${self.max_cost_usd:.4f} was left to "
                "agents' own calls after the plan's estimate (max-cost-usd)"
            )
        self.calls += 1
        return None

    def spend(self, cost_usd: float | None) -> None:
        self.cost_usd += cost_usd or 0.0


@dataclass(frozen=True)
class Estimate:
    """A plan's expected model calls and cost, before it runs (`budget.estimate_run`)."""

    calls: int
    cost_usd: float | None
    """None when a model in the plan has no price."""
