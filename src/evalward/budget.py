"""Estimate a plan's model calls and cost before it runs, and trim it to a budget.

The estimate per run is deliberately simple and documented: a declarative agent makes one
model call per turn, and its turns are one more than the distinct tools its fixture's
assertions name (capped at `maxTurns`); each judge assertion adds one call when the Eval has a
judge. Tokens per call: the prompt (system, input, tool schemas) at four characters a token,
plus 300 output tokens. Bring-your-own agents call their models themselves, so only their
judge calls count. Runs the result cache will answer cost nothing.

What the estimate leaves of the budget is the `Allowance` of the calls that cannot be
estimated: those bring-your-own agents (and command tools) make through the model proxy.
The proxy counts them as they happen and refuses the first one past it.

Over budget, fixtures run in order of severity (critical first; within a severity, by Eval
and fixture name); a fixture's reps and both of its sides stay together; the rest are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from evalward.plan import Plan, PlannedRun, Side
from evalward.providers.pricing import PriceTable
from evalward.resources import ResourceSet
from evalward.resources.common import DEFAULT_SEVERITY_WEIGHTS
from evalward.spending import Budget, Estimate

OUTPUT_TOKENS_PER_CALL = 300
CHARS_PER_TOKEN = 4
_TOOL_FIELDS = ("tool", "tools", "before", "after")


@dataclass
class Trimmed:
    plan: Plan
    estimate: Estimate
    skipped: list[PlannedRun] = field(default_factory=list)


def estimate_run(run: PlannedRun, resources: ResourceSet, prices: PriceTable) -> Estimate:
    eval_def = resources.evals[run.eval].resource
    fixture = resources.fixtures[run.fixture].resource.spec
    agent = resources.agents[eval_def.spec.target_agent].resource.spec
    assertions = [a.model_dump(mode="json") for a in fixture.assertions]
    calls: list[tuple[str, int]] = []
    if agent.runtime is None and agent.models:
        named: set[str] = set()
        for assertion in assertions:
            for key in _TOOL_FIELDS:
                value = assertion.get(key)
                named.update([value] if isinstance(value, str) else value or [])
        turns = min(len(named) + 1, agent.max_turns)
        prompt = len(agent.system or "") + len(json.dumps(fixture.input.model_dump(mode="json")))
        prompt += sum(len(json.dumps(t.parameters)) for t in agent.tools if t.enabled)
        calls += [
            (agent.models[0], prompt // CHARS_PER_TOKEN + (turn * 200)) for turn in range(turns)
        ]
    for judge_model in eval_def.spec.judge.models:
        for assertion in assertions:
            if assertion.get("type") == "judge":
                calls.append((judge_model, 1500 + len(assertion.get("rubric", "")) // 4))
    cost: float | None = 0.0
    for model_id, prompt_tokens in calls:
        provider, _, model = model_id.partition("/")
        price = prices.price(provider, model)
        if price is None or cost is None:
            cost = None
            continue
        cost += (prompt_tokens * price.input + OUTPUT_TOKENS_PER_CALL * price.output) / 1e6
    return Estimate(len(calls), cost)


def trim_to_budget(
    plan: Plan,
    resources: dict[Side, ResourceSet],
    prices: PriceTable,
    budget: Budget,
    cached: Callable[[PlannedRun], bool] = lambda run: False,
) -> Trimmed:
    """Keep the most severe fixtures that fit the budget; report the rest as skipped.

    Fixtures that gate come before those a pull request adds (pending ones, which gate only
    once merged): new fixtures cannot push the fixtures that decide the gate out of it."""
    groups: dict[tuple[str, str], list[PlannedRun]] = {}
    for run in plan.runs:
        groups.setdefault((run.eval, run.fixture), []).append(run)

    def severity(group: tuple[str, str]) -> float:
        side = Side.head if any(r.side is Side.head for r in groups[group]) else Side.base
        fixture = resources[side].fixtures[group[1]].resource.spec
        return DEFAULT_SEVERITY_WEIGHTS[fixture.severity]

    calls = 0
    cost: float | None = 0.0
    kept: list[PlannedRun] = []
    skipped: list[PlannedRun] = []

    def pending(group: tuple[str, str]) -> bool:
        return not any(plan.gates(run) for run in groups[group])

    for group in sorted(groups, key=lambda g: (pending(g), -severity(g), g)):
        group_calls = 0
        group_cost: float | None = 0.0
        for run in groups[group]:
            if cached(run):
                continue
            estimate = estimate_run(run, resources[run.side], prices)
            group_calls += estimate.calls
            group_cost = (
                None
                if group_cost is None or estimate.cost_usd is None
                else group_cost + estimate.cost_usd
            )
        over_calls = (
            budget.max_model_calls is not None and calls + group_calls > budget.max_model_calls
        )
        over_cost = (
            budget.max_cost_usd is not None
            and group_cost is not None
            and cost is not None
            and cost + group_cost > budget.max_cost_usd
        )
        if over_calls or over_cost:
            skipped += groups[group]
            continue
        kept += groups[group]
        calls += group_calls
        cost = None if cost is None or group_cost is None else cost + group_cost
    order = {id(run): index for index, run in enumerate(plan.runs)}
    kept.sort(key=lambda run: order[id(run)])
    return Trimmed(plan.with_runs(kept), Estimate(calls, cost), sorted(skipped))
