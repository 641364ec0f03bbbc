"""Sides take turns on a machine: no program of a pull request's head runs while a program of
a base side does, in this job or in another job on the same machine.

Within a job, `flows/execute.py` runs every base run of a round before the head's first
program starts. Jobs that share a machine without a container each (several runners on one
self-hosted host, the shards of a matrix there) share its loopback and its `/tmp` too: one
job's head could write into another job's base playground as readily as into its own's. So a
job takes each side's turn in the root-owned folder where jobs claim their agent users
(`agent_users.CLAIMS`): base turns go together, a head turn goes only beside the head turns
of the same commit (the shards of one pull request, a push of the commit a pull request
gates), and nothing else. A turn held by another job is waited for, and the log says so.

Each turn is a shared `flock` on a file of its group, taken while holding a lock on the
folder's `turns` file, after checking that no other group's file is held: the kernel lets go
of every lock when a job ends, however it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from evalward.runtime.agent_users import checked_folder

POLL_SECONDS = 0.2
PREFIX = "turn-"


def group_of(side: str, commit: str) -> str:
    """The group a side's turn belongs to: every base, or the head of one commit."""
    if side == "base":
        return "base"
    return "head-" + "".join(re.findall(r"[0-9a-f]", commit.lower()))[:64]


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
        said = False
        while True:
            held = self._try(group)
            if isinstance(held, int):
                return held
            if not said and held:
                self.log(
                    f"evalward: waiting for another job on this machine ({held} runs) before "
                    f"this job's {group.split('-')[0]} runs start"
                )
                said = True
            await asyncio.sleep(POLL_SECONDS)

    def _try(self, group: str) -> int | str:
        """The held turn's descriptor, or the group that holds another ("": the folder's lock
        is busy for a moment)."""
        assert self.folder is not None
        mutex = os.open(self.folder / "turns", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            try:
                fcntl.flock(mutex, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return ""
            for entry in self.folder.iterdir():
                name = entry.name.removeprefix(PREFIX)
                if entry.name.startswith(PREFIX) and name != group and _held(entry):
                    return name.split("-")[0]
            held = os.open(
                self.folder / f"{PREFIX}{group}", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600
            )
            fcntl.flock(held, fcntl.LOCK_SH)  # no one holds it otherwise: the mutex is ours
            return held
        finally:
            os.close(mutex)


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
