"""Tests that run a head agent user's programs outside the machine's sides' turns take turns
with every gate the tests run.

A job keeps no base run in its result cache when a process of any head agent uid of the
machine is alive beside it, or a file another job's head user wrote is left in a shared
folder (`Sandbox.head_alive`). A test that runs its worker's head user directly (no action,
so no side's turn), leaves a process of a head uid on purpose, or plays another job's head
user would make a gate of another worker, or of another copy of the suite, keep nothing, and
that gate's "the rerun reads the cache" fail. So the first kind hold an exclusive `flock` on
one file in the root-owned folder where jobs claim their agent users for as long as they run
(`making`), and every gate a test runs through `support/actionrun.py` or `support/clirun.py`
a shared one (`reading`; a gate started without waiting holds it itself, inherited:
`shared_for_a_child`): neither runs while the other does, and the kernel lets go of the
lock when a test process ends, however it ends. A test that holds the exclusive lock and runs
a gate itself does not ask again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

from evalward.runtime.isolation.agent_users import CLAIMS, checked_folder

LOCK = CLAIMS / "tests-head-strays"


_making = False
"""This process holds the lock exclusively (`making`): its own gates need not ask for it."""


@contextlib.contextmanager
def making() -> Iterator[None]:
    """Held while a test runs a head agent user's programs outside any side's turn."""
    global _making
    with _held(fcntl.LOCK_EX):
        _making = True
        try:
            yield
        finally:
            _making = False


@contextlib.contextmanager
def reading() -> Iterator[None]:
    """Held while a gate runs, or a test checks what its gates kept in the result cache."""
    if _making:
        yield
        return
    with _held(fcntl.LOCK_SH):
        yield


def shared_for_a_child() -> int | None:
    """A descriptor holding the shared lock, for a gate started without waiting
    (`actionrun.start_action`) to inherit: the lock is held as long as the gate runs, whoever
    waits for it, and the test closes its own copy at once. None where the lock is this
    process's already (`making`) or there is nothing to take turns over (no root)."""
    if _making or os.geteuid() != 0:
        return None
    checked_folder(CLAIMS, "the tests keep their head agent users' turn")
    lock = os.open(LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    fcntl.flock(lock, fcntl.LOCK_SH)
    return lock


@contextlib.contextmanager
def _held(kind: int) -> Iterator[None]:
    if os.geteuid() != 0:  # no agent user without root: nothing to take turns over
        yield
        return
    checked_folder(CLAIMS, "the tests keep their head agent users' turn")
    lock = os.open(LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(lock, kind)
        yield
    finally:
        os.close(lock)
