"""`flows.interrupt.until_signalled` on its own: a real SIGINT or SIGTERM sent to this process
cancels the work and marks the run's progress cancelled; work that ends first is returned;
after the work, a first signal marks the run cancelled and a second one stops the process."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator

import pytest

from evalward.errors import EXIT_INTERRUPTED
from evalward.flows.interrupt import until_signalled
from evalward.plan.progress import RunProgress

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _handlers_restored() -> Iterator[None]:
    """`until_signalled` leaves the interpreter's handlers for the writing that follows it."""
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)


async def signalled_while_waiting(signum: int, record: RunProgress) -> str | None:
    started = asyncio.Event()

    async def work() -> str:
        started.set()
        await asyncio.Event().wait()  # never set: only a signal ends it
        return "finished"

    async def send() -> None:
        await started.wait()
        os.kill(os.getpid(), signum)

    sender = asyncio.ensure_future(send())
    result = await until_signalled(work(), record)
    await sender
    return result


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_cancels_the_work_and_the_run_says_so(signum: int) -> None:
    record = RunProgress()

    result = asyncio.run(signalled_while_waiting(signum, record))

    assert result is None
    assert record.cancelled
    assert record.exit_code(0) == EXIT_INTERRUPTED


def test_work_that_ends_is_returned_and_not_cancelled() -> None:
    record = RunProgress()

    async def work() -> int:
        return 7

    assert asyncio.run(until_signalled(work(), record)) == 7
    assert not record.cancelled and record.exit_code(1) == 1


def test_an_error_of_the_work_is_raised_as_it_is() -> None:
    async def work() -> None:
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        asyncio.run(until_signalled(work(), RunProgress()))


def test_while_writing_a_first_signal_marks_the_run_cancelled_and_a_second_stops_it() -> None:
    record = RunProgress()

    async def work() -> str:
        return "written next"

    assert asyncio.run(until_signalled(work(), record)) == "written next"
    os.kill(os.getpid(), signal.SIGTERM)
    assert record.cancelled
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
