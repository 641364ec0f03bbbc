"""The execute phase's entry: a `Planned` change run round by round, handed on as one `Ran`.

An error once a run has finished is carried in the `Ran` (`Ran.failure`), so the runs before
it are scored, written and reported before the front end ends the process. A cancellation
(SIGTERM, SIGINT) is the caller's to catch (`flows.interrupt`): it stops this coroutine.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from evalward.attribution.hunks import AgentFiles, targets_files
from evalward.execute.base_judging import BaseJudging
from evalward.execute.execute import Execution
from evalward.execute.pairs import PairJudging
from evalward.execute.plan_scores import EvalsBySide
from evalward.execute.rounds import Rounds, flaky_on_main, run_rounds
from evalward.past.status import AgentIdentity, identity_of
from evalward.plan.changes import ChangeSet
from evalward.plan.estimate import estimate_meanwhile, estimate_plan
from evalward.plan.plan import Plan, PlannedRun, head_targets, private_runs
from evalward.plan.planned import Planned
from evalward.plan.run_context import RunContext
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import Side
from evalward.rundata.spending import Allowance, Estimate, Spent
from evalward.scoring.judges.pairwise_panel import Judged


@dataclass(frozen=True)
class Ran:
    """What running a plan leaves, without the checkouts it ran in: the runs and what the
    verdict reads beside them. Scoring reads only the Evals, so a large suite's loaded
    fixtures and its results are not in memory together."""

    changes: ChangeSet
    plan: Plan
    """As the rounds left it: their runs added."""
    fixtures: list[FixtureResult]
    """Every run that finished, in plan order (in the order they finished when an error
    stopped the runs)."""
    notes: list[str]
    skipped: list[PlannedRun]
    """The runs the budget left out, the plan's and the rounds'."""
    base_over: frozenset[str]
    """The Evals whose own runs of the fixtures the base gates with the budget cannot hold
    even alone (`Trimmed.base_over`)."""
    estimate: Estimate | None
    private: set[tuple[str, str]]
    """(Eval, fixture) pairs held out of public reports (`private_runs`)."""
    agents: dict[str, AgentIdentity]
    """The identities of the agents the head's Evals target, taken while their files were
    there to hash."""
    agent_files: dict[str, AgentFiles]
    """The files those agents are made of at the head: what attribution splits into hunks."""
    head_commit: str
    evals: EvalsBySide
    """Each side's Eval definitions."""
    flaky: dict[str, dict[str, float]]
    """Per adaptive Eval, its fixtures that are flaky on main (`past.flaky`)."""
    pairs: dict[str, Judged]
    """Per Eval judged pairwise, its judge and the pairs it judged."""
    failure: Exception | None = None
    """What stopped the runs once one had finished (`fixtures` then holds those)."""


async def execute(planned: Planned) -> Ran:
    """Run the plan round by round, telling the plan's progress of each run and each round
    that grows the plan; traces move to its spool as runs are scored. An error before any
    run finished is raised (nothing ran to keep); one after is the `Ran`'s `failure`."""
    context, progress = planned.context, planned.progress
    traces = progress.traces
    _contain(context)
    finished: list[FixtureResult] = []

    def record(result: FixtureResult) -> None:
        finished.append(result)
        progress.on_result(result)

    counted = planned.counted
    pairs = PairJudging(context, traces)
    later = BaseJudging(context, pairs, traces.trace_of)
    how = Execution(
        on_result=record,
        traces=traces,
        allowance=Allowance.left_by(context.budget, counted, _job_spending(context)),
        defers=later.defers if pairs.active else None,
    )
    # Without a budget the estimate is only reported. When the cache can answer no run,
    # it is of every run, and it is made while the runs wait on their model calls.
    cached = context.cached()
    meanwhile = planned.estimate is None and cached is None and not context.plan.adaptive
    estimating = _estimating(context) if meanwhile else None
    flaky, stale = flaky_on_main(context)
    notes = [*planned.notes, *stale]
    skipped = list(planned.skipped)
    # Only the plan's own runs can excuse a skipped one: the rounds a head's failure or an
    # open test asks for are the pull request's to pay, and a round the budget refuses is
    # excused only in an Eval whose own plan runs the budget could not hold even alone.
    base_over = planned.trimmed.base_over if planned.trimmed is not None else frozenset()

    def ran(fixtures: list[FixtureResult], estimate: Estimate | None, **failed: Exception) -> Ran:
        resources = context.resources
        head = resources[Side.head]  # its agents' identities taken while their files are there
        return Ran(
            changes=planned.changes,
            plan=context.plan,
            fixtures=fixtures,
            notes=notes,
            skipped=skipped,
            base_over=base_over,
            estimate=estimate,
            private=private_runs(context.plan, resources),
            agents={
                name: identity_of(head.agents[name], context.keys.agent(Side.head, name))
                for name in head_targets(context.plan, head)
            },
            agent_files=targets_files(context.plan, resources),
            head_commit=context.checkouts[Side.head].sha,
            evals={side: r.evals for side, r in resources.items()},
            flaky=flaky,
            pairs=pairs.judged(),
            **failed,
        )

    try:
        rounds = Rounds(
            estimate=counted,
            on_more=progress.on_more,
            flaky=flaky,
            pairs=pairs if pairs.active else None,
            base_judging=later if pairs.active else None,
        )
        with context.providers.ceiling.grading_within(how.allowance):  # judges held too
            fixtures, more_notes, left_out = await run_rounds(context, how, rounds)
            await pairs.warm()
    except BaseException as exc:
        if estimating is not None:
            estimating.cancel()
        if isinstance(exc, Exception) and finished:
            return ran(list(finished), planned.estimate, failure=exc)
        raise
    notes += more_notes
    skipped += left_out
    estimate = planned.estimate
    if estimate is None:  # only the runs that ran: reused ones cost nothing
        reused = [result.cached for result in fixtures]
        estimate = await _estimate_after(estimating, context, reused)
    return ran(fixtures, estimate)


def _job_spending(context: RunContext) -> Spent | None:
    """What the job's calls cost, which `max-cost-usd` holds as they are made; None where a
    mock script answers every call, whose replies the budget counts as free."""
    providers = context.providers
    return providers.spent if providers.override is None else None


def _contain(context: RunContext) -> None:
    """Each checkout's files given to the sandbox as a side's, and its reads limited (each
    agent's to its own), before the first program from it starts."""
    sandbox = context.options.sandbox
    if sandbox is None:
        return
    for checkout in context.checkouts.values():
        sandbox.from_side(checkout.root, checkout.files)
        if checkout.world is not None and checkout.world_files is not None:
            sandbox.from_side(checkout.world, checkout.world_files)
        if checkout.reads is not None:
            sandbox.limit(checkout.root, checkout.reads)
        for agent, reads in checkout.agent_reads.items():
            sandbox.limit(checkout.root, reads, agent)


def _estimating(context: RunContext) -> asyncio.Future[Estimate]:
    """The estimate of every run, made while the runs wait on their model calls."""
    prices = context.providers.prices
    return asyncio.ensure_future(estimate_meanwhile(context.plan, context.resources, prices))


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
