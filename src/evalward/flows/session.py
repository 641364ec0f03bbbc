"""One run of evalward, from its request to its verdict: the lifecycle every front end shares.

The action (a pull request's gate, a push, a schedule, a dispatch, a shard job, a merge) and
the command line (`evalward run`, `evalward merge`) call `run`, which runs the phases
(`pipeline`) so that SIGTERM or SIGINT stop them and keep what finished (`interrupt`); then
`decide`, whose `RunVerdict` the front end publishes (its files, results.json first; the
comment, the check, the exit code).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalward.errors import (
    EXIT_BUG,
    EXIT_EXTERNAL,
    EvalwardError,
    refusal_message,
    refused_write,
)
from evalward.flows import pipeline, shard
from evalward.flows.interrupt import until_signalled
from evalward.flows.shard import ShardSpec, WrittenPart
from evalward.flows.shard_merge import expected, merge_parts
from evalward.plan.progress import RunProgress
from evalward.plan.request import RunRequest
from evalward.plan.run_setup import RunOptions, RunSetup
from evalward.plan.sandbox_ready import ready
from evalward.record.evaluation import Evaluation
from evalward.record.schema import RunInfo, SpentInfo
from evalward.rundata.spending import spending_line
from evalward.security import Redactor
from evalward.verdict import gate
from evalward.verdict.gate import BypassRecord, GateDecision, GateResult, LabelWeighed


@dataclass
class Outcome:
    """What a run produced (or, cancelled, what finished before the signal), and how far it
    went."""

    evaluation: Evaluation
    progress: RunProgress
    wall_time_s: float | None = None
    """From the run's start until its results were in (`RunProgress.started`)."""
    spent: SpentInfo | None = None
    """What the run's model calls used by then, judges and calibration included."""
    options: RunOptions = field(default_factory=RunOptions)
    """How it ran: the decision reads its policies (`regressions`, `allow_incomplete`)."""
    failure: BaseException | None = None
    """What stopped the run before it could decide (`evaluation` then holds the runs that
    finished before it): raised again by the front end once the run's files are written, so
    it is reported, and exits, as ever."""

    @classmethod
    def stopped(cls, exc: BaseException, request: RunRequest) -> Outcome:
        """The outcome of a run `exc` stopped: the runs that finished, and the problem."""
        setup, progress = request.setup, request.progress
        spent = SpentInfo.of(setup.providers.spent)
        return cls(
            pipeline.partial(progress),
            progress,
            progress.elapsed(),
            spent,
            setup.options,
            failure=exc,
        )

    @property
    def began(self) -> bool:
        """Whether a plan was made: an error before it left nothing to write or report."""
        return self.progress.plan is not None

    @property
    def cancelled(self) -> bool:
        return self.progress.cancelled

    def run_info(self, **where: Any) -> RunInfo:
        """results.json's `run`: `where` it happened, how much of the plan ran, what it and
        (apart) attribution spent."""
        found = self.evaluation.attribution
        return RunInfo(
            runs_planned=self.progress.planned,
            runs_done=len(self.progress.done),
            cancelled=self.cancelled,
            wall_time_s=None if self.wall_time_s is None else round(self.wall_time_s, 3),
            spent=self.spent,
            attribution_spent=None if found is None else SpentInfo.of(found.spent),
            **where,
        )

    def spending(self) -> str | None:
        """The plan's estimate beside what the run's own calls spent (`spending_line`; a
        merge's parts' calls included, attribution's said apart)."""
        estimate = self.evaluation.estimate
        if estimate is None or self.spent is None:
            return None
        return spending_line(estimate, self.spent.spent())


def stopped_by(failure: BaseException | None) -> str:
    """How a decision words what stopped a run: an error of evalward's as it says itself,
    a write the machine refused (a playground's database on a full disk) as that, any other as
    the bug it is."""
    if isinstance(failure, EvalwardError):
        return str(failure)
    if isinstance(failure, OSError) and refused_write(failure):
        return refusal_message(failure)
    return f"evalward stopped on an internal error, a bug ({type(failure).__name__})"


def stopped_code(failure: BaseException) -> int:
    """The exit code of what stopped a run: an error's own, 3 for the machine's refusal
    of a write (run again), 4 for a bug."""
    if isinstance(failure, EvalwardError):
        return failure.exit_code
    return EXIT_EXTERNAL if refused_write(failure) else EXIT_BUG


