"""Folders someone else filled: an agent's playground, HOME and TMPDIR, a checkout's copy.

Whoever filled them chose their shape: folders nested past any recursion limit (Python's
`shutil.rmtree` and `os.fwalk` recurse, so a few thousand levels end the process), folders
that may not be entered or written, links to `/`, FIFOs and sockets, and more entries than
there is time to read. So every walk here is iterative, works on descriptors (each name is
opened in the folder evalward already holds, never through a link: a folder swapped for a
link on the way leads nowhere) and stops at its bounds (`TreeBounds`: depth, entries, time)
with a `TreeError` that says where. `remove_tree` keeps at most OPEN_FOLDERS folders open:
a folder deeper than that is moved up to the tree's top and removed from there; one it may
not enter or empty (a user without root: the tree's owner, who may change its mode) is
opened up first.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from evalward.errors import TreeError
from evalward.files.safe_files import OPEN_SAFELY
from evalward.text.escaping import printable

FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
OPEN_FOLDERS = 64
"""Folders `remove_tree` keeps open at once; deeper ones are moved up to the top."""


@dataclass(frozen=True)
class TreeBounds:
    depth: int = 128
    """Folders deep that `walk` and `copy_tree` go (the top is depth 0)."""
    entries: int = 1_000_000
    """Entries at most, counted as they are met (a removal counts each it removes)."""
    seconds: float = 120.0


REMOVAL = TreeBounds()
"""What an agent may leave in a run and have removed: a million entries, two minutes."""


@dataclass(frozen=True)
class Entry:
    path: str
    """Its path from the top, `/`-separated."""
    name: str
    folder_fd: int
    """The descriptor of the folder it is in: valid until the walk goes on."""
    mode: int
    """Its `st_mode`, not following a link."""
    depth: int
    problem: str = ""
    """Why a folder could not be opened (its entries are then not walked)."""

    @property
    def is_folder(self) -> bool:
        return stat.S_ISDIR(self.mode)


@dataclass
class _Budget:
    bounds: TreeBounds
    what: str
    seen: int = 0
    deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.bounds.seconds

    def count(self, where: str) -> None:
        self.seen += 1
        if self.seen > self.bounds.entries:
            raise TreeError(f"{self.what} holds more than {self.bounds.entries:,} entries")
        if self.seen % 256 == 0 and time.monotonic() > self.deadline:
            raise TreeError(
                f"{self.what} took more than {self.bounds.seconds:g} s (at {shown(where)})"
            )


def shown(path: str, limit: int = 120) -> str:
    """A path as a message shows it (`printable`: a name's bytes that are not UTF-8 as
    `\\xNN`), its start and end when it is long."""
    path = printable(path)
    return path if len(path) <= limit else f"{path[:40]}…{path[-(limit - 41) :]}"


def _names(fd: int, budget: _Budget, where: str) -> list[tuple[str, int]]:
    """A folder's entries (name, `st_mode`) in name order, counted against the budget."""
    found = []
    with os.scandir(fd) as entries:
        for entry in entries:
            budget.count(f"{where}/{entry.name}" if where else entry.name)
            with contextlib.suppress(FileNotFoundError):  # gone since it was listed
                found.append((entry.name, entry.stat(follow_symlinks=False).st_mode))
    return sorted(found)


