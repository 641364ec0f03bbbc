"""The stages from a change to scored, compared results, shared by the action and the CLI.

This module wires stages together; it owns no client. Git and the providers come in with
the front end's `RunSetup`, so tests run it against real repositories and local model
servers. Once the change is prepared, its plan, checkouts, clients, options and cache keys
travel together, made once, as its `RunContext` (`plan/run_context.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from evalward.errors import ConfigError, MissingSecretError
from evalward.execute.base_judging import BaseJudging
from evalward.execute.execute import Execution, ProgressCallback
from evalward.execute.pairs import PairJudging
from evalward.execute.plan_scores import EvalsBySide, score_evals
from evalward.execute.rounds import Rounds, flaky_on_main, run_rounds
from evalward.past.status import AgentIdentity, identity_of
from evalward.plan.changes import ChangeSet
from evalward.plan.estimate import (
    Trimmed,
    budget_estimate,
    estimate_meanwhile,
    estimate_plan,
    over_budget,
    refuse_unpriced,
    trim_to_budget,
)
from evalward.plan.plan import MoreRuns, Plan, PlannedRun, private_runs
from evalward.plan.preflight.preflight import planned_models, refuse_plan, warning_notes
from evalward.plan.prepare import Prepared, prepare_change
from evalward.plan.result_cache import CacheKeys
from evalward.plan.run_context import RunContext
from evalward.plan.run_setup import RunSetup
from evalward.providers.registry import check_credentials
from evalward.record.evaluation import Evaluation
from evalward.resources import ResourceSet
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import Side
from evalward.rundata.spending import Allowance, Estimate
from evalward.rundata.spool import TraceSpool
from evalward.scoring.pairwise_panel import Judged
from evalward.verdict.compare import compare
from evalward.verdict.settle import settle


async def evaluate_change(
    setup: RunSetup,
    *,
    on_result: ProgressCallback | None = None,
    on_plan: Callable[[Plan], None] | None = None,
    on_more: Callable[[Plan, MoreRuns], None] | None = None,
    traces: TraceSpool | None = None,
) -> Evaluation:
    """Detect the change, plan, run both sides, score and compare: `on_plan` hears of the
    plan once made, `on_more` of each round that grows it, `on_result` of each run.

    With `gate_config=base` the Evals and fixtures that gate come from the base branch's tip.
    Traces move to `traces` (a new spool if none is given) as runs are scored.
    """
    traces = TraceSpool() if traces is None else traces
    try:
        ran = await _run_change(
            setup, on_result=on_result, on_plan=on_plan, on_more=on_more, traces=traces
        )
    except _Stopped as stop:
        raise RunStopped(_evaluated(stop.ran), stop.error) from stop.error
    return _evaluated(ran)


class RunStopped(Exception):
    """An error stopped the runs once they had begun: `evaluation` scores the runs that had
    finished, `error` is what stopped them."""

    def __init__(self, evaluation: Evaluation, error: Exception) -> None:
        super().__init__(str(error))
        self.evaluation = evaluation
        self.error = error


class _Stopped(Exception):
    def __init__(self, ran: _Ran, error: Exception) -> None:
        super().__init__(str(error))
        self.ran = ran
        self.error = error


def _evaluated(ran: _Ran) -> Evaluation:
    """The record of the runs, its Evals scored per side and compared."""
    # Scoring reads only the Evals: the checkouts and every loaded fixture are gone by now,
    # so a large suite's definitions and its results are not in memory together.
    evaluation = ran.evaluation
    scored = score_evals(evaluation.plan, ran.evals, evaluation.fixtures)
    evaluation.evals = settle(scored, ran.evals, ran.flaky, ran.pairs)
    for result in evaluation.evals:
        if result.side == "base" and result.provider_unavailable:
            evaluation.notes.append(
                f"{result.eval}: no baseline — every base run failed to reach its model "
                "provider after retries"
            )
    evaluation.comparisons = compare(evaluation.evals)
    return evaluation


@dataclass(frozen=True)
class _Ran:
    """What running a plan leaves, without the checkouts it ran in: the run's record, and
    what scoring it reads beside it (`_evaluated`)."""

    evaluation: Evaluation
    """As the runs left it: its `evals` and `comparisons` are scoring's to fill."""
    evals: EvalsBySide
    """Each side's Eval definitions."""
    flaky: dict[str, dict[str, float]]
    """Per adaptive Eval, its fixtures that are flaky on main (`past.flaky`)."""
    pairs: dict[str, Judged]
    """Per Eval judged pairwise, its judge and the pairs it judged."""


