"""One run of evalward, from its set-up to its outcome: the lifecycle every front end shares.

The action (a pull request's gate, a push, a schedule, a dispatch, a shard job, a merge) and
the command line (`evalward run`, `evalward merge`) map their inputs to a `RunSetup`, hand it
in a `RunRequest` and render the `Outcome` (a shard job: the part it wrote); what happens in
between is here, once: the pipeline awaited so that SIGTERM or SIGINT stop it and keep what
finished (`interrupt`), the decision (a cancelled run's too), what the run spent, and its
files, results.json first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalward.errors import EXIT_BUG, EvalwardError, MissingSecretError
from evalward.flows import pipeline
from evalward.flows.interrupt import RunProgress, until_signalled
from evalward.flows.shard import ShardSpec, WrittenPart, run_part
from evalward.flows.shard_merge import PartCheck, expected, merge_parts
from evalward.plan.run_setup import RunSetup
from evalward.plan.sandbox_ready import ready
from evalward.providers.registry import Providers
from evalward.record.evaluation import Evaluation
from evalward.record.schema import RunInfo, SpentInfo
from evalward.report import files
from evalward.rundata.spending import spending_line
from evalward.rundata.spool import TraceSpool
from evalward.security import Redactor
from evalward.verdict import gate
from evalward.verdict.gate import Bypass, BypassRefusal, GateDecision, GateResult, RegressionPolicy

if TYPE_CHECKING:  # the comment's renderer (and Jinja) loads once a run has ended
    from evalward.report.markdown import ReportContext


@dataclass(frozen=True)
class RunFailure:
    """What stopped a run before it could decide: the error itself, which the front end
    raises again once the run's files are written (so it is reported, and exits, as ever),
    and how the decision words it."""

    error: BaseException

    @property
    def message(self) -> str:
        if isinstance(self.error, EvalwardError):
            return str(self.error)
        return f"evalward stopped on an internal error, a bug ({type(self.error).__name__})"

    @property
    def exit_code(self) -> int:
        return self.error.exit_code if isinstance(self.error, EvalwardError) else EXIT_BUG


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
    failure: RunFailure | None = None
    """What stopped the run before it could decide (`evaluation` then holds the runs that
    finished before it)."""

    @classmethod
    def stopped(
        cls,
        exc: BaseException,
        progress: RunProgress,
        providers: Providers,
        traces: TraceSpool | None = None,
    ) -> Outcome:
        """The outcome of a run `exc` stopped: the runs that finished (their traces in
        `traces`), and the problem."""
        return cls(
            progress.partial(traces or TraceSpool()),
            progress,
            progress.elapsed(),
            SpentInfo.of(providers.spent),
            failure=RunFailure(exc),
        )

    @property
    def cancelled(self) -> bool:
        return self.progress.cancelled

    def decision(
        self,
        bypass: Bypass | None = None,
        refusal: BypassRefusal | None = None,
        *,
        regressions: RegressionPolicy = RegressionPolicy.none,
        allow_incomplete: bool = False,
    ) -> GateDecision:
        """The gate's decision: incomplete once a signal cancelled the run (however many
        runs had finished by then), or an error stopped it (bypassed when the label is
        honoured: `gate.stopped`); else the Evaluation's (`Evaluation.decision`)."""
        done, planned = len(self.progress.done), self.progress.planned
        if self.cancelled:
            return gate.cancelled(done, planned)
        if self.failure is not None:
            failure = self.failure
            return gate.stopped(
                failure.message, failure.exit_code, bypass, refusal, done=done, planned=planned
            )
        return self.evaluation.decision(
            bypass, refusal, regressions=regressions, allow_incomplete=allow_incomplete
        )

    def exit_code(self, decision: GateDecision) -> int:
        """The decision's exit code, or 130 once the run was cancelled."""
        return self.progress.exit_code(decision.exit_code)

    def run_info(self, **where: Any) -> RunInfo:
        """results.json's `run`: `where` it happened, and how much of the plan ran."""
        return RunInfo(
            runs_planned=self.progress.planned,
            runs_done=len(self.progress.done),
            cancelled=self.cancelled,
            wall_time_s=None if self.wall_time_s is None else round(self.wall_time_s, 3),
            spent=self.spent,
            **where,
        )

    def spending(self, providers: Providers) -> str | None:
        """The plan's estimate beside what the providers answered (`spending_line`)."""
        estimate = self.evaluation.estimate
        return None if estimate is None else spending_line(estimate, providers.spent)

    def write(
        self,
        output_dir: Path,
        decision: GateDecision,
        comment: Callable[[], str],
        redact: Redactor,
        shown: files.Shown,
    ) -> tuple[Path, str]:
        """Every file of the run, results.json first (`files.write_reports`): results.json's
        path and the comment as written."""
        return files.write_reports(output_dir, self.evaluation, decision, comment, redact, shown)


