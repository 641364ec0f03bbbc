"""Where on this machine any user may write, found once as a job starts.

What an agent user writes outside its own HOME and TMPDIR is what the other side's programs
could read: a fixed list of shared folders misses the ones a machine adds (`/run/lock`, which
`/var/lock` names; a runner's own scratch folder; a mount of its own). So the places are
found, not listed: every writable mount that is not a kernel interface (`/proc`, `/sys`,
cgroups...) is walked from its mount point, without crossing into another mount or following
a link, through every folder every user may enter, and each folder every user may write is a
place (`leftovers` sweeps it, and what it holds, of the agent users' files). The walk goes on
inside a place too: the sweep enters only the folders others may write, so a shared cache
every user may write in a folder only root may write, itself in `/tmp`, is a place of its
own. The walk is bounded (`WALK_BOUND` folders); a walk cut short says so, and the fixed
folders are swept anyway.

Every folder is looked at by every job's walk, but what a folder holds is read again only
where it changed since a walk before read it: each walk keeps the folders it read, with the
folders each holds, in a file only root may write (`KEPT`), and the next reuses a list where
the folder's inode and ctime are still the ones it was read at. The kernel stamps the ctime
of a folder with every name made, removed or renamed in it and every change of its own mode
or owner, and no user can set it back; a list is kept only where that stamp is `SETTLED_NS`
older than the read, so no change made in the same tick of the clock as the read is missed.
A folder's mode is read afresh every time: a folder made writable by every user since is
found however long it stood unchanged before.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from evalward.runtime.isolation.leftovers import DEPTH

MOUNTS = Path("/proc/self/mountinfo")
AGENTS_PLACE = Path("/var/lib/evalward")
"""Where, with a user switch, each job's folder of copies, homes and environments is made
(`sandbox.placed`): every folder above it only root may write, so nothing an agent user writes
is above a program a base runs. Its folders are root's or one agent user's, so the walk does
not go in: a job's environments alone are thousands of folders every user may enter."""
KERNEL_INTERFACES = frozenset(
    {
        "proc",
        "sysfs",
        "cgroup",
        "cgroup2",
        "devpts",
        "securityfs",
        "debugfs",
        "tracefs",
        "bpf",
        "pstore",
        "configfs",
        "fusectl",
        "binfmt_misc",
        "autofs",
        "nsfs",
        "efivarfs",
        "selinuxfs",
        "rpc_pipefs",
    }
)
"""File systems where no user makes files of its own."""
COUNTS_SUBFOLDERS = frozenset({"ext2", "ext3", "ext4", "xfs", "tmpfs"})
"""File systems where a folder's link count is 2 plus its subfolders: a folder of 2 links
holds no folder, and is not read (the walk's leaves, most of its folders, cost a system
call, not four). Others (btrfs, an overlay's merged folder: 1 link) are read."""
WALK_BOUND = 200_000
"""The folders one search enters at most, over every mount."""
ALWAYS = (
    Path("/tmp"),  # noqa: S108
    Path("/var/tmp"),  # noqa: S108
    Path("/dev/shm"),  # noqa: S108
    Path("/dev/mqueue"),
    Path("/run/lock"),
)
"""Swept however the search went (where they exist)."""
NOT_SWEPT = -1
"""The depth in the walk of a folder no place's sweep enters."""
KEPT = AGENTS_PLACE / ".shared-places"
"""Where each walk keeps the folders it read for the next (`find`'s `kept`)."""
SETTLED_NS = 2_000_000_000
"""How much older than its read a folder's ctime is for its list to be kept."""
KEPT_VERSION = 1
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
Listings = dict[bytes, tuple[int, int, int, tuple[bytes, ...]]]
"""Each folder a walk read: its device, inode and ctime then, and the folders it held."""


@dataclass(frozen=True)
class Places:
    """The folders any user may write, and whether the search saw every folder."""

    folders: tuple[Path, ...]
    complete: bool = True


def find(
    mounts: Path = MOUNTS,
    bound: int = WALK_BOUND,
    kept: Path | None = None,
    settled_ns: int = SETTLED_NS,
) -> Places:
    """Every folder of a writable mount that every user may write and reach, but those the
    sweep of another reaches (below it through folders every user may write, at most
    `leftovers.DEPTH` deep); sorted. With `kept` (`KEPT`), what a walk before read of a
    folder unchanged since is not read again, and what this one read is kept there."""
    found: set[bytes] = set()
    budget = [bound]
    boot = _boot() if kept is not None else b""
    before = _kept(kept, boot) if kept is not None else {}
    walk = _Walk(found, budget, before, {}, time.time_ns() - settled_ns)
    for point, kind in _writable_mounts(mounts):
        walk.mount(os.fsencode(point), stamped=kind in COUNTS_SUBFOLDERS)
    if kept is not None and walk.read != before:
        _keep(kept, walk.read, boot)
    places = {Path(os.fsdecode(folder)) for folder in found}
    places.update(place for place in ALWAYS if place.is_dir() and not place.is_symlink())
    return Places(tuple(sorted(places)), complete=budget[0] > 0)


