"""The pool a playground's state is read on: as many reads at once as it has threads, one per
core the process may use and never more than MAX_READERS, each in its task's context, its
error the caller's."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading

import pytest

from evalward.runtime.playground.state_readers import MAX_READERS, read_off_loop, readers

pytestmark = pytest.mark.unit

RUN: contextvars.ContextVar[str] = contextvars.ContextVar("run", default="none")


def test_the_pool_has_a_thread_per_core_the_process_may_use_within_its_bound() -> None:
    cores = len(os.sched_getaffinity(0))
    assert readers() == max(1, min(MAX_READERS, cores))


def test_as_many_reads_run_at_once_as_the_pool_has_threads_and_no_more() -> None:
    size = readers()
    together = threading.Barrier(size, timeout=60)  # broken unless `size` reads run at once
    lock = threading.Lock()
    running = most = 0

    def read(n: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        if n < size:
            together.wait()
        with lock:
            running -= 1
        return n * n

    async def main() -> list[int]:
        return await asyncio.gather(*(read_off_loop(read, n) for n in range(4 * size)))

    assert asyncio.run(main()) == [n * n for n in range(4 * size)]
    assert most == size


def test_a_read_runs_in_its_tasks_context_and_its_error_is_the_callers() -> None:
    def seen() -> str:
        return RUN.get()

    def broken() -> None:
        raise ValueError(f"corrupt in {RUN.get()}")

    async def one(name: str) -> str:
        RUN.set(name)
        return await read_off_loop(seen)

    async def main() -> list[str]:
        return await asyncio.gather(one("a"), one("b"))

    assert asyncio.run(main()) == ["a", "b"]

    async def failing() -> None:
        RUN.set("c")
        await read_off_loop(broken)

    with pytest.raises(ValueError, match="corrupt in c"):
        asyncio.run(failing())
