"""Seal an installed environment: a copy no agent user can change, made before anything runs
from it.

The installer ran as an agent user, with the pull request's code among what it ran (a
package's build, npm's lifecycle scripts), and may have left anything in its folder: a process
holding a file open for writing, a hard link to a file it does not own, a chain of symbolic
links that leaves the environment, a setuid bit. `seal` does not make that folder read-only:
it copies it, through file descriptors and without following a link, into a new folder
evalward creates, so no descriptor opened before the seal reaches a file of the copy. Each
folder of the source is taken from the installer before its entries are listed (nothing can
be swapped while it is read), each file is checked on its descriptor (its owner must be the
installer's user, so a hard link to another user's file is refused), special files (FIFOs,
sockets, devices) are left out, and the copy is bounded in entries and bytes. Then each link
of the copy is resolved hop by hop, as the kernel would: every hop must stay in the copy, or
pass only through folders no agent user can change, to an existing file no agent user can
change (the interpreter a virtualenv links to). A file may be a hard link to another one of
the same environment (esbuild's installer links its binary into two packages): the copy
links them too.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from evalward.errors import AgentRunError, TreeError
from evalward.files.safe_files import OPEN_SAFELY
from evalward.files.trees import FOLDER, remove_tree

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 8 << 20
_MAX_HOPS = 40
"""Links followed to resolve one path before it counts as a loop (the kernel's own limit)."""

SealBudget = Callable[[int, int], None]
"""Called with the entries and bytes copied so far; raises to stop the seal."""


def seal(
    source: Path,
    target: Path,
    builders: set[int],
    owner: int,
    *,
    take: bool = True,
    budget: SealBudget | None = None,
) -> int:
    """Copy the folder `source` to `target` (created here, absent before) as `owner`'s and
    never writable: each file must belong to one of `builders`; `take` locks each folder of
    the source first (an installer's). Returns how many files it copied. AgentRunError names
    what was refused; `target` is then removed."""
    walk = _Walk(source, builders, owner, take, budget)
    fd = os.open(source, FOLDER)
    try:
        if take:
            _take(fd, source, builders | {owner}, owner)
        target.mkdir(mode=0o700)
        walk.target_fd = os.open(target, FOLDER)
        try:
            _copy_folder(fd, walk.target_fd, Path(), walk)
            os.fchmod(walk.target_fd, 0o555)
        finally:
            os.close(walk.target_fd)
        real = target.resolve()  # links are resolved to real paths: so is where they start
        for link in walk.links:
            check_link(real, link)
    except BaseException:
        with contextlib.suppress(TreeError):  # the partial copy, read-only however deep
            remove_tree(target)
        raise
    finally:
        os.close(fd)
    return walk.files


@dataclass
class _Walk:
    """One `seal`: where it reads and writes, whose files it takes, what it has copied."""

    source: Path
    builders: set[int]
    owner: int
    take: bool
    budget: SealBudget | None
    target_fd: int = -1
    copied: dict[tuple[int, int], str] = field(default_factory=dict)
    """Each file copied, by its source's (device, inode): its path in the copy."""
    links: list[Path] = field(default_factory=list)
    files: int = 0
    entries: int = 0
    bytes: int = 0

    def count(self, entries: int = 0, size: int = 0) -> None:
        self.entries += entries
        self.bytes += size
        if self.budget is not None:
            self.budget(self.entries, self.bytes)


def _take(fd: int, shown: Path, allowed: set[int], owner: int) -> None:
    """Lock a folder of the source: it becomes `owner`'s, closed to everyone else."""
    info = os.fstat(fd)
    if info.st_uid not in allowed:
        raise AgentRunError(f"the installer left {shown}, which belongs to uid {info.st_uid}")
    if info.st_uid != owner:
        os.fchown(fd, owner, -1)
    os.fchmod(fd, 0o500)


MAX_DEPTH = 256
"""Folders nested deeper than this in an environment are refused: the copy holds one
descriptor per level, and no installer nests so deep."""


def _copy_folder(fd: int, out: int, relative: Path, walk: _Walk) -> None:
    """Copy a folder's entries, and its folders' in turn, with a stack of its own (an
    installer may nest folders past any recursion limit): at most MAX_DEPTH deep."""
    stack: list[tuple[int, int, Path, list[str]]] = [(fd, out, relative, sorted(os.listdir(fd)))]
    try:
        while stack:
            here, made, where, names = stack[-1]
            if not names:
                stack.pop()
                if stack:  # a folder of the source, and its copy, complete
                    os.fchmod(made, 0o555)
                    os.close(made)
                    os.close(here)
                continue
            name = names.pop(0)
            child = where / name
            info = os.stat(name, dir_fd=here, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                walk.count(1)
                os.symlink(os.readlink(name, dir_fd=here), name, dir_fd=made)
                walk.links.append(child)
            elif stat.S_ISDIR(info.st_mode):
                walk.count(1)
                if len(stack) > MAX_DEPTH:
                    raise AgentRunError(
                        f"the installer nested folders more than {MAX_DEPTH} deep (at {child})"
                    )
                sub = os.open(name, FOLDER, dir_fd=here)
                try:
                    if walk.take:
                        _take(sub, walk.source / child, walk.builders, walk.owner)
                    os.mkdir(name, 0o700, dir_fd=made)
                    copy = os.open(name, FOLDER, dir_fd=made)
                except BaseException:
                    os.close(sub)
                    raise
                stack.append((sub, copy, child, sorted(os.listdir(sub))))  # noqa: PTH208
            elif stat.S_ISREG(info.st_mode):
                walk.count(1)
                sub = os.open(name, OPEN_SAFELY, dir_fd=here)
                try:
                    _copy_file(sub, name, made, child, walk)
                finally:
                    os.close(sub)
            # a FIFO, a socket or a device is left out
    finally:
        for here, made, _, _ in stack[1:]:  # the first pair is the caller's
            os.close(made)
            os.close(here)


def _copy_file(fd: int, name: str, out: int, child: Path, walk: _Walk) -> None:
    """Copy one regular file, with its modification time, or link it to its copy made earlier
    in this walk. The time is kept for Python: a `.pyc` is used only while its source has the
    time recorded in it, and no agent user may write a new one here, so a copy with new times
    would have every start of an agent compile its packages from source again."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise AgentRunError(f"the installer changed {child} while it was sealed")
    if info.st_uid not in walk.builders:
        raise AgentRunError(
            f"the installer left {child}, which belongs to uid {info.st_uid}, not to the "
            "installer's user (a hard link to another user's file?)"
        )
    earlier = walk.copied.get((info.st_dev, info.st_ino))
    if earlier is not None:
        os.link(earlier, name, src_dir_fd=walk.target_fd, dst_dir_fd=out)
        return
    made = os.open(name, _CREATE, 0o600, dir_fd=out)
    try:
        _copy_bytes(fd, made, walk)
        os.fchmod(made, 0o555 if info.st_mode & stat.S_IXUSR else 0o444)
        os.utime(made, ns=(info.st_atime_ns, info.st_mtime_ns))
    finally:
        os.close(made)
    walk.copied[(info.st_dev, info.st_ino)] = str(child)
    walk.files += 1


def _copy_bytes(fd: int, made: int, walk: _Walk) -> None:
    """All of `fd` into `made`, in the kernel where it can (copy_file_range), counted."""
    try:
        while copied := os.copy_file_range(fd, made, _CHUNK):
            walk.count(size=copied)
        return
    except OSError:  # not between these filesystems: through this process
        pass
    while chunk := os.read(fd, _CHUNK):
        walk.count(size=len(chunk))
        os.write(made, chunk)


def check_link(top: Path, link: Path) -> None:
    """Resolve the link `top/link` hop by hop; refuse (AgentRunError) one whose resolution
    passes through a folder outside `top` that an agent user could change, or ends outside
    `top` at a file that is missing or that an agent user could change."""
    text = str((top / link).readlink())  # normalised: no `//`, no `/./`
    where = (top / link).parent
    pending: list[list[str]] = [text.split("/")]  # a stack: the path left, then a link's
    hops = 0
    while pending:
        parts = pending.pop()
        if parts and parts[0] == "" and len(parts) > 1:
            where = Path("/")
        for index, part in enumerate(parts):
            if part in ("", "."):
                continue
            if part == "..":
                where = where.parent
                continue
            step = where / part
            if not step.is_relative_to(top) and not _unchangeable(where):
                _refuse(link, text, f"through {where}, which an agent user can change")
            try:
                info = os.lstat(step)
            except OSError:
                if step.is_relative_to(top):
                    return  # dangling inside the environment: it leads nowhere
                _refuse(link, text, f"to {step}, which does not exist")
            if stat.S_ISLNK(info.st_mode):
                hops += 1
                if hops > _MAX_HOPS:
                    _refuse(link, text, "in a loop")
                pending += [parts[index + 1 :], str(step.readlink()).split("/")]
                break
            where = step
    if not where.is_relative_to(top) and not _unchangeable(where):
        _refuse(link, text, f"to {where}, which an agent user can change")


def _refuse(link: Path, text: str, why: str) -> None:
    raise AgentRunError(
        f"the installer left the link {link} -> {text}, which leads out of the environment {why}"
    )


def _unchangeable(path: Path) -> bool:
    """Whether `path` and every folder above it belong to root and are writable by no one
    else: what an agent user cannot replace."""
    for step in (path, *path.parents):
        info = step.lstat()
        if info.st_uid != 0 or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
    return True
