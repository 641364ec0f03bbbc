"""Ending the processes agent users leave running (Linux: /proc).

A program's process group is killed when it ends, but a process it started may have left
the group (`setsid`, a double fork) and go on: writing into an environment being built, or
into what the other side's runs read. Such a process is ended with the run that started it:
every process of the run's cgroup (`cgroups`), every process of a session the run started,
and every process of the run's agent user that no run under way can claim, in a session of a
program still running (another run's, an http agent's server, a code scorer) or in another
run's cgroup. An install's strays are ended the same way before its environment is sealed,
and at a side's end every process of the job's agent users goes, nothing spared. A process
forking as fast as it is killed is killed again, round after round, until none is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from evalward.errors import AgentRunError
from evalward.runtime.cgroups import RunGroup, cgroup_of, members

ROUNDS = 200


@dataclass(eq=False)
class RunProcesses:
    """What is one run's: the sessions of the programs it started, and its cgroup, where the
    job has them (its processes that left their session are in it too)."""

    uid: int | None
    """Its agent user (None: programs run as evalward's own user, which is never swept)."""
    group: RunGroup | None = None
    sessions: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class Spared:
    """What a sweep leaves running: the sessions of programs still running, and the cgroups
    of the runs under way."""

    sessions: frozenset[int] = frozenset()
    groups: frozenset[str] = frozenset()


class Sessions:
    """The sessions of the programs evalward started (agents' programs, installers) while
    they run, the runs under way, and a lock held while a program starts (its session is not
    yet known) or while strays are ended: a program starting meanwhile is never taken for
    one."""

    def __init__(self) -> None:
        self.live: set[int] = set()
        self.runs: set[RunProcesses] = set()
        self.lock = asyncio.Lock()

    def spared(self) -> Spared:
        groups = frozenset(run.group.name for run in self.runs if run.group is not None)
        return Spared(frozenset(self.live), groups)

    async def end_strays(self, uid: int) -> int:
        """`end_strays` of `uid`, sparing every live session and every run's cgroup."""
        async with self.lock:
            return await asyncio.to_thread(end_strays, uid, self.spared())

    async def end_run(self, run: RunProcesses) -> int:
        """End everything of `run` and the strays of its user (`end_strays`)."""
        async with self.lock:
            self.runs.discard(run)
            if not run.sessions:  # it started nothing: nothing can be its (what another
                return 0  # run's program left is ended with that run, or with the turn)
            return await asyncio.to_thread(end_strays, run.uid, self.spared(), run)

    async def end_all(self, uids: Iterable[int]) -> int:
        """Every process of these users, nothing spared: at a side's end."""
        async with self.lock:
            return sum([await asyncio.to_thread(end_strays, uid, Spared()) for uid in uids])


def end_strays(uid: int | None, spared: Spared | set[int], own: RunProcesses | None = None) -> int:
    """SIGKILL every process of `own` (its cgroup's and its sessions', whoever they run as)
    and every live process of `uid` that `spared` does not name, until there is none. Returns
    how many it killed; AgentRunError when they outlast every round."""
    if not isinstance(spared, Spared):
        spared = Spared(frozenset(spared))
    where = bool(spared.groups) or (own is not None and own.group is not None)
    killed = 0
    for _ in range(ROUNDS):
        doomed = set(members(own.group)) if own is not None and own.group is not None else set()
        if uid is not None:
            for pid, session in _processes_of(uid):
                group = cgroup_of(pid) if where else None
                if _owned(session, group, own) or not (
                    session in spared.sessions or group in spared.groups
                ):
                    doomed.add(pid)
        elif own is not None and own.sessions:  # evalward's own user: only the run's sessions
            doomed.update(pid for pid, session in _sessions() if session in own.sessions)
        doomed.discard(os.getpid())
        if not doomed:
            return killed
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.01)  # the signals land; zombies are not counted
    raise AgentRunError(f"processes of uid {uid} kept starting faster than they were ended")


def _owned(session: int, group: str | None, own: RunProcesses | None) -> bool:
    if own is None:
        return False
    return session in own.sessions or (own.group is not None and group == own.group.name)


def uids_running() -> set[int]:
    """Every uid a live process runs as (real, effective or saved)."""
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        uids = next((x.split()[1:4] for x in status.splitlines() if x.startswith("Uid:")), [])
        found.update(int(uid) for uid in uids if uid.isdigit())
    return found


def _processes_of(uid: int) -> list[tuple[int, int]]:
    """(pid, session id) of every process running as `uid` (its real, effective or saved
    uid: /proc/<pid> itself may say root for a process that made itself undumpable) that is
    not a zombie."""
    found: list[tuple[int, int]] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        uids = next((x.split()[1:4] for x in status.splitlines() if x.startswith("Uid:")), [])
        if str(uid) in uids and (session := _session(entry)) is not None:
            found.append((int(entry.name), session))
    return found


def _sessions() -> list[tuple[int, int]]:
    """(pid, session id) of every live process that is not a zombie."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (session := _session(entry)) is not None:
            found.append((int(entry.name), session))
    return found


def _session(entry: Path) -> int | None:
    """The session of the process at `/proc/<pid>`; None when it is gone or a zombie."""
    try:
        text = (entry / "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # after "pid (command) "
    if len(fields) <= 3 or fields[0] in ("Z", "X"):
        return None
    return int(fields[3])
