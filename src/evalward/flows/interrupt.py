"""Stopping a run on SIGTERM or SIGINT without losing what finished.

GitHub cancelling a job, a runner's timeout or Ctrl-C on `evalward run` stop the runs in
flight; the runs that finished before are still scored, reported and written, and the run
says it was cancelled (exit 130). The action and the command line share this: each records
the run as it goes (`plan.progress.RunProgress`) and awaits the phases through
`until_signalled`.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable
from types import FrameType
from typing import TypeVar

from evalward.plan.progress import RunProgress

T = TypeVar("T")

SIGNALS = (signal.SIGTERM, signal.SIGINT)


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
