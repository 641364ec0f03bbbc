"""One prepared change's run, whole: what every step that runs it takes, made once.

The plan phase makes it (`planned.plan`) from the front end's `RunSetup` and the prepared
change. Every step that keys a run shares its keys: each run's key and each agent's
fingerprint are computed once, however many steps ask.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from evalward.plan.plan import Checkout, Plan, PlannedRun
from evalward.plan.result_cache import CacheKeys
from evalward.plan.run_setup import RunOptions, RunSetup
from evalward.providers.registry import Providers
from evalward.resources import ResourceSet
from evalward.rundata.sides import Side
from evalward.rundata.spending import Budget


@dataclass(frozen=True)
class RunContext:
    """A plan, the checkouts it runs in, the set-up it runs with, and its keys."""

    plan: Plan
    """What runs; the rounds add their runs to it as they go (`rounds.run_rounds`)."""
    checkouts: dict[Side, Checkout]
    setup: RunSetup
    """The front end's set-up: the clients, evalward's environment and the options."""
    keys: CacheKeys
    """The result cache's keys (also where no cache is used: the agents' identities)."""

    @classmethod
    def of(cls, plan: Plan, checkouts: dict[Side, Checkout], setup: RunSetup) -> RunContext:
        """The context of `plan` over `checkouts`, with the keys every step shares."""
        return cls(plan, checkouts, setup, CacheKeys(checkouts, setup.providers))

    @property
    def providers(self) -> Providers:
        return self.setup.providers

    @property
    def env(self) -> Mapping[str, str]:
        """evalward's environment: where the agents' `env:` lists take their values from, and
        what command tools and bring-your-own agents may see (less the provider keys)."""
        return self.setup.env

    @property
    def options(self) -> RunOptions:
        return self.setup.options

    @property
    def resources(self) -> dict[Side, ResourceSet]:
        """Each side's definitions."""
        return {side: checkout.resources for side, checkout in self.checkouts.items()}

    @property
    def budget(self) -> Budget:
        return self.options.budget

    def cached(self) -> Callable[[PlannedRun], bool] | None:
        """Whether the result cache answers a run, as it holds results now (None: it
        answers none, and no key is made for it: `ResultCache.holds`)."""
        cache = self.options.cache
        return cache.holds(self.keys) if cache is not None else None

    def with_plan(self, plan: Plan) -> RunContext:
        """The same run, of `plan` (the budget's cut of it, a round's runs): its keys too."""
        return dataclasses.replace(self, plan=plan)
