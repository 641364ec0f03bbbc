"""Estimate a plan's model calls and cost before it runs, and trim it to a budget.

The estimate of a run is built from the sizes of what its calls will carry, at four
characters a token (`CHARS_PER_TOKEN`): its agent's calls turn by turn and its judges' calls,
as docs/cli.md ("The estimate") sets out, with its ratio to what runs spent. The system
prompt is what its agent sends, a `systemFile`'s as long as the file in its side's commit
(`ResourceSet.system_size`, asked of the door once per agent). Besides those:

- Each `similar` assertion adds one embeddings call to its model: the texts and the answer.
- A head run of a fixture judged pairwise adds two calls of the pairwise judge (its pair
  with the base's run, in both orders), each reading the rubric and both runs.
- An agent whose kind makes no model call evalward can foresee (`AgentKind.calls_estimated`)
  counts its answer as `REPLY_TOKENS`.

What the estimate leaves of the budget is the `Allowance` of the calls that cannot be
estimated: those bring-your-own agents (and command tools) make through the model proxy,
and a declarative agent's past the ones its run's estimate counted (`OwnCalls`). Each is
counted as it happens, holding its cost at its worst until its reply, and the first one past
it is refused; a call the estimate counted holds its worst against the whole budget. An
estimate is a guess: under `max-cost-usd` no agent's call is sent once what the job's calls
actually cost has reached the budget, counted here or not (`Allowance.spent_out`). A
simulated user's calls are estimated at their most (one per turn the conversation can
reach), but what they read grows with what the agent says: their share stays in the
allowance, and each call is counted against it as it is made, so the budget stops a
conversation that outgrows it.

Over budget, what runs is decided from the base's definitions alone (`trim_to_budget`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalward.errors import ConfigError
from evalward.plan.estimate_conversation import agent_turns, opening_messages, user_calls
from evalward.plan.plan import Plan, PlannedRun
from evalward.providers.pricing import PriceTable
from evalward.resources import ResourceSet
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.checks.assertions import JudgeAssertion, SimilarAssertion, flatten
from evalward.resources.common import DEFAULT_SEVERITY_WEIGHTS
from evalward.resources.models import EvalFixtureSpec, EvalSpec
from evalward.rundata.sides import Side
from evalward.rundata.spending import Budget, Estimate
from evalward.runtime.agents.kinds.registry import kind_of
from evalward.runtime.tools.tools import tool_text
from evalward.scoring.judges.judge import SYSTEM_PROMPT
from evalward.scoring.judges.pairwise_judge import SYSTEM_PROMPT as PAIRWISE_PROMPT

CHARS_PER_TOKEN = 4
MESSAGE_TOKENS = 4
TOOL_CALL_TOKENS = 30
TOOL_RESULT_TOKENS = 100
REPLY_TOKENS = 150
JUDGE_REPLY_TOKENS = 150
STEP_CHARS = 40
"""A trace step's framing in the JSON the judge reads (`{"step": 3, "type": ..., "text": }`)."""
_TOOL_FIELDS = ("tool", "tools", "before", "after")


@dataclass
class Trimmed:
    plan: Plan
    estimate: Estimate
    """What the kept runs are expected to spend, each by its own side's definitions."""
    skipped: list[PlannedRun]
    counted: Estimate
    """What the budget counted for the kept runs (`budget_estimate`)."""
    base_over: frozenset[str] = frozenset()
    """The Evals whose runs of the fixtures the base gates with the budget cannot hold even
    alone, each Eval's counted apart from every other's: only their skipped runs may be
    excused, since which other Evals a pull request affects is its own choice (and not those
    of an Eval whose agent the base branch has changed since the merge base it was estimated
    at: `Plan.base_behind`, nor of one whose runs that would fit alone the others crowded
    out)."""

    @property
    def note(self) -> str:
        """What the report says when the budget skipped runs ("" when it skipped none)."""
        if not self.skipped:
            return ""
        total = len(self.plan.runs) + len(self.skipped)
        said = (
            f"over budget: {len(self.skipped)} of {total} runs skipped "
            f"(estimated {self.counted.calls} model calls for the rest)"
        )
        own = [r for r in self.skipped if r.eval in self.base_over and self.plan.base_gates(r)]
        if own:
            said += (
                f"; {len(own)} of them are of fixtures the base branch gates with in "
                f"{', '.join(sorted(self.base_over))}, whose own runs the budget cannot hold "
                "even alone"
            )
        return said


