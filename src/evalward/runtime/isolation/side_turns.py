"""Sides take turns on a machine: no program of a pull request's head runs while a program of
a base side does, in this job or in another job on the same machine.

Within a job, `execute/execute.py` runs every base run of a round before the head's first
program starts. Jobs that share a machine without a container each (several runners on one
self-hosted host, the shards of a matrix there) share its loopback and its `/tmp` too: one
job's head could write into another job's base playground as readily as into its own's. Nor
is another job's base any more trusted than a head: a pull request into a branch that anyone
who can push made runs that branch's code as its base, and it could stop this job's base
service so that this job's head seems to regress nothing. So a job takes each side's turn
in the root-owned folder where jobs claim their agent users (`agent_users.CLAIMS`): a side's
turn goes only beside the turns of the same side of the same commit (the shards of one pull
request, a push of the commit a pull request gates, pull requests on one base commit), but
that the bases of the repository's default branch, its own reviewed code, go together
whatever their commit; and nothing else. A turn held by another job is waited for, and the
log says so.

Turns go first come, first served. A job that wants a turn takes a ticket: a file named
after the next number of the folder's `turns` file and its group, which it holds a shared
`flock` on while it waits. It takes the turn (a shared `flock` on a file of its group) once no
other group's turn is held and every ticket before its own is of its group (those go with
it); so a job waiting for a head's turn is never overtaken by base turns that keep coming,
nor the reverse. A head's turn in progress is joined at once by a job of its own commit,
whoever waits: one commit's few jobs (a pull request's shards, a push) cannot stretch it
without end; a base turn is never joined past a waiting turn, since every pull request on
one base commit brings one. Tickets and turns are read and taken while holding a
lock on the `turns` file: the kernel lets go of every lock when a job ends, however it ends,
and a ticket or turn file no one holds is removed. The log says how long a turn waited.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from evalward.runtime.isolation.agent_users import checked_folder

POLL_SECONDS = 0.05
PREFIX = "turn-"
TICKET = "ticket-"


def group_of(side: str, commit: str, default_branch: bool = False) -> str:
    """The group a side's turn belongs to: the side ("base" or "head") of one commit; every
    base of the repository's default branch (`default_branch`: the job's base is), whose
    history is the repository's own reviewed code, in one group."""
    if side == "base" and default_branch:
        return "base"
    hexadecimal = "".join(re.findall(r"[0-9a-f]", commit.lower()))[:64]
    return f"{'base' if side == 'base' else 'head'}-{hexadecimal}"


class Turns:
    """The sides' turns among the jobs of one machine (`folder` None: this job's alone)."""

    def __init__(self, folder: Path | None, log: Callable[[str], None] | None = None) -> None:
        self.folder = folder
        self.log = log or (lambda _line: None)
        if folder is not None:
            checked_folder(folder, "evalward keeps the agent users' claims and the sides' turns")

    @contextlib.asynccontextmanager
    async def taken(self, group: str) -> AsyncIterator[None]:
        """Hold `group`'s turn while the block runs."""
        if self.folder is None:
            yield
            return
        held = await self._wait_for(group)
        try:
            yield
        finally:
            os.close(held)

    async def _wait_for(self, group: str) -> int:
        ticket = self._ticket(group)
        started = time.monotonic()
        said = False
        try:
            while True:
                held = self._try(group, ticket)
                if isinstance(held, int):
                    break
                if not said and held:
                    self.log(
                        f"evalward: waiting for another job on this machine ({held} runs) "
                        f"before this job's {_side(group)} runs start"
                    )
                    said = True
                await asyncio.sleep(POLL_SECONDS)
        finally:
            with contextlib.suppress(OSError):
                ticket.path.unlink()
            os.close(ticket.lock)
        if said:
            self.log(
                f"evalward: this job's {_side(group)} runs start after "
                f"{time.monotonic() - started:.1f} s waiting for other jobs' turns"
            )
        return held

    def _ticket(self, group: str) -> _Ticket:
        """This job's place in the queue: the next number, held while it waits."""
        assert self.folder is not None
        with self._mutex(blocking=True) as mutex:
            assert mutex is not None
            text = os.pread(mutex, 32, 0).decode("ascii", "replace").strip()
            number = int(text) + 1 if text.isdigit() else 1
            os.ftruncate(mutex, 0)
            os.pwrite(mutex, str(number).encode(), 0)
            path = self.folder / f"{TICKET}{number:020d}-{group}"
            lock = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            fcntl.flock(lock, fcntl.LOCK_SH)
            return _Ticket(number, path, lock)

    def _try(self, group: str, ticket: _Ticket) -> int | str:
        """The held turn's descriptor, or the group that holds another or comes first ("":
        the folder's lock is busy for a moment)."""
        assert self.folder is not None
        with self._mutex(blocking=False) as mutex:
            if mutex is None:
                return ""
            own = self.folder / f"{PREFIX}{group}"
            # a head's turn in progress is joined by its own commit's jobs at once
            joins = _side(group) != "base" and _held(own)
            for entry in self.folder.iterdir():
                name = entry.name.removeprefix(PREFIX)
                if entry.name.startswith(PREFIX) and name != group and _held(entry):
                    return _side(name)
            for entry in [] if joins else self.folder.iterdir():
                number, _, name = entry.name.removeprefix(TICKET).partition("-")
                if (
                    entry.name.startswith(TICKET)
                    and number.isdigit()
                    and int(number) < ticket.number
                    and name != group
                    and _held(entry)
                ):
                    return _side(name)
            held = os.open(own, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            fcntl.flock(held, fcntl.LOCK_SH)  # no one holds it otherwise: the mutex is ours
            return held

    @contextlib.contextmanager
    def _mutex(self, blocking: bool) -> Iterator[int | None]:
        """The folder's lock, held while the block runs (None: busy, and not `blocking`)."""
        assert self.folder is not None
        mutex = os.open(self.folder / "turns", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            try:
                fcntl.flock(mutex, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                yield None
                return
            yield mutex
        finally:
            os.close(mutex)


@dataclass(frozen=True)
class _Ticket:
    number: int
    path: Path
    lock: int


def _side(group: str) -> str:
    return group.split("-")[0]


def _held(entry: Path) -> bool:
    """Whether a job holds this group's turn; a file no one holds is removed (no one opens
    one but under the folder's lock, which is ours)."""
    try:
        probe = os.open(entry, os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(probe)
    with contextlib.suppress(OSError):
        entry.unlink()
    return False
