"""Where a playground's state is read when reading it takes CPU (a SQLite file, a folder's
files): off the event loop, on a pool of one thread per core the process may use (at most
MAX_READERS), shared by every run of the process.

asyncio's own pool has four threads more than the cores (six on two). When 32 runs end
together, their reads contend there with each other for the interpreter lock and with the
event loop for the cores: a 1.5 MB SQLite database's state cost +10.3 to +11.0 % of a run's
wall at 32 in flight on two cores, against +4.3 to +4.6 % on a pool of one or two threads
(bench/state_at_size.py). Fewer threads than cores would leave SQLite's own work, which runs
without the lock, a core idle.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

MAX_READERS = 4
"""Threads reading states at once, whatever the number of cores: the reads' Python runs one
at a time anyway."""

_P = ParamSpec("_P")
_T = TypeVar("_T")

_pool: ThreadPoolExecutor | None = None
_making = threading.Lock()


def readers() -> int:
    """The pool's size: the cores this process may run on, within 1 and MAX_READERS."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_READERS, cores or 1))


async def read_off_loop(read: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """`read(*args, **kwargs)` on the readers' pool, in this task's context (as
    `asyncio.to_thread` runs it)."""
    global _pool
    with _making:
        if _pool is None:
            _pool = ThreadPoolExecutor(readers(), thread_name_prefix="evalward-state")
        pool = _pool
    call = functools.partial(contextvars.copy_context().run, read, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(pool, call)