def _writable_mounts(mounts: Path) -> list[tuple[Path, str]]:
    """The mount points of the writable mounts that are not kernel interfaces, and their
    file systems' types."""
    try:
        lines = mounts.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    points: dict[Path, str] = {}
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, kinds = left.split(), right.split()
        if len(fields) < 6 or not kinds:
            continue
        options = fields[5].split(",")
        if kinds[0] in KERNEL_INTERFACES or "ro" in options:
            continue
        points[Path(unescaped(fields[4]))] = kinds[0]
    return list(points.items())


@dataclass
class _Walk:
    """One search over the mounts: the places `found`, the folders it may still enter
    (`budget`), the folders walks before read (`before`) and the ones it read (`read`)."""

    found: set[bytes]
    budget: list[int]
    before: Listings
    read: Listings
    settled: int
    """A folder whose ctime is older than this (ns) has its list kept."""

    def mount(self, point: bytes, *, stamped: bool) -> None:
        """The folders every user may write under `point`, on its mount alone, but those the
        sweep of one found reaches. Folders are held as bytes, not Paths: a job walks tens
        of thousands of them before its first turn (`stamped`: the file system counts a
        folder's subfolders in its links, so a folder of 2 links holds none, and stamps
        every change of a folder on its ctime, so a folder's list is kept; `COUNTS_SUBFOLDERS`)."""
        try:
            top = os.lstat(point)
        except OSError:
            return
        if not stat.S_ISDIR(top.st_mode):
            return
        pending = [(point, NOT_SWEPT)]  # each folder, and how deep the sweep of a place is there
        own = os.fsencode(AGENTS_PLACE)
        while pending and self.budget[0] > 0:
            folder, above = pending.pop()
            if folder == own:
                continue
            self.budget[0] -= 1
            try:
                info = os.lstat(folder)
            except OSError:
                continue
            if info.st_dev != top.st_dev:
                continue  # another mount: walked from its own point
            depth = NOT_SWEPT
            if info.st_mode & stat.S_IWOTH:
                if NOT_SWEPT < above < DEPTH:
                    depth = above + 1  # the sweep of the place above goes in
                else:
                    self.found.add(folder)
                    depth = 0
            if not info.st_mode & stat.S_IXOTH:
                continue  # no user but its owner and group enters it
            if stamped and info.st_nlink == 2:
                continue  # no folder inside
            names = self._held(folder, info) if stamped else _folders_in(folder)
            if names:
                inside = folder if folder.endswith(b"/") else folder + b"/"
                pending += [(inside + name, depth) for name in names]

    def _held(self, folder: bytes, info: os.stat_result) -> tuple[bytes, ...] | None:
        """The folders `folder` holds: as a walk before read them where it has not changed
        since, else read now (and kept, where it has not changed for a while)."""
        stamp = (info.st_dev, info.st_ino, info.st_ctime_ns)
        known = self.before.get(folder)
        if known is not None and known[:3] == stamp:
            self.read[folder] = known
            return known[3]
        names = _folders_in(folder)
        if names is not None and info.st_ctime_ns < self.settled:
            self.read[folder] = (*stamp, names)
        return names


def _folders_in(folder: bytes) -> tuple[bytes, ...] | None:
    """The names of the folders `folder` holds (not links to one); None where it cannot be
    read."""
    try:
        with os.scandir(folder) as entries:
            return tuple(entry.name for entry in entries if entry.is_dir(follow_symlinks=False))
    except OSError:
        return None


def _kept(path: Path, boot: bytes) -> Listings:
    """What walks before kept at `path`; nothing where it is missing, unreadable, of another
    version or `boot`, or could be anyone's but evalward's own user's (a file of another
    owner or mode, in a folder others may write)."""
    try:
        folder = os.lstat(path.parent)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not (stat.S_ISREG(info.st_mode) and _own(info, 0o077)):
            return {}
        if not _own(folder, stat.S_IWGRP | stat.S_IWOTH):
            return {}
        try:
            # marshal builds values, never code, and only evalward's own user wrote this
            version, kept_at, listings = marshal.loads(file.read())  # noqa: S302
        except (OSError, EOFError, ValueError, TypeError):
            return {}
    if (version, kept_at) != (KEPT_VERSION, boot) or not isinstance(listings, dict):
        return {}
    return listings


def _keep(path: Path, listings: Listings, boot: bytes) -> None:
    """Keep `listings` at `path` for the next walk of this `boot`, whole or not at all; a
    folder it cannot be written in costs the next walk its time, nothing else."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}")
    try:
        if not _own(os.lstat(path.parent), stat.S_IWGRP | stat.S_IWOTH):
            return  # it would not be read
        fd = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        with os.fdopen(fd, "wb") as file:
            file.write(marshal.dumps((KEPT_VERSION, boot, listings)))
        temporary.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()


def _own(info: os.stat_result, others: int) -> bool:
    """Whether evalward's own user owns what `info` is and no one else may change it."""
    return info.st_uid == os.geteuid() and not info.st_mode & others


def _boot() -> bytes:
    """This boot of the machine: a tmpfs's inodes start again at each."""
    try:
        return BOOT_ID.read_bytes().strip()
    except OSError:
        return b""


def unescaped(field: str) -> str:
    """A mountinfo path: spaces, tabs, newlines and backslashes are octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field
