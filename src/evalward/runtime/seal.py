"""Make an installed environment read-only to every agent user, before anything runs from it.

The installer ran as an agent user, with the pull request's code among what it ran (a
package's build, npm's lifecycle scripts), and may have left anything in its folder: a process
still writing, a hard link to a file it does not own, a symbolic link to a place it can still
change, a setuid bit. `seal` walks the folder through file descriptors, top down: each folder
is given to evalward and made read-only before its entries are listed, so nothing the
installer left behind can swap an entry after it was checked; each file is opened without
following links and checked on that descriptor (its owner must be the installer's user) before
it changes owner and mode. A file may be a hard link to one sealed before it in the same walk
(esbuild's installer links its binary into two packages). A link may point inside the
environment, or to a file that no agent user can change (the interpreter a virtualenv links
to); any other is refused.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from evalward.errors import AgentRunError

_OPEN_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def seal(top: Path, builder: int, owner: int) -> int:
    """Give every folder and file under `top` to `owner` (evalward's uid), readable and never
    writable, after checking that `builder` (the installer's uid) owns it; remove special files
    (fifos, sockets); refuse a link that leads out of `top` to something an agent user could
    change. Returns how many files it sealed. Raises AgentRunError naming what was refused."""
    fd = os.open(top, _OPEN_FOLDER)
    try:
        _take(fd, top, {builder, owner}, owner, 0o555)  # evalward may have taken it already
        return _seal_folder(fd, top, _Walk(top, builder, owner))
    finally:
        os.close(fd)


class _Walk:
    """One `seal`: where it started, whose files it takes, and the files it has sealed."""

    def __init__(self, top: Path, builder: int, owner: int) -> None:
        self.top = top
        self.builder = builder
        self.owner = owner
        self.sealed: set[tuple[int, int]] = set()


def _take(fd: int, shown: Path, allowed: set[int], owner: int, mode: int) -> os.stat_result:
    """Check the owner of what `fd` is (a hard link to someone else's file is refused, also
    one of evalward's own), then make it `owner`'s with `mode`."""
    info = os.fstat(fd)
    if info.st_uid not in allowed:
        raise AgentRunError(
            f"the installer left {shown}, which belongs to uid {info.st_uid}, not to the "
            "installer's user (a hard link to another user's file?)"
        )
    if info.st_uid != owner:
        os.fchown(fd, owner, -1)
    os.fchmod(fd, mode)
    return info


def _seal_folder(fd: int, path: Path, walk: _Walk) -> int:
    """Seal the entries of a folder already taken (so nothing in it can be swapped now)."""
    sealed = 0
    for name in sorted(os.listdir(fd)):
        child = path / name
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            _check_link(child, os.readlink(name, dir_fd=fd), walk.top)
        elif stat.S_ISDIR(info.st_mode):
            sub = os.open(name, _OPEN_FOLDER, dir_fd=fd)
            try:
                _take(sub, child, {walk.builder}, walk.owner, 0o555)
                sealed += _seal_folder(sub, child, walk)
            finally:
                os.close(sub)
        elif stat.S_ISREG(info.st_mode):
            sub = os.open(name, _OPEN_FILE, dir_fd=fd)
            try:
                sealed += _seal_file(sub, child, info, walk)
            finally:
                os.close(sub)
        else:
            os.unlink(name, dir_fd=fd)
    return sealed


def _seal_file(fd: int, child: Path, info: os.stat_result, walk: _Walk) -> int:
    """Seal one regular file; 0 when it is a hard link to a file this walk sealed already."""
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino) in walk.sealed and now.st_uid == walk.owner:
        return 0
    executable = info.st_mode & stat.S_IXUSR
    taken = _take(fd, child, {walk.builder}, walk.owner, 0o555 if executable else 0o444)
    if not stat.S_ISREG(taken.st_mode):
        raise AgentRunError(f"the installer changed {child} while it was sealed")
    walk.sealed.add((taken.st_dev, taken.st_ino))
    return 1


def _check_link(link: Path, target: str, top: Path) -> None:
    """A link inside `top` (by its text), or to a file no agent user can change."""
    lexical = Path(os.path.normpath(link.parent / target))
    if lexical.is_relative_to(top):
        return
    real = Path(os.path.realpath(lexical))
    if real.exists() and _unchangeable(real):
        return
    raise AgentRunError(
        f"the installer left the link {link.relative_to(top)} -> {target}, which leads out of "
        "the environment to a file an agent user could change or that does not exist"
    )


def _unchangeable(path: Path) -> bool:
    """Whether `path` and every folder above it belong to root and are writable by no one
    else: what an agent user cannot replace."""
    for step in (path, *path.parents):
        info = step.lstat()
        if info.st_uid != 0 or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
    return True