def walk(
    top: Path,
    bounds: TreeBounds,
    what: str = "the folder",
    leave_out: Callable[[str, int], bool] | None = None,
) -> Iterator[Entry]:
    """Every entry under `top` (not `top` itself), parents first, in name order, but what
    `leave_out(path, mode)` names (a folder left out is not entered). TreeError past
    `bounds.depth` folders, `bounds.entries` entries or `bounds.seconds`; `what` names the
    tree in its message."""
    budget = _Budget(bounds, what)
    frames: list[tuple[int, str, Iterator[tuple[str, int]], int]] = []
    try:
        fd = os.open(top, FOLDER)
        frames.append((fd, "", iter(_names(fd, budget, "")), 1))
        while frames:
            fd, where, names, depth = frames[-1]
            following = next(names, None)
            if following is None:
                os.close(fd)
                frames.pop()
                continue
            name, mode = following
            path = f"{where}/{name}" if where else name
            if leave_out is not None and leave_out(path, mode):
                continue
            if not stat.S_ISDIR(mode):
                yield Entry(path, name, fd, mode, depth)
                continue
            if depth > bounds.depth:
                raise TreeError(
                    f"{what} nests deeper than {bounds.depth} folders (at {shown(path)})"
                )
            try:
                inner = os.open(name, FOLDER, dir_fd=fd)
            except OSError as exc:
                yield Entry(path, name, fd, mode, depth, exc.strerror or str(exc))
                continue
            yield Entry(path, name, fd, mode, depth)
            frames.append((inner, path, iter(_names(inner, budget, path)), depth + 1))
    finally:
        for fd, *_ in frames:
            os.close(fd)


def copy_tree(
    source: Path,
    target: Path,
    bounds: TreeBounds,
    *,
    leave_out: Callable[[str, int], bool] | None = None,
    modes: Callable[[int], int] | None = None,
) -> None:
    """Copy the folders, regular files and links (as links) under `source` into `target`,
    which this makes; special files and what `leave_out(path, mode)` names are left out.
    Each copy gets `modes(st_mode)` as its permissions (default: the source's, without
    set-id bits), and a file its times. TreeError past `bounds`, OSError when the machine
    refuses."""
    permissions = modes or (lambda mode: stat.S_IMODE(mode) & 0o777)
    target.mkdir(mode=0o700)
    made: list[tuple[int, int]] = [(os.open(target, FOLDER), permissions(source.stat().st_mode))]
    try:
        for entry in walk(source, bounds, f"the folder {source}", leave_out):
            while len(made) > entry.depth:  # the folders it is not in are complete
                fd, mode = made.pop()
                _close_folder(fd, mode)
            into = made[-1][0]
            if entry.is_folder:
                if entry.problem:
                    raise TreeError(f"{entry.path} cannot be read: {entry.problem}")
                os.mkdir(entry.name, 0o700, dir_fd=into)
                made.append((os.open(entry.name, FOLDER, dir_fd=into), permissions(entry.mode)))
            elif stat.S_ISLNK(entry.mode):
                link = os.readlink(entry.name, dir_fd=entry.folder_fd)
                os.symlink(link, entry.name, dir_fd=into)
            elif stat.S_ISREG(entry.mode):
                _copy_file(entry, into, permissions(entry.mode))
    finally:
        for fd, mode in reversed(made):
            _close_folder(fd, mode)


def _close_folder(fd: int, mode: int) -> None:
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _copy_file(entry: Entry, into: int, mode: int) -> None:
    source = os.open(entry.name, OPEN_SAFELY, dir_fd=entry.folder_fd)
    try:
        info = os.fstat(source)
        if not stat.S_ISREG(info.st_mode):  # swapped since it was listed
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        copy = os.open(entry.name, flags, 0o600, dir_fd=into)
        try:
            while chunk := os.read(source, 1024 * 1024):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(copy, view) :]
            os.utime(copy, ns=(info.st_atime_ns, info.st_mtime_ns))
            os.fchmod(copy, mode)
        finally:
            os.close(copy)
    finally:
        os.close(source)


def remove_tree(path: Path, bounds: TreeBounds = REMOVAL) -> None:
    """Remove `path` and everything under it, following no link; nothing when it is gone.
    TreeError (saying where) when it cannot, or not within `bounds`."""
    what = str(path)
    budget = _Budget(bounds, what)
    try:
        parent = os.open(path.parent, FOLDER)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise TreeError(f"{what} cannot be removed: {exc.strerror or exc}") from None
    try:
        _remove_in(parent, path.name, budget)
    except OSError as exc:
        raise _failed(what, exc) from None
    finally:
        os.close(parent)


