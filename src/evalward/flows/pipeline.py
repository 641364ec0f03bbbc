"""The phases from a change to its scored, compared record, shared by the action and the CLI:
plan (`plan.planned.plan`), execute (`execute.run_plan`), then scoring and comparing what ran
(`evaluated`), or what finished of a run a signal or an error stopped (`partial`). This
module owns no client: git and the providers come in with the front end's `RunSetup`, so
tests run it against real repositories and local model servers.
"""

from __future__ import annotations

from evalward.execute.plan_scores import score_evals
from evalward.execute.run_plan import Ran, execute
from evalward.plan.changes import ChangeSet
from evalward.plan.plan import Plan
from evalward.plan.planned import plan
from evalward.plan.progress import RunProgress
from evalward.plan.request import RunRequest
from evalward.plan.run_setup import RunSetup
from evalward.record.evaluation import Evaluation
from evalward.rundata.results import EvalResult, FixtureResult
from evalward.rundata.sides import Side
from evalward.rundata.spool import TraceSpool
from evalward.verdict.compare import compare, no_baseline_notes
from evalward.verdict.settle import settle


class NotCached(Exception):
    """A plan run `cached_only` that the result cache does not answer whole: nothing ran."""


async def run_change(request: RunRequest, *, cached_only: bool = False) -> Ran:
    """Detect the change, plan it and run both sides, telling the request's progress as it
    goes. With `gate_config=base` the Evals and fixtures that gate come from the base
    branch's tip. An error before the plan is made, or before any run finished, is raised:
    nothing ran. `cached_only` (an attribution variant once its budget is spent): `NotCached`
    unless the plan reuses every run from the result cache, before any runs."""
    with plan(request) as planned:
        runs = planned.context.plan
        if cached_only and runs.reused < len(runs.runs):
            raise NotCached
        return await execute(planned)


async def evaluate_change(
    setup: RunSetup, progress: RunProgress | None = None, *, cached_only: bool = False
) -> Evaluation:
    """The phases run and scored in one call, for what keeps no partial run (a shard's part:
    the merge would miss its runs; an attribution variant): an error that stopped the runs is
    raised as itself."""
    request = RunRequest(setup, progress or RunProgress())
    ran = await run_change(request, cached_only=cached_only)
    if ran.failure is not None:
        raise ran.failure
    return evaluated(ran, request.progress.traces)


def evaluated(ran: Ran, traces: TraceSpool) -> Evaluation:
    """The record of the runs, its Evals scored per side and compared (from `ran.evals`
    alone: `Ran` says why)."""
    evaluation = Evaluation(
        changes=ran.changes,
        plan=ran.plan,
        fixtures=ran.fixtures,
        evals=[],
        comparisons=[],
        notes=list(ran.notes),
        private=ran.private,
        skipped=list(ran.skipped),
        base_over=ran.base_over,
        estimate=ran.estimate,
        traces=traces,
        agents=ran.agents,
        agent_files=ran.agent_files,
        head_commit=ran.head_commit,
    )
    scored = score_evals(evaluation.plan, ran.evals, evaluation.fixtures)
    evaluation.evals = settle(scored, ran.evals, ran.flaky, ran.pairs)
    evaluation.notes += no_baseline_notes(evaluation.evals)
    evaluation.comparisons = compare(evaluation.evals, evaluation.plan.added)
    return evaluation


def partial(progress: RunProgress) -> Evaluation:
    """The Evaluation of a run a signal or an error stopped: the runs that finished, their
    traces, and each Eval scored and compared over them, as far as they go (junit.xml, the
    comment and report.html show them; the decision stays incomplete)."""
    plan = progress.plan or Plan()
    done = list(progress.done)
    evals = [_cut(result, plan, done) for result in score_evals(plan, progress.evals, done)]
    comparisons = compare(evals, plan.added)
    return Evaluation(ChangeSet(), plan, done, evals, comparisons, traces=progress.traces)


def _cut(result: EvalResult, plan: Plan, done: list[FixtureResult]) -> EvalResult:
    """An Eval some of whose planned runs did not finish: incomplete, never passed, whatever
    the runs that did say."""
    side, name = Side(result.side), result.eval
    planned = sum(1 for run in plan.runs if run.side is side and run.eval == name)
    finished = sum(1 for run in done if run.side == result.side and run.eval == name)
    if finished >= planned:
        return result
    missing = f"{planned - finished} of its {planned} runs did not finish before the run stopped"
    return result.model_copy(update={"passed": False, "incomplete_reason": missing})