@dataclass(frozen=True)
class Prompted:
    """An Agent as the estimate reads it: its definition, and how long the system prompt is
    that every call of its sends (`ResourceSet.system_size`: a `systemFile`'s too)."""

    spec: AgentSpec
    system: int


@dataclass(frozen=True)
class _Call:
    model: str
    prompt: int
    reply: int


def estimate_run(
    run: PlannedRun, resources: ResourceSet, prices: PriceTable, counted: Prompted | None = None
) -> Estimate:
    """The run's model calls, tokens and cost; `counted` estimates it with another definition
    of its agent than `resources` holds (`budget_estimate`)."""
    eval_def = resources.evals[run.eval].resource
    fixture = resources.fixtures[run.fixture].resource.spec
    if counted is None:
        name = eval_def.spec.target_agent
        counted = Prompted(resources.agents[name].resource.spec, resources.system_size(name))
    agent, system = counted.spec, counted.system
    assertions = flatten(fixture.assertions)
    given = sum(len(m.content) for m in opening_messages(fixture))
    calls: list[_Call] = []
    seen = given + len(fixture.reference or "")  # what the judge reads of the run
    estimated = kind_of(agent).calls_estimated
    if estimated and agent.models:
        named: set[str] = set()
        for assertion in assertions:
            for key in _TOOL_FIELDS:
                value = vars(assertion).get(key)  # a field, if the type has it
                named.update([value] if isinstance(value, str) else value or [])
        offered = any(t.enabled for t in agent.tools)
        turns = min(max(len(named), int(offered)) + 1, agent.max_turns)
        result_chars = _tool_result_chars(agent, fixture, named)
        prompt = system + given + _tool_schema_chars(agent)
        messages = len(opening_messages(fixture)) + 1
        answer = _answer_tokens(agent, fixture)
        for turn in range(turns):
            last = turn == turns - 1
            tokens = prompt // CHARS_PER_TOKEN + messages * MESSAGE_TOKENS
            calls.append(_Call(agent.models[0], tokens, answer if last else TOOL_CALL_TOKENS))
            if not last:  # the tool call and its result join the conversation
                prompt += TOOL_CALL_TOKENS * CHARS_PER_TOKEN + result_chars
                messages += 2
        seen += prompt - system - _tool_schema_chars(agent)
        seen += answer * CHARS_PER_TOKEN + STEP_CHARS * (2 * turns)
    else:
        seen += REPLY_TOKENS * CHARS_PER_TOKEN + STEP_CHARS * 2
    calls *= agent_turns(fixture)
    seen *= agent_turns(fixture)
    own = len(calls)
    users = [_Call(*call) for call in user_calls(fixture.conversation, eval_def.spec, seen)]
    calls += users
    rubrics = [len(a.rubric) for a in assertions if isinstance(a, JudgeAssertion)]
    for model in eval_def.spec.judge.models:
        calls += [_judge_call(model, len(SYSTEM_PROMPT) + rubric + seen) for rubric in rubrics]
    calls += _similar_calls(agent, fixture, estimated)
    if run.side is Side.head:
        calls += _pairwise_calls(eval_def.spec, fixture, seen)
    cost = _priced(calls, prices)
    tokens = sum(c.prompt + c.reply for c in calls)
    return Estimate(len(calls), cost, tokens, len(users), _priced(users, prices) or 0.0, own)