class Removal:
    """Removals that share one budget: what agent users left in many places (the folders
    every user shares), removed within one bound of entries and time."""

    def __init__(self, bounds: TreeBounds, what: str) -> None:
        self.budget = _Budget(bounds, what)
        """Counted across every removal, each named entry too; `what` names them all when
        it runs out."""

    def remove(self, parent: int, name: str, what: str) -> None:
        """Remove `name` from the folder `parent` (a descriptor) as `remove_tree` does;
        `what` names it in the TreeError when it cannot, or not within the budget."""
        self.budget.count(name)
        try:
            _remove_in(parent, name, self.budget)
        except OSError as exc:
            raise _failed(what, exc) from None


def _failed(what: str, exc: OSError) -> TreeError:
    where = f" ({shown(exc.filename)})" if isinstance(exc.filename, str) else ""
    return TreeError(f"{what} cannot be removed{where}: {exc.strerror or exc}")


@dataclass
class _Open:
    """A folder being emptied: its descriptor, its name in the folder below it on the
    stack, the scan of its entries, and whether that scan found any (then it scans again:
    what was moved up into it, or written meanwhile)."""

    fd: int
    name: str
    scan: Iterator[os.DirEntry[str]]
    found: bool = False


def _remove_in(parent: int, name: str, budget: _Budget) -> None:
    try:
        mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        _unlink(parent, name, is_folder=False)
        return
    top = _open_folder(parent, name)
    stack = [_Open(top, name, os.scandir(top))]
    moved = 0
    try:
        while stack:
            here = stack[-1]
            entry = next(here.scan, None)
            if entry is None:
                _close_scan(here.scan)
                if here.found:
                    here.scan, here.found = os.scandir(here.fd), False
                    continue
                os.close(here.fd)
                stack.pop()
                _unlink(stack[-1].fd if stack else parent, here.name, is_folder=True)
                continue
            here.found = True
            budget.count(entry.name)
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if not is_folder:
                _unlink(here.fd, entry.name, is_folder=False)
            elif len(stack) < OPEN_FOLDERS:
                inner = _open_folder(here.fd, entry.name)
                stack.append(_Open(inner, entry.name, os.scandir(inner)))
            else:
                moved = _move_up(here.fd, entry.name, top, moved)
    finally:
        for frame in stack:
            _close_scan(frame.scan)
            os.close(frame.fd)


def _close_scan(scan: Iterator[os.DirEntry[str]]) -> None:
    close = getattr(scan, "close", None)
    if close is not None:
        close()


def _open_folder(parent: int, name: str) -> int:
    """A folder's descriptor; one its owner closed (mode 0) is opened up first."""
    try:
        return os.open(name, FOLDER, dir_fd=parent)
    except PermissionError:
        _open_up(parent, name)
        return os.open(name, FOLDER, dir_fd=parent)


def _open_up(parent: int, name: str) -> None:
    """Give the owner every permission on a folder, found without following a link."""
    handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    try:
        Path(f"/proc/self/fd/{handle}").chmod(0o700)
    finally:
        os.close(handle)


def _unlink(folder: int, name: str, *, is_folder: bool) -> None:
    """Remove one name from a folder; a folder its owner made read-only is opened up."""
    remove = os.rmdir if is_folder else os.unlink
    try:
        remove(name, dir_fd=folder)
    except FileNotFoundError:
        pass
    except PermissionError:
        os.fchmod(folder, 0o700)
        remove(name, dir_fd=folder)


def _move_up(folder: int, name: str, top: int, moved: int) -> int:
    """Move a folder too deep to open from `folder` to the top of the tree, under a name of
    its own there; returns the count of folders moved so far."""
    opened_up = False
    while True:
        moved += 1
        try:
            os.rename(name, f".evalward-deep-{moved}", src_dir_fd=folder, dst_dir_fd=top)
            return moved
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                continue  # the name is taken: the next one
            if exc.errno != errno.EACCES or opened_up:
                raise
        os.fchmod(folder, 0o700)  # a user without root moves what its owner closed
        _open_up(folder, name)
        opened_up = True
