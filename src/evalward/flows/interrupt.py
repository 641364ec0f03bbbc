"""Stopping a run on SIGTERM or SIGINT without losing what finished.

GitHub cancelling a job, a runner's timeout or Ctrl-C on `evalward run` stop the runs in
flight; the runs that finished before are still scored, reported and written, and the run
says it was cancelled (exit 130). The action and the command line share this: each records
the run as it goes (`RunProgress`) and awaits the pipeline through `until_signalled`.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from types import FrameType
from typing import TypeVar

from evalward.errors import EXIT_INTERRUPTED
from evalward.plan.changes import ChangeSet
from evalward.plan.plan import MoreRuns, Plan
from evalward.record.evaluation import Evaluation
from evalward.rundata.results import FixtureResult
from evalward.rundata.spool import TraceSpool

T = TypeVar("T")

SIGNALS = (signal.SIGTERM, signal.SIGINT)


def reused_mark(result: FixtureResult) -> str:
    """What a run's progress line adds when the result cache answered it: it did not run
    again."""
    return ", reused" if result.cached else ""


@dataclass
class RunProgress:
    """What has run so far, as the pipeline reports it (`on_plan`, `on_more`, `on_result`)."""

    plan: Plan | None = None
    done: list[FixtureResult] = field(default_factory=list)
    cancelled: bool = False
    started: float = field(default_factory=time.monotonic)
    """When the run started (`time.monotonic`): its wall time is measured from here."""

    @property
    def planned(self) -> int:
        return len(self.plan.runs) if self.plan else 0

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started

    def on_plan(self, plan: Plan) -> None:
        self.plan = plan

    def on_more(self, plan: Plan, more: MoreRuns) -> None:
        """A round grew the plan by `more` (adaptive reps, the pairwise judge's pairs, the
        base runs a failing head needs)."""
        self.plan = plan

    def on_result(self, result: FixtureResult) -> None:
        self.done.append(result)

    def exit_code(self, code: int) -> int:
        """The run's exit code: 130 once it was cancelled, even after its results were in."""
        return EXIT_INTERRUPTED if self.cancelled else code

    def partial(self, traces: TraceSpool) -> Evaluation:
        """The Evaluation of a cancelled run: the fixture runs that finished, their traces."""
        return Evaluation(ChangeSet(), self.plan or Plan(), list(self.done), [], [], traces=traces)


async def until_signalled(work: Awaitable[T], record: RunProgress) -> T | None:
    """`work`'s result, or None when SIGTERM/SIGINT cancelled it (`record.cancelled`).

    Only the first signal counts. Once `work` is over, what finished is being written: a
    first signal then marks the run cancelled and lets the writing finish (the caller ends
    with `record.exit_code`, 130); a second one, then or later, stops the process."""
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()

    def stop() -> None:
        if not record.cancelled:
            record.cancelled = True
            task.cancel()

    for signum in SIGNALS:
        loop.add_signal_handler(signum, stop)
    try:
        return await task
    except asyncio.CancelledError:
        if not record.cancelled:
            raise
        return None
    finally:
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)
        _while_writing(record)


def _while_writing(record: RunProgress) -> None:
    """Signals once the work is over: a handler of the interpreter's, which runs between any
    two steps of the (mostly synchronous) writing, where the loop's would wait for an `await`."""

    def handle(signum: int, frame: FrameType | None) -> None:
        if record.cancelled:
            raise KeyboardInterrupt  # the second: stop now (exit 130)
        record.cancelled = True

    for signum in SIGNALS:
        signal.signal(signum, handle)