def _similar_calls(agent: AgentSpec, fixture: EvalFixtureSpec, estimated: bool) -> list[_Call]:
    """Each `similar` assertion's one embeddings call: its texts and the run's answer (as
    long as the agent's definition bounds it, when its kind's calls are `estimated`)."""
    answer = _answer_tokens(agent, fixture) if estimated else REPLY_TOKENS
    return [
        _Call(check.model, sum(map(len, check.values)) // CHARS_PER_TOKEN + answer, 0)
        for check in flatten(fixture.assertions)
        if isinstance(check, SimilarAssertion)
    ]


def _pairwise_calls(spec: EvalSpec, fixture: EvalFixtureSpec, seen: int) -> list[_Call]:
    """A head run's pair with its base run, judged in both orders: two calls, each reading
    the rubric and both runs."""
    pairwise = spec.judge.pairwise
    if pairwise is None and fixture.pairwise is None:
        return []
    model = (pairwise.model if pairwise is not None else None) or spec.judge.model
    if model is None:
        return []
    rubric = (fixture.pairwise.rubric if fixture.pairwise else None) or (
        pairwise.rubric if pairwise else None
    )
    call = _judge_call(model, len(PAIRWISE_PROMPT) + len(rubric or "") + 2 * seen)
    return [call, call]


def _judge_call(model: str, chars: int) -> _Call:
    """A judge's call that reads `chars` (its instructions and the run) in two messages."""
    return _Call(model, chars // CHARS_PER_TOKEN + 2 * MESSAGE_TOKENS, JUDGE_REPLY_TOKENS)


def _priced(calls: list[_Call], prices: PriceTable) -> float | None:
    """What `calls` cost; None when a model among them has no price."""
    cost = 0.0
    for call in calls:
        price = prices.of(call.model)
        if price is None:
            return None
        cost += (call.prompt * price.input + call.reply * price.output) / 1e6
    return cost


def _tool_schema_chars(agent: AgentSpec) -> int:
    return sum(
        len(t.name or t.type or "") + len(t.description) + len(json.dumps(t.parameters))
        for t in agent.tools
        if t.enabled
    )


def _tool_result_chars(agent: AgentSpec, fixture: EvalFixtureSpec, named: set[str]) -> int:
    """What a call of the tools the fixture names (else of those offered) returns, on
    average: a replayed output or the tool's mock, else TOOL_RESULT_TOKENS."""
    sizes: list[int] = []
    offered = {t.name or t.type or "" for t in agent.tools if t.enabled}
    for name in sorted(named or offered):
        replayed = [r.output for r in fixture.tool_replay or [] if r.tool == name]
        mocks = [t.mock.output for t in agent.tools if (t.name or t.type) == name and t.mock]
        outputs: list[Any] = replayed or mocks
        sizes.append(
            len(tool_text(outputs[0])) if outputs else TOOL_RESULT_TOKENS * CHARS_PER_TOKEN
        )
    return sum(sizes) // len(sizes) if sizes else TOOL_RESULT_TOKENS * CHARS_PER_TOKEN


def _answer_tokens(agent: AgentSpec, fixture: EvalFixtureSpec) -> int:
    expected = len(fixture.reference) // CHARS_PER_TOKEN + 1 if fixture.reference else REPLY_TOKENS
    return min(expected, agent.max_tokens) if agent.max_tokens else expected


def estimate_plan(
    plan: Plan,
    resources: dict[Side, ResourceSet],
    prices: PriceTable,
    skip: list[bool],
) -> Estimate:
    """The estimate of every run of the plan but those `skip` marks (runs the result cache
    answered, in plan order)."""
    ran = [run for index, run in enumerate(plan.runs) if not (index < len(skip) and skip[index])]
    return sum((estimate_run(run, resources[run.side], prices) for run in ran), Estimate(0, 0.0))


async def estimate_meanwhile(
    plan: Plan, resources: dict[Side, ResourceSet], prices: PriceTable
) -> Estimate:
    """`estimate_plan` of every run, a few runs at a time between the event loop's other
    work: made while the runs wait on their model calls, it costs the end of the run nothing
    (1,000 runs: 10 ms). Each step is about 0.5 ms: a reply that arrives meanwhile waits no
    longer than that."""
    total = Estimate(0, 0.0)
    for index, run in enumerate(plan.runs):
        if index % 50 == 49:
            await asyncio.sleep(0)
        total += estimate_run(run, resources[run.side], prices)
    return total


def refuse_unpriced(
    plan: Plan,
    resources: dict[Side, ResourceSet],
    prices: PriceTable,
    cached: Callable[[PlannedRun], bool] | None = None,
) -> None:
    """Refuse a dollar budget over models with no price, among those the runs the cache will
    not answer may call (an agent's fallbacks and every judge included) or are counted by
    (the base's agent, for a head run of a fixture the base gates with: `budget_estimate`):
    what they spend could not be counted against it, so a pull request that switched to one
    would spend without limit."""
    models: set[str] = set()
    for run in plan.runs:
        if cached is not None and cached(run):
            continue
        tree = resources[run.side]
        eval_def = tree.evals[run.eval].resource
        models.update(tree.agents[eval_def.spec.target_agent].resource.spec.models)
        counted = _budget_agent(run, plan, resources)  # what the budget prices the run by
        models.update(counted.spec.models if counted is not None else [])
        fixture = tree.fixtures[run.fixture].resource.spec
        checks = flatten(fixture.assertions)
        if any(assertion.type == "judge" for assertion in checks):
            models.update(eval_def.spec.judge.models)
        models.update(a.model for a in checks if isinstance(a, SimilarAssertion))
        if run.side is Side.head:
            models.update(c.model for c in _pairwise_calls(eval_def.spec, fixture, 0))
    unpriced = sorted(model for model in models if prices.of(model) is None)
    if unpriced:
        raise ConfigError(
            f"max-cost-usd is set, but {', '.join(unpriced)} has no price, so what it spends "
            "cannot be counted against the budget. Give it a price under `pricing` in "
            "evalward.yaml (the base branch's, on a pull request), or budget with "
            "max-model-calls alone."
        )


def budget_estimate(
    run: PlannedRun, plan: Plan, resources: dict[Side, ResourceSet], prices: PriceTable
) -> Estimate:
    """What a budget counts for `run`: its estimate, but for a head run of a fixture the base
    gates with (`Plan.base_gates`), estimated with the base's agent, as its base run is, or
    (the base has no such agent) as an agent whose calls cannot be foreseen. Nothing the pull
    request writes makes the base's runs cost more, to push one out of the budget. Without a
    base side (a push, `evalward run` alone) the run's own definitions are the ones that gate."""
    return estimate_run(run, resources[run.side], prices, _budget_agent(run, plan, resources))


def budget_total(
    runs: list[PlannedRun], plan: Plan, resources: dict[Side, ResourceSet], prices: PriceTable
) -> Estimate:
    """What a budget counts for `runs` (`budget_estimate`), together."""
    return sum((budget_estimate(r, plan, resources, prices) for r in runs), Estimate(0, 0.0))


def _budget_agent(
    run: PlannedRun, plan: Plan, resources: dict[Side, ResourceSet]
) -> Prompted | None:
    """The agent `budget_estimate` estimates `run` with in place of its own (None: its own),
    its system prompt as long as the base's is."""
    head, base = resources[Side.head], resources.get(Side.base)
    if run.side is Side.base or base is None or not plan.base_gates(run):
        return None
    located = base.evals.get(run.eval)
    eval_def = located.resource if located is not None else head.evals[run.eval].resource
    name = eval_def.spec.target_agent
    found = base.agents.get(name)
    if found is None:
        return Prompted(AgentSpec(), 0)
    return Prompted(found.resource.spec, base.system_size(name))


def over_budget(budget: Budget, total: Estimate, more: Estimate) -> bool:
    """Whether `more` on top of `total` exceeds the budget (an unpriced cost counts no
    dollars: `refuse_unpriced` keeps those out of a dollar budget)."""
    if budget.max_model_calls is not None and total.calls + more.calls > budget.max_model_calls:
        return True
    return (
        budget.max_cost_usd is not None
        and more.cost_usd is not None
        and total.cost_usd is not None
        and total.cost_usd + more.cost_usd > budget.max_cost_usd
    )


def trim_to_budget(
    plan: Plan,
    resources: dict[Side, ResourceSet],
    prices: PriceTable,
    budget: Budget,
    cached: Callable[[PlannedRun], bool] | None = None,
) -> Trimmed:
    """Keep the most severe fixtures that fit the budget (a fixture's reps and both its sides
    together); report the rest as skipped. Runs `cached` says the result cache will answer
    cost nothing.

    Which runs stay is decided from the base's definitions alone: the fixtures the base gates
    with come first, by the base's severity (then Eval and fixture name) and the base's
    estimate of them (`budget_estimate`); the Evals the pull request adds, then the fixtures
    it adds to the base's Evals (pending: they gate only once merged), get only what those
    leave. Nothing a pull request adds or makes costlier can push the fixtures that decide
    the gate out of it; one of them is left out only where the budget cannot hold the base's
    own. Which Evals' own cannot fit even alone is `base_over`: what else the pull request
    touches adds to the first tier, so it cannot make another Eval's runs excusable, nor
    choose which of them are left out: an Eval with a run that would fit were it trimmed
    alone, left out for the others' runs, is not among them."""
    groups: dict[tuple[str, str], list[PlannedRun]] = {}
    for run in plan.runs:
        groups.setdefault((run.eval, run.fixture), []).append(run)

    def tier(group: tuple[str, str]) -> int:
        """0: the base's own gating fixtures; 1: the Evals the pull request adds; 2: pending."""
        runs = groups[group]
        if any(plan.base_gates(run) for run in runs):
            return 0
        return 1 if any(plan.gates(run) for run in runs) else 2

    def severity(group: tuple[str, str]) -> float:
        side = Side.head if any(r.side is Side.head for r in groups[group]) else Side.base
        return DEFAULT_SEVERITY_WEIGHTS[resources[side].fixtures[group[1]].resource.spec.severity]

    total = counted = Estimate(0, 0.0)
    kept: list[PlannedRun] = []
    skipped: list[PlannedRun] = []
    alone: dict[str, Estimate] = {}  # each Eval's first tier, as the budget counts it
    kept_alone: dict[str, Estimate] = {}  # what it keeps of that trimmed alone
    crowded: set[str] = set()  # Evals with a run the others left no room for
    for group in sorted(groups, key=lambda g: (tier(g), -severity(g), g)):
        runs = [run for run in groups[group] if cached is None or not cached(run)]
        cost = budget_total(runs, plan, resources, prices)
        fits_alone = False
        if tier(group) == 0:
            alone[group[0]] = alone.get(group[0], Estimate(0, 0.0)) + cost
            own = kept_alone.get(group[0], Estimate(0, 0.0))
            fits_alone = not over_budget(budget, own, cost)
            kept_alone[group[0]] = own + cost if fits_alone else own
        if over_budget(budget, counted, cost):
            skipped += groups[group]
            if fits_alone:
                crowded.add(group[0])
            continue
        kept += groups[group]
        counted += cost
        total = sum((estimate_run(r, resources[r.side], prices) for r in runs), total)
    order = {id(run): index for index, run in enumerate(plan.runs)}
    kept.sort(key=lambda run: order[id(run)])
    over = frozenset(
        name
        for name, cost in alone.items()
        if over_budget(budget, Estimate(0, 0.0), cost) and name not in crowded
    )
    return Trimmed(plan.with_runs(kept), total, sorted(skipped), counted, over)


def adaptive_ceiling(
    plan: Plan, resources: dict[Side, ResourceSet], prices: PriceTable, name: str
) -> tuple[int, int, Estimate]:
    """The most an adaptive Eval (`execution.reps`) can spend: every head fixture at its
    maximum reps, and every base fixture too (head runs, base runs, their estimate). Its
    plan holds the minimum; the rounds add reps only where the outcome is open."""
    reps = resources[Side.head].evals[name].resource.spec.execution.reps
    if reps is None:
        return 0, 0, Estimate(0, 0.0)
    runs = plan.adaptive_runs(name, reps.max)
    heads = sum(run.side is Side.head for run in runs)
    total = sum((estimate_run(run, resources[run.side], prices) for run in runs), Estimate(0, 0.0))
    return heads, len(runs) - heads, total