@dataclass
class _Running:
    """A prepared change while its runs go: what `_Ran` is made of, however they end."""

    changes: ChangeSet
    context: RunContext
    notes: list[str]
    skipped: list[PlannedRun]
    estimate: Estimate | None
    counted: Trimmed | None = None
    """The budget's cut of the plan (None without a budget): what it counted, of which the
    base's own gating runs', and whether it could not hold those even alone."""
    base_over: bool = False
    """The budget cannot hold the base's own gating runs even alone (`Trimmed.base_over`,
    and the rounds' runs it left out: `_base_over`)."""
    flaky: dict[str, dict[str, float]] = field(default_factory=dict)
    finished: list[FixtureResult] = field(default_factory=list)
    """The runs scored so far, in the order they finished."""
    pairs: PairJudging | None = None

    def ran(self, fixtures: list[FixtureResult], traces: TraceSpool) -> _Ran:
        context = self.context
        resources = context.resources
        evaluation = Evaluation(
            changes=self.changes,
            plan=context.plan,
            fixtures=fixtures,
            evals=[],
            comparisons=[],
            notes=self.notes,
            private=private_runs(context.plan, resources),
            skipped=self.skipped,
            base_over_budget=self.base_over,
            estimate=self.estimate,
            traces=traces,
            agents=_head_agents(context.plan, resources[Side.head], context.keys),
            head_commit=context.checkouts[Side.head].sha,
        )
        return _Ran(
            evaluation,
            evals={side: r.evals for side, r in resources.items()},
            flaky=self.flaky,
            pairs=self.pairs.judged() if self.pairs is not None else {},
        )


async def _run_change(
    setup: RunSetup,
    *,
    on_result: ProgressCallback | None,
    on_plan: Callable[[Plan], None] | None,
    on_more: Callable[[Plan, MoreRuns], None] | None,
    traces: TraceSpool,
) -> _Ran:
    """Prepare the change, then run its plan round by round. An error once a run has
    finished carries what finished (`_Stopped`); one before, nothing."""
    with prepare_change(setup) as prepared:
        state = _planned(setup, prepared, on_plan)
        context = state.context
        sandbox = context.options.sandbox
        for checkout in context.checkouts.values():
            if sandbox is not None:
                sandbox.from_side(checkout.root, checkout.files)
                if checkout.world is not None and checkout.world_files is not None:
                    sandbox.from_side(checkout.world, checkout.world_files)
            if sandbox is not None and checkout.reads is not None:
                sandbox.limit(checkout.root, checkout.reads)

        def record(result: FixtureResult) -> None:
            state.finished.append(result)
            if on_result is not None:
                on_result(result)

        counted = state.counted
        start = len(context.plan.runs)
        state.pairs = PairJudging(context, traces)
        later = BaseJudging(context, state.pairs.fixtures, traces.trace_of)
        how = Execution(
            on_result=record,
            traces=traces,
            allowance=Allowance.left_by(context.budget, _counted(counted)),
            defers=later.defers if state.pairs.active else None,
        )
        # Without a budget the estimate is only reported. When the cache can answer no run,
        # it is of every run, and it is made while the runs wait on their model calls.
        cached = context.cached()
        meanwhile = state.estimate is None and cached is None and not context.plan.adaptive
        estimating = _estimating(context) if meanwhile else None
        state.flaky, stale = flaky_on_main(context)
        state.notes += stale
        try:
            judging = state.pairs if state.pairs.active else None
            rounds = Rounds(
                estimate=_counted(counted),
                on_more=on_more,
                flaky=state.flaky,
                pairs=judging,
                base_judging=later if judging is not None else None,
            )
            fixtures, more_notes, left_out = await run_rounds(context, how, rounds)
            await state.pairs.warm()
        except BaseException as exc:
            if estimating is not None:
                estimating.cancel()
            if isinstance(exc, Exception) and state.finished:
                raise _Stopped(state.ran(state.finished, traces), exc) from exc
            raise
        state.notes += more_notes
        state.skipped += left_out
        if counted is not None and left_out:
            state.base_over |= _base_over(context, counted.own, start, left_out)
        if state.estimate is None:  # only the runs that ran: reused ones cost nothing
            reused = [result.cached for result in fixtures]
            state.estimate = await _estimate_after(estimating, context, reused)
        return state.ran(fixtures, traces)


def _planned(
    setup: RunSetup, prepared: Prepared, on_plan: Callable[[Plan], None] | None
) -> _Running:
    """The run's context, made once: its plan refused or cut as the definitions and the
    budget say, announced, and its keys checked: what the runs start from."""
    context = RunContext.of(prepared.plan, prepared.checkouts, setup)
    notes = prepared.notes
    refused = refuse_plan(context.plan, context.checkouts, context.providers, context.env)
    notes += warning_notes(refused)
    cached = context.cached()
    trimmed = _budgeted(context, cached, notes)
    plan = trimmed.plan if trimmed is not None else context.plan
    context = context.with_plan(plan)
    if cached is not None:
        plan.reused = sum(cached(run) for run in plan.runs)
    if on_plan is not None:
        on_plan(plan)
    _check_keys(context)
    if trimmed is None:
        return _Running(prepared.changes, context, notes, [], None)
    skipped, estimate = list(trimmed.skipped), trimmed.estimate
    return _Running(prepared.changes, context, notes, skipped, estimate, trimmed, trimmed.base_over)


