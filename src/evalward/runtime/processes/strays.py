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
A process is found by the uid of any of its threads and is alive while any thread is
(`thread_groups`: a first thread that ended alone shows as a zombie); killing it ends every
thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from evalward.errors import AgentRunError
from evalward.runtime.processes import thread_groups
from evalward.runtime.processes.cgroups import RunGroup, cgroup_of, join, processes_in

ROUNDS = 200


@dataclass(eq=False)
class RunProcesses:
    """What is one run's: the sessions of the programs it started, and its cgroup, where the
    job has them (its processes that left their session are in it too)."""

    uid: int | None
    """Its agent user (None: programs run as evalward's own user, which is never swept)."""
    group: RunGroup | None = None
    sessions: set[int] = field(default_factory=set)
    ended: bool = False
    """Whether it has been ended (`Apart.end_run`): what it started is gone, once."""

    def holds(self, session: int, cgroup: str | None) -> bool:
        """Whether a process of `session` and `cgroup` is this run's: in a session one of
        its programs started, or in its cgroup."""
        return session in self.sessions or (self.group is not None and cgroup == self.group.name)


@dataclass(frozen=True)
class Spared:
    """What a sweep leaves running: the sessions of programs still running, and the cgroups
    of the runs under way."""

    sessions: frozenset[int] = frozenset()
    groups: frozenset[str] = frozenset()


class Sessions:
    """The sessions of the programs evalward started (agents' programs, installers) while
    they run, the runs under way, and a lock held while a program starts (from before its
    fork until its session is known) and while strays are picked and killed: a program
    starting meanwhile is never taken for one. Looking through /proc, the slow part, is done
    without the lock; what it found is checked again under it."""

    def __init__(self) -> None:
        self.live: set[int] = set()
        self.runs: set[RunProcesses] = set()
        self.lock = asyncio.Lock()
        self._ending: list[RunProcesses] = []
        self._sweeping = asyncio.Lock()

    def spared(self) -> Spared:
        groups = frozenset(run.group.name for run in self.runs if run.group is not None)
        return Spared(frozenset(self.live), groups)

    async def end_strays(self, uid: int) -> int:
        """Every process of `uid` but those of a live session or of a run's cgroup."""
        return await self._sweep(uid, [])

    async def end_run(self, run: RunProcesses) -> None:
        """End everything of `run` and the strays of its user. Runs that end while another's
        are being ended are ended together, in one look at /proc."""
        self.runs.discard(run)
        if not run.sessions:  # it started nothing: nothing can be its (what another run's
            return  # program left is ended with that run, or with the turn)
        self._ending.append(run)
        async with self._sweeping:  # once it is held, the sweep that took `run` is over
            ending, self._ending = self._ending, []
            for uid in {each.uid for each in ending}:
                await self._sweep(uid, [each for each in ending if each.uid == uid])

    async def end_all(self, uids: Iterable[int]) -> None:
        """Every process of these users, nothing spared: at a side's end."""
        async with self.lock:
            for uid in uids:
                await asyncio.to_thread(end_strays, uid, Spared())

    async def _sweep(self, uid: int | None, own: list[RunProcesses]) -> int:
        """Round after round: look (in a thread, without the lock), then, under the lock,
        kill what is still neither spared nor started since."""
        killed = 0
        for _ in range(ROUNDS):
            groups = any(run.group is not None for run in self.runs)
            found = await asyncio.to_thread(_look, uid, own, groups)
            async with self.lock:
                doomed = _doomed(found, self.spared(), own)
                killed += _kill(doomed)
            if not doomed:
                return killed
            await asyncio.sleep(0.01)  # the signals land; zombies are not counted
        raise AgentRunError(f"processes of uid {uid} kept starting faster than they were ended")


Found = list[tuple[int, int | None, str | None]]
"""(pid, session, cgroup) of the processes a sweep may end (None: not read)."""


def end_strays(uid: int, spared: Spared) -> int:
    """SIGKILL every live process of `uid` that `spared` does not name, until there is none;
    nothing may start meanwhile. Returns how many it killed; AgentRunError when they outlast
    every round."""
    killed = 0
    for _ in range(ROUNDS):
        doomed = _doomed(_look(uid, [], bool(spared.groups)), spared, [])
        if not doomed:
            return killed
        killed += _kill(doomed)
        time.sleep(0.01)  # the signals land; zombies are not counted
    raise AgentRunError(f"processes of uid {uid} kept starting faster than they were ended")


def _look(uid: int | None, own: list[RunProcesses], groups: bool) -> Found:
    """The processes of `uid` (or, for evalward's own user, of the runs' sessions) and of the
    runs' cgroups, with their session and, where cgroups are in play, their cgroup."""
    found: Found = [
        (pid, None, None) for run in own if run.group for pid in processes_in(run.group.folder)
    ]
    where = groups or any(run.group is not None for run in own)
    if uid is not None:
        for group in thread_groups.live_of({uid}):
            found.append((group.pid, group.session, cgroup_of(group.pid) if where else None))
    elif sessions := {session for run in own for session in run.sessions}:
        for pid in thread_groups.pids():
            if (facts := thread_groups.facts(pid)) is not None and facts.session in sessions:
                found.append((pid, facts.session, None))
    return found


def _doomed(found: Found, spared: Spared, own: list[RunProcesses]) -> set[int]:
    """What of `found` is the runs' own, or no one's that `spared` names."""
    sessions = {session for run in own for session in run.sessions}
    names = {run.group.name for run in own if run.group is not None}
    doomed = set()
    for pid, session, group in found:
        if session is None or session in sessions or group in names:
            doomed.add(pid)  # a member of a run's cgroup, or of one of its sessions
        elif session not in spared.sessions and group not in spared.groups:
            doomed.add(pid)
    doomed.discard(os.getpid())
    return doomed


def join_late_forks(run: RunProcesses, program: int, known: set[int]) -> None:
    """Move into `run`'s cgroup what its `program` forked before it was moved there itself.
    A program starts in evalward's own cgroup and joins its run's once its pid is known: on
    a loaded machine it may have forked by then, and what it forked would stay behind, where
    another run's end takes it for a stray. A process there is the program's when it or a
    parent is in the program's session or, orphaned, it runs as the run's user, started no
    earlier than the program and is in no session evalward `known`s (such a process is
    ended as a stray at any run's end anyway)."""
    if run.group is None or (facts := thread_groups.facts(program)) is None:
        return
    for _ in range(ROUNDS):  # what moves may fork meanwhile: look again until none is left
        late = [
            pid
            for pid in processes_in(run.group.origin)
            if pid != os.getpid() and _forked_by(pid, program, facts.started, run.uid, known)
        ]
        for pid in late:
            join(run.group, pid)
        if not late:
            break


def _forked_by(pid: int, program: int, since: int, uid: int | None, known: set[int]) -> bool:
    group = thread_groups.facts(pid)
    if group is None:
        return False
    if group.session == program:
        return True
    if uid is None or group.session in known or group.started < since:
        return False
    parent = group.parent
    for _ in range(64):  # up its parents while they live: whose line is it?
        if parent in (0, 1, os.getpid()) or (above := thread_groups.facts(parent)) is None:
            break
        if above.session == program or above.session in known:
            return above.session == program and uid in thread_groups.uids_of(pid)
        parent = above.parent
    return uid in thread_groups.uids_of(pid)


def _kill(pids: set[int]) -> int:
    killed = 0
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    return killed


def uids_running() -> set[int]:
    """Every uid any thread of a process runs as (real, effective or saved)."""
    return {uid for pid in thread_groups.pids() for uid in thread_groups.uids_of(pid)}