@dataclass(frozen=True)
class RunVerdict:
    """A run's outcome and the gate's decision of it, with the record the comment keeps of the
    bypass label: the one value a front end publishes (files, comment, check, audit, exit)."""

    outcome: Outcome
    decision: GateDecision
    label: BypassRecord | None = None

    @property
    def evaluation(self) -> Evaluation:
        return self.outcome.evaluation

    def signalled_late(self) -> str:
        """Why the exit is 130 though the decision is not a cancellation: the signal came
        once it was written (`interrupt._while_writing`), so the records keep it, and this
        says so; "" when no signal came, or one cancelled the run before its decision."""
        if not self.outcome.progress.cancelled or self.decision.interrupted:
            return ""
        return (
            "interrupted (SIGINT or SIGTERM: Ctrl-C, or a cancelled job) once the decision "
            f"was written: it stands as written ({self.decision.result.value}), and the job "
            "exits 130"
        )

    def exit_code(self) -> int:
        """The decision's exit code (130 once cancelled); the error that stopped the run is
        raised again instead, its files written, unless the bypass label was honoured."""
        failure = self.outcome.failure
        if failure is not None and self.decision.result is not GateResult.bypassed:
            raise failure
        return self.outcome.progress.exit_code(self.decision.exit_code)


def decide(outcome: Outcome, label: LabelWeighed | None = None) -> RunVerdict:
    """The gate's decision of `outcome`, the bypass `label` weighed: incomplete once a signal
    cancelled the run (however many runs had finished by then), or an error stopped it
    (bypassed when the label is honoured: `gate.stopped`); else the Evaluation's
    (`Evaluation.decision`), under the run's policies."""
    label = label or LabelWeighed()
    progress, options = outcome.progress, outcome.options
    done, planned = len(progress.done), progress.planned
    if outcome.cancelled:
        decision = gate.cancelled(done, planned)
    elif outcome.failure is not None:
        failure = outcome.failure
        decision = gate.stopped(
            stopped_by(failure),
            stopped_code(failure),
            label.bypass,
            label.refusal,
            done=done,
            planned=planned,
        )
    else:
        decision = outcome.evaluation.decision(
            label.bypass,
            label.refusal,
            regressions=options.regressions,
            allow_incomplete=options.allow_incomplete,
        )
    return RunVerdict(outcome, decision, label.record)


async def run(request: RunRequest) -> Outcome:
    """The request's outcome: its runs (`run_change`), or a merge's parts merged (`merge`).

    An error is data, never raised across: the Outcome carries it (`Outcome.failure`) with
    the runs that finished before it, and `Outcome.began` says whether a plan was made. The
    front ends decide what it means: a key the plan lacks may skip the gate, an error before
    anything ran is said without files, one after is written and reported first."""
    try:
        ready_sandbox(request.setup)
        return await merge(request) if request.parts is not None else await run_change(request)
    except Exception as exc:
        return Outcome.stopped(exc, request)


async def run_part(
    request: RunRequest, spec: ShardSpec, output_dir: Path, redact: Redactor, key: str | None
) -> WrittenPart | None:
    """Run part `spec` of the plan and write it to `output_dir` for the merge, sealed with
    `key`; None when a signal cancelled it (a cancelled part writes nothing: the merge would
    miss its runs)."""
    assert request.parts is None, "a merge runs nothing, so it has no part to run"
    setup, progress = request.setup, request.progress
    ready_sandbox(setup)
    return await until_signalled(
        shard.run_part(setup, spec, output_dir, redact, progress, key), progress
    )


def ready_sandbox(setup: RunSetup) -> None:
    """The sandbox readied as the front end asked (`RunSetup.sandbox_setup`), before the
    first program from a checkout starts."""
    sandbox = setup.options.sandbox
    if sandbox is not None and setup.sandbox_setup is not None:
        ready(sandbox, setup.sandbox_setup, setup.git, setup.env)


async def run_change(request: RunRequest) -> Outcome:
    """Run the phases (`pipeline`); a signal stops them, and the Outcome holds the runs that
    finished. An error once runs finished comes back in the phases' `Ran`; one before is
    raised to `run`, which makes it the Outcome's too."""
    setup, progress = request.setup, request.progress
    ran = await until_signalled(pipeline.run_change(request), progress)
    evaluation = (
        pipeline.partial(progress) if ran is None else pipeline.evaluated(ran, progress.traces)
    )
    failure = ran.failure if ran is not None else None
    spent = SpentInfo.of(setup.providers.spent)
    return Outcome(evaluation, progress, progress.elapsed(), spent, setup.options, failure=failure)


async def merge(request: RunRequest) -> Outcome:
    """The parts' results merged into the plan this merge computes itself from the base's
    definitions (`shard_merge`), as the Outcome of the run they were split from. The merge
    runs no agent (it judges the pairs of an Eval judged pairwise), but its sandbox is
    readied as the parts' are: attribution runs variants of the head in it once the merge
    has decided."""
    setup, progress, parts = request.setup, request.progress, request.parts
    assert parts is not None, "a merge is a request with parts"
    with expected(setup) as plan:
        evaluation = await merge_parts(parts.paths, plan, parts.key, parts.check)
    progress.plan, progress.done = evaluation.plan, list(evaluation.fixtures)
    spent = setup.providers.spent
    if evaluation.spent_elsewhere is not None:  # the parts' calls, and the merge's own
        spent = evaluation.spent_elsewhere.plus(spent)
    return Outcome(evaluation, progress, progress.elapsed(), SpentInfo.of(spent), setup.options)
