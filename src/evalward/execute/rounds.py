"""Adaptive reps, round by round: run the plan, then the runs the sequential tests still ask
for (`adaptive.more_runs`), until every adaptive Eval is settled or at its maximum reps.

A round's runs are estimated before they start: under `max-model-calls` or `max-cost-usd`, a
round the budget cannot pay for is not run, and the note says so (the verdicts then say how
sure they are with what ran). Rep indexes continue each (side, fixture)'s, so the result
cache keys every rep apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from evalward import __version__
from evalward.execute.base_judging import BaseJudging
from evalward.execute.execute import Execution, execute
from evalward.execute.pairs import PairJudging
from evalward.past.flaky import main_history
from evalward.past.status import identity_of
from evalward.plan.estimate import budget_total
from evalward.plan.plan import MoreRuns, Plan, PlannedRun
from evalward.plan.run_context import RunContext
from evalward.resources.gate_policy import FlakyOnMain
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import Side
from evalward.rundata.spending import Allowance, Budget, Estimate
from evalward.text.counts import counted
from evalward.verdict.adaptive import SequentialTests, more_runs
from evalward.verdict.preference import pass_rate_share
from evalward.verdict.settle import outcomes

Flaky = Mapping[str, Mapping[str, float]]
"""Per Eval, its fixtures that are flaky on main and their pass rate there."""


def flaky_on_main(context: RunContext) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Each adaptive Eval's fixtures that are flaky on main (`past.flaky`, read from the
    trusted cache's `RunOptions.main_history`) for its base agent as it is, and a note for
    each Eval whose records are stale. Where the base branch has changed that agent since
    the pull request branched off (`Plan.base_behind`), its records of the merge base's
    agent make no fixture flaky: the branch point is the pull request's to choose, and a
    note says so where they would have."""
    flaky: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    directory, base = context.options.main_history, context.checkouts.get(Side.base)
    if directory is None or base is None:
        return flaky, notes
    for name in context.plan.adaptive:
        located = base.resources.evals.get(name)
        agent = located.resource.spec.target_agent if located is not None else ""
        if agent not in base.resources.agents:
            continue
        identity = identity_of(base.resources.agents[agent], context.keys.agent(Side.base, agent))
        found = main_history(directory, name, agent=identity.fingerprint, version=__version__)
        if found.stale:
            notes.append(
                f"{name}: the default branch's record of its fixtures is stale ({found.stale}); "
                "no fixture is called flaky on main from it"
            )
        elif found.flaky and name in context.plan.base_behind:
            notes.append(
                f"{name}: the base branch has changed agent {agent} since the pull request "
                "branched off, so what the default branch recorded of the agent as it was "
                f"then does not make {', '.join(found.flaky)} flaky on main; rebased onto the "
                "base branch, the pull request is compared with its agent as it is now"
            )
        elif found.flaky:
            flaky[name] = found.flaky
    return flaky, notes


@dataclass(frozen=True)
class Rounds:
    """What decides whether another round runs, beside the run's budget (`RunContext.budget`):
    what the run's estimate has already set aside of it, the fixtures flaky on main, and who
    hears of a grown plan."""

    estimate: Estimate | None = None
    on_more: Callable[[Plan, MoreRuns], None] | None = None
    flaky: Flaky | None = None
    pairs: PairJudging | None = None
    """The run's pairwise judging: each round's new pairs are judged before the next round is
    chosen, and its open preference tests may ask for more runs (`flows.pairs`)."""
    base_judging: BaseJudging | None = None
    """The base's judge left for later beside the pairwise judge: asked after each round where
    the head failed a fixture, and at the end where a pooled test leans broken."""


async def run_rounds(
    context: RunContext, how: Execution, rounds: Rounds = Rounds()
) -> tuple[list[FixtureResult], list[str], list[PlannedRun]]:
    """Every result in plan order (the context's plan grows by the rounds' runs), notes, and
    the runs a round asked for that the budget left out (the gate is then incomplete, as for
    any run the budget skips)."""
    plan, budget, on_more = context.plan, context.budget, rounds.on_more
    pairs, later = rounds.pairs, rounds.base_judging
    results: list[FixtureResult] = []
    notes: list[str] = []
    skipped: list[PlannedRun] = []
    committed = rounds.estimate
    batch = context  # the plan's runs first, then each round's
    while True:
        results += await execute(batch, how)
        if pairs is not None:
            await pairs.judge(results)
        if later is not None:
            await later.ask(results)
        held = base_where_read(plan, results) if batch is context else []
        adaptive = next_round(context, results, rounds.flaky, pairs) if plan.adaptive else []
        extra = held + adaptive
        if pairs is not None and plan.adaptive:
            extra += [run for run in pairs.next_round(results) if run not in extra]
        if not extra:
            break
        if budget.limited:
            cost = budget_total(extra, plan, context.resources, context.providers.prices)
            refused = _over(budget, committed, cost, how.allowance)
            if refused:
                notes.append(
                    f"{'adaptive reps' if len(held) < len(extra) else 'base runs'} stopped "
                    f"early: {counted(len(extra), 'more run')} would exceed {refused}; the "
                    "verdicts say how sure they are with what ran"
                )
                skipped = extra
                break
            committed = cost if committed is None else committed + cost
            if how.allowance is not None:  # what the round's estimate counts is set aside
                how.allowance.commit(cost)
        plan.runs.extend(extra)
        if on_more is not None:
            cached = context.cached()
            more = MoreRuns(
                adaptive=len(adaptive),
                pairwise=len(extra) - len(held) - len(adaptive),
                base_read=len(held),
                reused=sum(map(cached, extra)) if cached is not None else 0,
            )
            on_more(plan, more)
        batch = context.with_plan(plan.with_runs(extra))
    if later is not None:
        await later.ask(results, final=True, flaky=rounds.flaky)
    return results, notes + _held_notes(plan), skipped


