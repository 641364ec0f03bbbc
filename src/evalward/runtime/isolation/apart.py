"""How a job keeps what a pull request's programs do out of what its base side's runs read,
and every program of a run to its run.

- **Sides take turns.** `execute/execute.py` runs every base run of a round (or takes it from
  the cache) before the first head program starts, and no head program is alive when a base
  program starts: each side's runs hold its turn (`side_turns`, which other jobs on the
  machine respect too), and a turn begins and ends by `clear`ing: every process of the job's
  agent users is ended, nothing spared, and what they own in the folders every user shares
  is removed (`leftovers`). So a head program cannot reach a base run's playground, agent
  server, model-proxy key, HOME or working copy: none of them exists while it runs, and
  nothing it leaves behind is there when the next base run starts. A base run's result is
  kept in the result cache only if nothing a head user wrote could have reached it
  (`head_alive`): none of its processes alive, none of its sockets held, and nothing of it
  found in the shared folders since the head's first turn, swept or not.
- **A run's programs end with it.** Each run's processes are tracked (`strays.RunProcesses`:
  a cgroup of its own where the machine lets evalward make one, `cgroups`; always the
  sessions of the programs it started) and, when it ends, every one of them is ended, and
  every process of its agent user that no run under way can claim.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from evalward.errors import AgentRunError, TreeError
from evalward.runtime.isolation import landlock, message_queues
from evalward.runtime.isolation.agent_users import FIRST_UID, PAIRS, AgentUser, end_unclaimed
from evalward.runtime.isolation.leftovers import BOUNDS, sweep
from evalward.runtime.isolation.shared_places import KEPT, Places, find
from evalward.runtime.isolation.side_turns import Turns, group_of
from evalward.runtime.processes import cgroups, held_sockets, thread_groups
from evalward.runtime.processes.cgroups import RunGroups
from evalward.runtime.processes.strays import (
    RunProcesses,
    Sessions,
    Spared,
    end_strays,
    join_late_forks,
)
from evalward.text.counts import and_others, first_few


class Apart:
    """The job's cgroups, its sides' turns, and its agent users, for its sandbox."""

    def __init__(self, sessions: Sessions, users: tuple[AgentUser, ...]) -> None:
        self.sessions = sessions
        self.users = users
        """The job's agent users (head, base): swept at every turn's start and end; none
        without a user switch."""
        self.groups: RunGroups | None = None
        self.turns = Turns(None)
        self.default_branch = False
        """Whether this job's base is the repository's default branch (`side_turns.group_of`:
        its turns go beside the other jobs' bases of that branch)."""
        self._log: Callable[[str], None] = lambda _line: None
        self._said = ""
        self.places: Places | None = None
        """Where any user may write: found at the first turn (`shared_places`)."""
        self.queues: Path | None = None
        """An mqueue file system evalward mounted to list POSIX message queues, if it did."""
        self.unclean = ""
        """Why no base run from now on is kept in the result cache (`head_alive`): a turn
        ended with a socket of an agent user held by another process, a head user left
        files or IPC objects (swept or not), or the walk for the shared folders was cut
        short and a head turn has been; empty while none of these is so."""
        self._reasons: set[str] = set()
        self.head_turns = 0
        """The head turns taken so far."""
        self.head_commit = ""
        """The commit of the head whose turn was taken last: what a head side's programs
        run for, whatever tree they run from."""
        self.head_open = False
        """Whether a head turn is under way: its programs may run, and what they write where
        every user may write is there until it ends."""

    def track(
        self, turns: Path | None, log: Callable[[str], None], default_branch: bool = False
    ) -> None:
        """Make the job's cgroup and take part in the machine's turns (`turns`: their folder,
        None: this job's alone; `default_branch`: its base is the repository's default
        branch); the first turn says in the log what holds."""
        made = self.groups if self.groups is not None else RunGroups.make()
        self.groups = made if isinstance(made, RunGroups) else None
        self.turns = Turns(turns, log)
        self.default_branch = default_branch
        self._log = log
        sweep = " and agent user (a uid sweep over every thread)" if self.users else ""
        how = (
            f"in a cgroup each ({made.folder})"
            if isinstance(made, RunGroups)
            else f"by their sessions{sweep}, with no cgroup ({made})"
        )
        between = (
            ", nothing of either side's agent user left between them"
            if self.users
            else " (`agent-isolation: off`: nothing else is ended or swept between them)"
        )
        self._said = (
            f"evalward: sides take turns: the base's runs, then the head's{between}; each "
            f"run's processes are tracked {how} and ended with the run"
        )

    def begin_run(self, uid: int | None) -> RunProcesses:
        """What one run starts, tracked from now until `end_run`."""
        run = RunProcesses(uid, self.groups.new() if self.groups is not None else None)
        self.sessions.runs.add(run)
        return run

    async def end_run(self, run: RunProcesses) -> None:
        """End what `run` started (once: a playground's run ends its agent's as the agent
        returns, and again, with nothing left to end, as the run ends)."""
        if run.ended:
            return
        run.ended = True
        await self.sessions.end_run(run)
        if run.group is not None:
            await asyncio.to_thread(cgroups.remove, run.group.folder)

    def adopt(self, run: RunProcesses, pid: int) -> None:
        """A program the run just started (in a new session, `pid`'s): the run's, and so is
        what it forked before it joined the run's cgroup."""
        run.sessions.add(pid)
        if run.group is not None:
            cgroups.join(run.group, pid)
            join_late_forks(run, pid, self.sessions.live - {pid})

    @contextlib.asynccontextmanager
    async def turn(self, side: str, commit: str) -> AsyncIterator[None]:
        """A side's turn: nothing of the job's agent users before it, or after it."""
        async with self.turns.taken(group_of(side, commit, self.default_branch)):
            if self._said:  # once, as the first programs may start
                self._log(self._said)
                if self.users:
                    self._log(landlock.statement())
                self._said = ""
            await self.clear(side)
            if side != "base":
                self.head_turns += 1
                self.head_open = True
                self.head_commit = commit
            try:
                yield
            finally:
                await self.clear(side)
                if side != "base":  # open still if what it left could not all be removed
                    self.head_open = False

    async def clear(self, side: str) -> None:
        """End every process of the job's agent users and remove what they left in the
        shared folders. AgentRunError when something they left cannot be removed
        (`leftovers.BOUNDS`): the runs stop, and the gate with them, its finished runs
        written. What the head user left once its turns began, or another job's head user
        left where a base turn (`side`) begins or ends, makes the turn not clean."""
        users = [user for user in self.users if user.uid != os.geteuid()]
        if not users:
            return
        await self.sessions.end_all(user.uid for user in users)
        if self.places is None:
            self.places = await asyncio.to_thread(find, kept=KEPT)
            self._log(_places_said(self.places))
            await asyncio.to_thread(self._list_queues)
        uids, gids = [u.uid for u in users], [u.gid for u in users]
        watched = self._head_uids() - set(uids) if side == "base" else set()
        try:
            swept = await asyncio.to_thread(sweep, uids, gids, self.places.folders, BOUNDS, watched)
        except TreeError as exc:  # a later side's programs could read what is left: stop
            raise AgentRunError(
                f"the runs stop here: {exc}, and the other side's programs could read it"
            ) from None
        if self.head_turns and self.users[0].uid in swept.owners:  # (before: a past job's)
            self._not_clean(
                f"the head's agent user (uid {self.users[0].uid}) left files or IPC objects "
                f"where every user may write (removed)"
            )
        if swept.watched:
            self._not_clean(
                f"another job's head agent user (uid {min(swept.watched)}) left files where "
                f"every user may write, at a base turn"
            )
        if held := await asyncio.to_thread(held_sockets.held, set(uids)):
            self._not_clean(
                f"a socket an agent user made outlived its processes, handed to a process "
                f"of another user (SCM_RIGHTS): {held[0].said()}{and_others(len(held))}"
            )

    def _not_clean(self, why: str) -> None:
        """No base run from now on is kept in the result cache, and the log says why (each
        reason once)."""
        if why in self._reasons:
            return
        self._reasons.add(why)
        self.unclean = self.unclean or why
        self._log(
            f"evalward: {why}; the turn is not clean, and no base run from now on is kept in "
            f"the result cache"
        )

    def _head_uids(self) -> set[int]:
        """This job's head user's uid and every head uid of the pairs jobs claim, but the
        base's and evalward's own."""
        head, base = self.users[0].uid, self.users[-1].uid
        return {*range(FIRST_UID, FIRST_UID + 2 * PAIRS, 2), head} - {base, os.geteuid()}

    def _list_queues(self) -> None:
        """Where no mqueue file system is mounted, mount one to sweep POSIX message queues
        (`message_queues`), or say that they cannot be listed."""
        assert self.places is not None
        if message_queues.mounted():
            return
        own = message_queues.mount_own()
        if isinstance(own, str):
            self._log(
                f"evalward: POSIX message queues cannot be listed here: no mqueue file system "
                f"is mounted, and mounting one failed ({own}); a queue an agent user makes is "
                f"not removed at its turn's end"
            )
            return
        self.queues = own
        self.places = Places((*self.places.folders, own.resolve()), self.places.complete)
        self._log(
            f"evalward: POSIX message queues are swept through an mqueue file system mounted "
            f"at {own} (none was mounted)"
        )

    def head_alive(self, during: str) -> bool:
        """Whether a base run could have been reached, and so is not kept in the result
        cache (`execute/execute.py`; the log says why): a process of this job's head user or
        any head uid of the pairs jobs claim is alive (by any of its threads), a socket one
        made is held, a turn of this job was not clean (`unclean`), or a head turn has been
        while the walk for the shared folders stopped at its bound (a head program could have
        written where no sweep looks)."""
        if not self.users:
            return False
        if self.head_turns and self.places is not None and not self.places.complete:
            self._not_clean(
                "the walk for the folders any user may write stopped at its bound, and the "
                "head has had a turn: it could have written where no sweep looks"
            )
        uids = self._head_uids()
        found = thread_groups.live_of(uids)
        if found and self.turns.folder is not None:
            found = self._end_unclaimed(found, uids, self.turns.folder)
        if found:
            pids = first_few([str(group.pid) for group in found], 5)
            self._log(
                f"evalward: a head agent user's process was alive during {during} (pid "
                f"{pids}): its result is not kept in the result cache"
            )
            return True
        if held := held_sockets.held(uids):
            self._log(
                f"evalward: a socket a head agent user made was held during {during} "
                f"({held[0].said()}): its result is not kept in the result cache"
            )
            return True
        if self.unclean:
            self._log(
                f"evalward: {during} follows a turn that was not clean ({self.unclean}): its "
                f"result is not kept in the result cache"
            )
        return bool(self.unclean)

    def _end_unclaimed(
        self, found: list[thread_groups.ThreadGroup], uids: set[int], claims: Path
    ) -> list[thread_groups.ThreadGroup]:
        """End what jobs that are gone left of their agent users (`end_unclaimed`), and say
        so; what is still alive after."""
        seen = {uid for group in found for uid in thread_groups.uids_of(group.pid)} & uids
        ended = end_unclaimed(seen, _end_user, claims)
        if not ended:
            return found
        self._log(
            "evalward: ended the processes of agent uids "
            + ", ".join(f"{uid}/{uid + 1}" for uid in ended)
            + ", which no job holds (a job that ended without ending them left them)"
        )
        return thread_groups.live_of(uids)

    def kill_all(self) -> None:
        """`clear`'s ending of processes, at once (the job's end)."""
        for uid in {user.uid for user in self.users} - {os.geteuid()}:
            _end_user(uid)

    def close(self) -> None:
        if self.queues is not None:
            message_queues.unmount(self.queues)
            self.queues = None
        if self.groups is not None:
            self.groups.close()
            self.groups = None


def _places_said(places: Places) -> str:
    shown = ", ".join(str(place) for place in places.folders) or "none"
    cut = (
        ""
        if places.complete
        else " (the search of the file system stopped at its bound: only the folders found "
        "and the usual shared ones are swept)"
    )
    return (
        f"evalward: the agent users' files are removed at each turn from every folder any "
        f"user may write: {shown}{cut}"
    )


def _end_user(uid: int) -> None:
    """End every process of `uid` (none spared); what could not be read ends none."""
    with contextlib.suppress(AgentRunError):
        end_strays(uid, Spared())