@dataclass(frozen=True)
class Concluded:
    """A run as its front end concluded it: the outcome, the decision made of it (a bypass
    label read) and the report that shows both. The one value that writing, the check run,
    the audit and the exit read."""

    outcome: Outcome
    decision: GateDecision
    report: ReportContext

    @property
    def evaluation(self) -> Evaluation:
        return self.outcome.evaluation

    def exit_code(self) -> int:
        """The decision's exit code (130 once cancelled); the error that stopped the run is
        raised again instead, its files written, unless the bypass label was honoured."""
        failure = self.outcome.failure
        if failure is not None and self.decision.result is not GateResult.bypassed:
            raise failure.error
        return self.outcome.exit_code(self.decision)


@dataclass(frozen=True)
class ShardParts:
    """A merge's input: the shards' part files, the key that sealed them, and a check of each
    part before it is read (the action refuses one the checkout brings)."""

    paths: tuple[Path, ...]
    key: str | None
    check: PartCheck | None = None


@dataclass(frozen=True)
class RunRequest:
    """What a front end hands flows: its set-up, what it tells as the runs go, and, for a
    merge, the shards' parts that stand for the runs."""

    setup: RunSetup
    progress: RunProgress
    parts: ShardParts | None = None

    async def outcome(self) -> Outcome:
        """The run's outcome (`run_change`), or the parts' merged (`merge`)."""
        if self.parts is not None:
            parts = self.parts
            return merge(self.setup, parts.paths, parts.key, self.progress, parts.check)
        return await run_change(self.setup, self.progress)

    async def part(
        self, spec: ShardSpec, output_dir: Path, redact: Redactor, key: str | None
    ) -> WrittenPart | None:
        """Run part `spec` of the plan and write it to `output_dir` for the merge, sealed
        with `key`; None when a signal cancelled it (a cancelled part writes nothing: the
        merge would miss its runs)."""
        assert self.parts is None, "a merge runs nothing, so it has no part to run"
        ready_sandbox(self.setup)
        return await until_signalled(
            run_part(self.setup, spec, output_dir, redact, self.progress, key),
            self.progress,
        )


def ready_sandbox(setup: RunSetup) -> None:
    """The sandbox readied as the front end asked (`RunSetup.sandbox_setup`), before the
    first program from a checkout starts."""
    sandbox = setup.options.sandbox
    if sandbox is not None and setup.sandbox_setup is not None:
        ready(sandbox, setup.sandbox_setup, setup.git, setup.env)


async def run_change(setup: RunSetup, progress: RunProgress) -> Outcome:
    """Run the phases (`pipeline`); a signal stops them, and the Outcome holds the runs that
    finished.

    An error once the plan is made (a problem only a run could find, an outage, a bug) ends
    the run as a signal would: the Outcome holds the runs that finished and the problem
    (`Outcome.failure`), so they are written and reported before the process exits. A key the
    plan needs and lacks is not such an error: the front ends decide what it means."""
    ready_sandbox(setup)
    traces = TraceSpool()
    try:
        ran = await until_signalled(
            pipeline.run_change(
                setup,
                traces,
                on_result=progress.on_result,
                on_plan=progress.on_plan,
                on_more=progress.on_more,
            ),
            progress,
        )
    except MissingSecretError:
        raise
    except Exception as exc:
        if progress.plan is None:
            raise  # nothing ran: the front end says why
        return Outcome.stopped(exc, progress, setup.providers, traces)
    evaluation = progress.partial(traces) if ran is None else pipeline.evaluated(ran, traces)
    failure = RunFailure(ran.failure) if ran is not None and ran.failure is not None else None
    spent = SpentInfo.of(setup.providers.spent)
    return Outcome(evaluation, progress, progress.elapsed(), spent, failure=failure)


def merge(
    setup: RunSetup,
    paths: Sequence[Path],
    key: str | None,
    progress: RunProgress,
    check: PartCheck | None = None,
) -> Outcome:
    """The parts' results merged into the plan this merge computes itself from the base's
    definitions (`shard_merge`), as the Outcome of the run they were split from."""
    with expected(setup) as plan:
        evaluation = merge_parts(paths, plan, key, check)
    progress.plan, progress.done = evaluation.plan, list(evaluation.fixtures)
    spent = setup.providers.spent
    if evaluation.spent_elsewhere is not None:  # the parts' calls, and the merge's own
        spent = evaluation.spent_elsewhere.plus(spent)
    return Outcome(evaluation, progress, progress.elapsed(), SpentInfo.of(spent))
