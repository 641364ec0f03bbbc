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
"""

from __future__ import annotations

import os
import stat
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


@dataclass(frozen=True)
class Places:
    """The folders any user may write, and whether the search saw every folder."""

    folders: tuple[Path, ...]
    complete: bool = True


def find(mounts: Path = MOUNTS, bound: int = WALK_BOUND) -> Places:
    """Every folder of a writable mount that every user may write and reach, but those the
    sweep of another reaches (below it through folders every user may write, at most
    `leftovers.DEPTH` deep); sorted."""
    found: set[bytes] = set()
    budget = [bound]
    for point, kind in _writable_mounts(mounts):
        _walk(os.fsencode(point), found, budget, leaves_known=kind in COUNTS_SUBFOLDERS)
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


def _walk(point: bytes, found: set[bytes], budget: list[int], *, leaves_known: bool) -> None:
    """The folders every user may write under `point`, on its mount alone, but those the
    sweep of one found reaches. Folders are held as bytes, not Paths: a job walks tens of
    thousands of them before its first turn (`leaves_known`: a folder of 2 links holds none,
    `COUNTS_SUBFOLDERS`)."""
    try:
        top = os.lstat(point)
    except OSError:
        return
    if not stat.S_ISDIR(top.st_mode):
        return
    pending = [(point, NOT_SWEPT)]  # each folder, and how deep the sweep of a place is there
    own = os.fsencode(AGENTS_PLACE)
    while pending and budget[0] > 0:
        folder, above = pending.pop()
        if folder == own:
            continue
        budget[0] -= 1
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
                found.add(folder)
                depth = 0
        if not info.st_mode & stat.S_IXOTH:
            continue  # no user but its owner and group enters it
        if leaves_known and info.st_nlink == 2:
            continue  # no folder inside
        try:
            with os.scandir(folder) as entries:
                pending += [
                    (entry.path, depth) for entry in entries if entry.is_dir(follow_symlinks=False)
                ]
        except OSError:
            continue


def unescaped(field: str) -> str:
    """A mountinfo path: spaces, tabs, newlines and backslashes are octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field