def _budgeted(
    context: RunContext, cached: Callable[[PlannedRun], bool] | None, notes: list[str]
) -> Trimmed | None:
    """The plan cut to the run's budget, with the runs it left out and its estimate (None
    without a budget); a `max-cost-usd` refuses models without a price. Runs `cached` says
    the result cache answers cost nothing. Says in `notes` what it cut."""
    plan, providers, budget = context.plan, context.providers, context.budget
    if not budget.limited:
        return None
    resources = context.resources
    if budget.max_cost_usd is not None and providers.override is None:
        refuse_unpriced(plan, resources, providers.prices, cached)
    trimmed = trim_to_budget(plan, resources, providers.prices, budget, cached)
    notes += [trimmed.note] if trimmed.skipped else []
    return trimmed


def _counted(trimmed: Trimmed | None) -> Estimate | None:
    """What the budget counted for the runs it kept (None without a budget)."""
    return trimmed.counted if trimmed is not None else None


def _base_over(context: RunContext, own: Estimate, start: int, left_out: list[PlannedRun]) -> bool:
    """Whether the runs of the base's gating fixtures a round left out would exceed the budget
    even beside the base's own alone (its gating runs planned, `own`, and those the rounds
    added since the plan's first `start` runs): the budget's own limit, not what the pull
    request's runs took of it."""
    plan, prices = context.plan, context.providers.prices
    theirs = [run for run in left_out if plan.base_gates(run)]
    if not theirs:
        return False
    added = [run for run in plan.runs[start:] if plan.base_gates(run)]
    for run in added:
        own += budget_estimate(run, plan, context.resources, prices)
    more = sum(
        (budget_estimate(r, plan, context.resources, prices) for r in theirs), Estimate(0, 0.0)
    )
    return over_budget(context.budget, own, more)


def _estimating(context: RunContext) -> asyncio.Future[Estimate]:
    """The estimate of every run, made while the runs wait on their model calls."""
    prices = context.providers.prices
    return asyncio.ensure_future(estimate_meanwhile(context.plan, context.resources, prices))


def _check_keys(context: RunContext) -> None:
    """Every key the plan's models need is there; a missing one may be skipped only when
    the base side needs it too (`_base_lacks_a_key`)."""
    models = planned_models(context.plan, context.checkouts)
    try:
        check_credentials(context.env, models, context.providers)
    except ConfigError as exc:
        raise MissingSecretError(str(exc), skippable=_base_lacks_a_key(context)) from None


async def _estimate_after(
    estimating: asyncio.Future[Estimate] | None, context: RunContext, reused: list[bool]
) -> Estimate:
    """The estimate made while the runs ran, unless some were reused after all (another run
    stored results meanwhile): then one of only the runs that ran."""
    if estimating is not None and not any(reused):
        return await estimating
    if estimating is not None:
        estimating.cancel()
    return estimate_plan(context.plan, context.resources, context.providers.prices, reused)


def _head_agents(plan: Plan, head: ResourceSet, keys: CacheKeys) -> dict[str, AgentIdentity]:
    """The identities of the agents the head side's Evals target, taken while their files are
    there to hash (a worktree is gone once the run ends). The result cache's keys already
    hold their fingerprints."""
    targets = {head.evals[e].resource.spec.target_agent for e in plan.evals if e in head.evals}
    return {
        name: identity_of(head.agents[name], keys.agent(Side.head, name))
        for name in sorted(targets)
        if name in head.agents
    }


def _base_lacks_a_key(context: RunContext) -> bool:
    """Whether the base's own side of this plan needs a key that is absent — as on a fork's
    pull request, which gets no secret at all — or there is no base to ask (a push, a dispatch
    run). With no base run in the plan (only new agents), the base's agents and judges as a
    whole are asked."""
    plan, base = context.plan, context.checkouts.get(Side.base)
    if base is None:
        return True
    models = planned_models(plan, {Side.base: base}) if plan.for_side(Side.base) else []
    if not models:
        resources = base.resources
        found = {m for a in resources.agents.values() for m in a.resource.spec.models[:1]}
        found |= {m for e in resources.evals.values() for m in e.resource.spec.judge.models}
        models = sorted(m for m in found if m)
    try:
        check_credentials(context.env, models, context.providers)
    except ConfigError:
        return True
    return False
