"""What agent users leave where every user may write, removed at their side's end.

Once a side's processes are gone, what they wrote outside their private HOME/TMPDIR is still
there for the next side to read: a file planted at a fixed path in `/tmp` that the other
side's tool opens, a socket it connects to, a shared-memory segment it attaches. At each
side's end evalward removes everything the job's agent users own in the folders every user
shares (every one of the machine, found by `shared_places`), at any depth a folder lets
them write, and their System V IPC objects. It never follows a link: each folder, a place's
own path too, is opened without following one, relative to the folder that holds it, and
only folders others may write (or the user's group) are entered; what is owned by anyone
else stays. What they own is removed as `files.trees` removes a tree, all of it within
BOUNDS; what cannot be removed is a TreeError naming it, once the rest is gone. What it
removed, and what of the `watched` users (other jobs' head users) it saw, it says by uid: a
base run after a head user's leftovers is not kept in the result cache (`apart`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from evalward.errors import TreeError
from evalward.files.trees import FOLDER, Removal, TreeBounds, shown
from evalward.text.counts import and_others

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


@dataclass
class Swept:
    """One sweep: the users it is for, its removal, and what it found of them."""

    uids: frozenset[int]
    gids: frozenset[int]
    watching: frozenset[int]
    removal: Removal
    removed: int = 0
    owners: set[int] = field(default_factory=set)
    """The uids something of which was removed (a file, a folder, an IPC object)."""
    watched: set[int] = field(default_factory=set)
    """The `watching` uids that own something in the places (left where it is)."""
    problems: list[str] = field(default_factory=list)
    """What could not be removed."""


def sweep(
    uids: Collection[int],
    gids: Collection[int],
    places: Collection[Path],
    bounds: TreeBounds = BOUNDS,
    watched: Collection[int] = (),
) -> Swept:
    """Remove what `uids` own in `places` (and their IPC objects), and look for what
    `watched` own there. TreeError, once the rest is removed, naming what could not be."""
    removal = Removal(bounds, "what the agent users left in the shared folders")
    found = Swept(frozenset(uids), frozenset(gids), frozenset(watched) - frozenset(uids), removal)
    if not uids:
        return found
    for place in places:
        folder = _open_place(place)
        if folder is None:
            continue
        try:
            _sweep(folder, str(place), found, DEPTH)
        finally:
            os.close(folder)
    _sweep_ipc(found)
    if problems := found.problems:
        raise TreeError(problems[0] + and_others(len(problems)))
    return found


def _open_place(place: Path) -> int | None:
    """A place's folder, opened one name at a time from `/` without following a link (one
    swapped in on its path since it was found leads nowhere); None where there is none."""
    if not place.is_absolute():
        return None
    folder = os.open("/", FOLDER)
    for name in place.parts[1:]:
        try:
            inner = os.open(name, FOLDER, dir_fd=folder)
        except OSError:
            return None
        finally:
            os.close(folder)
        folder = inner
    return folder


def _sweep(folder: int, where: str, found: Swept, depth: int) -> None:
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for entry in entries]
    except OSError:
        return
    for name in names:
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except OSError:
            continue
        path = f"{where}/{name}"
        if info.st_uid in found.uids:  # removed, a folder with all it holds, following no link
            try:
                found.removal.remove(folder, name, shown(path))
            except TreeError as exc:
                found.problems.append(str(exc))
            else:
                found.removed += 1
                found.owners.add(info.st_uid)
            continue
        if info.st_uid in found.watching:
            found.watched.add(info.st_uid)
        if stat.S_ISDIR(info.st_mode) and depth > 0 and _open_to(info, found.gids):
            try:
                inner = os.open(name, FOLDER, dir_fd=folder)
            except OSError:
                continue
            try:
                _sweep(inner, path, found, depth - 1)
            finally:
                os.close(inner)


def _open_to(info: os.stat_result, gids: frozenset[int]) -> bool:
    """Whether an agent user may make entries in this folder it does not own."""
    return bool(info.st_mode & stat.S_IWOTH) or (
        bool(info.st_mode & stat.S_IWGRP) and info.st_gid in gids
    )


def _sweep_ipc(found: Swept) -> None:
    """Remove the System V shared memory segments, semaphore sets and message queues these
    users own or created."""
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
                theirs = {int(fields[uid]), int(fields[cuid])} & found.uids
                if theirs and remove(int(fields[ident]), *before, IPC_RMID, None) == 0:
                    found.removed += 1
                    found.owners.update(theirs)