def _held_notes(plan: Plan) -> list[str]:
    """What the comment says of each Eval whose base ran only where it was read."""
    notes = []
    for name, held in plan.base_when_failing.items():
        fixtures = {run.fixture for run in held}
        ran = {r.fixture for r in plan.runs if r.eval == name and r.side is Side.base}
        if held:
            notes.append(
                f"{name}: its decision reads the head only (`failOnRegression: none`), so the "
                f"base ran {len(ran)} of {len(fixtures)} fixtures, those the head did not pass"
            )
    return notes


def base_where_read(plan: Plan, results: list[FixtureResult]) -> list[PlannedRun]:
    """The held-back base runs (`Plan.base_when_failing`) of the fixtures whose head runs did
    not all pass: what the comparison needs to tell a regression from a fixture already
    failing. A fixture every head rep of which passed is not run on the base."""
    failing = {(r.eval, r.fixture) for r in results if r.side == Side.head.value and not r.passed}
    return [
        run
        for held in plan.base_when_failing.values()
        for run in held
        if (run.eval, run.fixture) in failing
    ]


def next_round(
    context: RunContext,
    results: list[FixtureResult],
    flaky: Flaky | None = None,
    rounds_pairs: PairJudging | None = None,
) -> list[PlannedRun]:
    """The runs the adaptive Evals' sequential tests ask for next; none once settled."""
    plan, evals = context.plan, context.checkouts[Side.head].resources.evals
    planned = plan.next_reps()
    extra: list[PlannedRun] = []
    for name, base_fixtures in plan.adaptive.items():
        spec = evals[name].resource.spec
        reps = spec.execution.reps
        if reps is None:
            continue
        mine = [r for r in results if r.eval == name]
        head = dict(outcomes([r for r in mine if r.side == Side.head.value]))
        for run in plan.runs:  # a fixture whose every run was an outage is still a fixture
            if run.eval == name and run.side is Side.head:
                head.setdefault(run.fixture, [])
        base = outcomes([r for r in mine if r.side == Side.base.value])
        gates = [f for f in head if f not in plan.pending.get(name, ())]
        paired = rounds_pairs is not None and name in rounds_pairs.fixtures
        share = pass_rate_share(spec, paired)
        asked = more_runs(
            SequentialTests.of(spec.scoring.gate, reps, len(gates), share),
            head,
            base,
            gating=gates,
            base_can_run=base_fixtures,
            flaky=list((flaky or {}).get(name, {})),
            more_reps_when_flaky=spec.scoring.gate.flaky_on_main is FlakyOnMain.more_reps,
        )
        seen = {Side.head: head, Side.base: base}
        for side, fixture in asked:
            key = (side, name, fixture)
            rep = planned.get(key, 0)
            if rep >= reps.max or (rep >= reps.min and not seen[side].get(fixture)):
                continue  # an outage's runs say nothing: the provider gets no more of them
            planned[key] = rep + 1
            extra.append(PlannedRun(side, name, fixture, rep))
    return extra


def _over(
    budget: Budget, committed: Estimate | None, more: Estimate, left: Allowance | None
) -> str:
    """The limit `more` would exceed on top of what is `committed`, or of what the calls
    past the estimate (agents' own and simulated users') already drew from the budget's
    `left`: what was spent is not set aside again ("" for none)."""
    drawn = left.short_of(more) if left is not None else ""
    calls = more.calls + (committed.calls if committed is not None else 0)
    if budget.max_model_calls is not None and (
        calls > budget.max_model_calls or drawn == "max-model-calls"
    ):
        return f"max-model-calls ({budget.max_model_calls})"
    if budget.max_cost_usd is not None and more.cost_usd is not None:
        spent = more.cost_usd + (committed.cost_usd or 0.0 if committed is not None else 0.0)
        if spent > budget.max_cost_usd or drawn == "max-cost-usd":
            return f"max-cost-usd ({budget.max_cost_usd})"
    return ""
