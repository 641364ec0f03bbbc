"""Who the action runs programs from a checkout as: the agent users, and the pair a job has
to itself.

A job ends every process its agent users left running when it ends. Two jobs on one machine
(a self-hosted runner with two runners, a matrix sharing a host, a test suite beside a job)
that ran their agents as the same users would end each other's agents and playground
services. With `agent-user: auto`, the action's default, a job takes the first pair
(head uid, base uid = head + 1) from 10001 upward that

- no account of the machine owns (but the image's own `evalward-agent` and
  `evalward-agent-base`): a person's uid would give agents that person's files;
- no live process runs as (one another job started, or one a crashed job left behind);
- no other job holds: each holds an exclusive `flock` on a file named after its head uid in
  a root-owned folder, for as long as the job runs. The kernel lets go of it when the process
  ends, however it ends, so a crashed job never keeps a pair.
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import os
import pwd
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from evalward.errors import ConfigError
from evalward.runtime.processes.strays import uids_running

AUTO_USER = "auto"
"""The action input `agent-user`'s default: a free pair claimed for the job
(`claim_pair`)."""
AGENT_USER = "evalward-agent"
AGENT_UID = 10001
"""The agent user's uid and gid when the system has no `evalward-agent` entry: fixed, and far
from the hosted runner's 1001 (the owner of the workspace) and from Docker's group."""


@dataclass(frozen=True)
class AgentUser:
    """The unprivileged user agent processes run as."""

    uid: int
    gid: int
    name: str

    def base_side(self) -> AgentUser:
        """The base side's user of the pair this user heads: its uid and gid + 1."""
        return AgentUser(self.uid + 1, self.gid + 1, f"{self.name}-base")

    @classmethod
    def named(cls, spec: str) -> AgentUser:
        """The user a setting names: a uid (its own group, no passwd entry needed), a user of
        the system's database, or the image's `evalward-agent` (its fixed uid when the
        system has no such entry). ConfigError for any other name."""
        if spec.isdigit():
            return cls(int(spec), int(spec), f"uid-{spec}")
        try:
            entry = pwd.getpwnam(spec)
        except KeyError:
            if spec == AGENT_USER:  # a numeric user needs no passwd entry to run a process
                return cls(AGENT_UID, AGENT_UID, spec)
            raise ConfigError(
                f"action input `agent-user`: there is no user {spec!r} on this machine; name "
                "a user of /etc/passwd, or give a uid (e.g. 20001)"
            ) from None
        return cls(entry.pw_uid, entry.pw_gid, spec)


CLAIMS = Path("/tmp/evalward-agent-users")  # noqa: S108 - one place for every job, checked
"""Where jobs hold their pairs: made by the first job, root's, closed to writes by others."""
FIRST_UID = 10001
PAIRS = 1000
IMAGE_USERS = frozenset({"evalward-agent", "evalward-agent-base"})
"""The accounts the image creates for agents (10001 and 10002): theirs to take."""


@dataclass(frozen=True)
class ClaimedUser:
    """The head side's user of a claimed pair, and the lock that holds the pair."""

    user: AgentUser
    lock: int
    """The open file descriptor whose `flock` holds the pair (closed by `release`)."""

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.lock)


def claim_pair(taken: set[int], folder: Path = CLAIMS) -> ClaimedUser:
    """The first free pair of agent uids, held until `release` or the process's end.

    `taken`: uids the pair must avoid besides the rule above (root, evalward's own user, the
    workspace's owner). ConfigError when the claims folder is not safe or no pair is free.
    """
    checked_folder(folder, "action input `agent-user`: auto keeps its claims")
    running = uids_running()
    for uid in range(FIRST_UID, FIRST_UID + 2 * PAIRS, 2):
        pair = {uid, uid + 1}
        if pair & (taken | running) or not all(_unowned(u) for u in pair):
            continue
        lock = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            continue
        if pair & uids_running():  # started between the look and the lock
            os.close(lock)
            continue
        return ClaimedUser(AgentUser(uid, uid, _name(uid)), lock)
    raise ConfigError(
        f"action input `agent-user`: auto found no free pair of agent uids among "
        f"{FIRST_UID}-{FIRST_UID + 2 * PAIRS - 1} (each is an account of this machine, runs a "
        "process or is held by another job); end the jobs that hold them, or name a user"
    )


def end_unclaimed(uids: Iterable[int], end: Callable[[int], object], folder: Path) -> list[int]:
    """End the processes of the pairs among `uids` that a job once claimed here (their file
    is in `folder`) and no job holds now: they are what a job left when it ended without
    ending them (killed, its machine's evalward crashed), and would live on beside every later
    job's base runs. Each pair's lock is held while `end` (given each uid) ends them, so no job
    claims the pair meanwhile; a pair never claimed here is left alone (whose it is, is not
    known: a job may name its users). The head uids of the pairs whose processes were ended."""
    ended = []
    heads = {u - (u - FIRST_UID) % 2 for u in uids if FIRST_UID <= u < FIRST_UID + 2 * PAIRS}
    for head in sorted(heads):
        try:
            lock = os.open(folder / str(head), os.O_RDWR | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            continue  # a job holds it: its processes are its own
        try:
            for uid in (head, head + 1):
                end(uid)
            ended.append(head)
        finally:
            os.close(lock)
    return ended


def checked_folder(folder: Path, what: str) -> None:
    """Make the folder, or check that the one there is evalward's: another user's folder
    could let its owner take a pair away from the job holding it, or a side's turn. Only
    its owner may list it: the names of its turns hold the commits the machine's jobs gate,
    which an agent of another job (a pull request's code) must not learn. `what` starts the
    message (what is kept there, by what)."""
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    if (
        not stat.S_ISDIR(info.st_mode)
        or info.st_uid != os.geteuid()
        or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    ):
        raise ConfigError(
            f"{what} in {folder}, which is not a folder of uid {os.geteuid()} that only it "
            f"may write (owner {info.st_uid}, mode {stat.S_IMODE(info.st_mode):o}); remove "
            "it, or name a user"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:  # made open by an earlier evalward
        folder.chmod(0o700, follow_symlinks=False)


def _unowned(uid: int) -> bool:
    """Whether no account or group of the machine has this id, but the image's own."""
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            entry = lookup(uid)
        except KeyError:
            continue
        name = entry.pw_name if isinstance(entry, pwd.struct_passwd) else entry.gr_name
        if name not in IMAGE_USERS:
            return False
    return True


def _name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid-{uid}"
