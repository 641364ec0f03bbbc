"""What agent users leave where every user may write, removed at their side's end.

Once a side's processes are gone, what they wrote outside their private HOME/TMPDIR is still
there for the next side to read: a file planted at a fixed path in `/tmp` that the other
side's tool opens, a socket it connects to, a shared-memory segment it attaches. At each
side's end evalward removes everything the job's agent users own in the folders every user
shares (every one of the machine, found by `shared_places`; `SHARED` when none are given),
at any depth a folder lets them write, and their System V IPC objects. It never follows a
link: each folder is opened without following one, relative to the folder that holds it,
and only folders others may write (or the user's group) are entered; what is owned by anyone
else stays. What they own is removed as `files.trees` removes a tree (iteratively, however
deep), all of it within BOUNDS; what cannot be removed is a TreeError naming it, once the rest
is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
from collections.abc import Collection
from pathlib import Path

from evalward.errors import TreeError
from evalward.files.trees import Removal, TreeBounds, shown

SHARED = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path("/dev/mqueue"))  # noqa: S108
DEPTH = 32
BOUNDS = TreeBounds(entries=10_000_000, seconds=600.0)
"""What one sweep removes at most, in every shared folder together."""
IPC = Path("/proc/sysvipc")
IPC_RMID = 0
IPC_KINDS = (
    ("shm", "shmid", "shmctl", ()),
    ("sem", "semid", "semctl", (0,)),  # semctl(id, semnum, cmd)
    ("msg", "msqid", "msgctl", ()),
)


def sweep(
    uids: Collection[int],
    gids: Collection[int],
    places: Collection[Path] = SHARED,
    bounds: TreeBounds = BOUNDS,
) -> int:
    """Remove what `uids` own in `places` (and their IPC objects); how many were removed.
    TreeError, once the rest is removed, naming what could not be."""
    if not uids:
        return 0
    removed = 0
    removal = Removal(bounds, "what the agent users left in the shared folders")
    problems: list[str] = []
    for place in places:
        try:
            folder = os.open(place, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        try:
            owners = frozenset(uids), frozenset(gids)
            removed += _sweep(folder, str(place), owners, DEPTH, (removal, problems))
        finally:
            os.close(folder)
    removed += _sweep_ipc(frozenset(uids))
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise TreeError(problems[0] + more)
    return removed


_Owners = tuple[frozenset[int], frozenset[int]]
"""(uids, gids) of the users whose leftovers a sweep removes."""
_Removing = tuple[Removal, list[str]]
"""The sweep's removal and what it could not remove."""


def _sweep(folder: int, where: str, owners: _Owners, depth: int, removing: _Removing) -> int:
    uids, gids = owners
    removed = 0
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for entry in entries]
    except OSError:
        return 0
    for name in names:
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except OSError:
            continue
        path = f"{where}/{name}"
        if info.st_uid in uids:
            removed += _remove(folder, name, path, removing)
        elif stat.S_ISDIR(info.st_mode) and depth > 0 and _open_to(info, gids):
            try:
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            except OSError:
                continue
            try:
                removed += _sweep(inner, path, owners, depth - 1, removing)
            finally:
                os.close(inner)
    return removed


def _open_to(info: os.stat_result, gids: frozenset[int]) -> bool:
    """Whether an agent user may make entries in this folder it does not own."""
    return bool(info.st_mode & stat.S_IWOTH) or (
        bool(info.st_mode & stat.S_IWGRP) and info.st_gid in gids
    )


def _remove(folder: int, name: str, path: str, removing: _Removing) -> int:
    """Remove one thing the users own (a folder with all it holds, following no link)."""
    removal, problems = removing
    try:
        removal.remove(folder, name, shown(path))
    except TreeError as exc:
        problems.append(str(exc))
        return 0
    return 1


def _sweep_ipc(uids: frozenset[int]) -> int:
    """Remove the System V shared memory segments, semaphore sets and message queues these
    users own or created."""
    removed = 0
    for kind, column, control, before in IPC_KINDS:
        try:
            lines = (IPC / kind).read_text().splitlines()
        except OSError:
            continue
        header = lines[0].split() if lines else []
        if not {column, "uid", "cuid"} <= set(header):
            continue
        ident, uid, cuid = (header.index(name) for name in (column, "uid", "cuid"))
        remove = getattr(ctypes.CDLL(None, use_errno=True), control)
        for line in lines[1:]:
            fields = line.split()
            with contextlib.suppress(IndexError, ValueError):
                if {int(fields[uid]), int(fields[cuid])} & uids:
                    removed += remove(int(fields[ident]), *before, IPC_RMID, None) == 0
    return removed
