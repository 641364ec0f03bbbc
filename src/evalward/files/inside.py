"""What stays inside the repository: the one place its containment rules live.

Every path a resource names stays inside the repository, `..` and symlinks included, and
every path is read the same way: from the repository root. The agents under test come from
the pull request's head, so a path in them is untrusted: a `systemFile`, a file reference or
a program to run must resolve (symlinks followed) to a file under the repository root, or
evalward could read or run anything on the runner.

One rule for an Agent's paths (`systemFile`, command programs, `watch` globs): relative to
the repository root, which is also the working directory of every program evalward starts;
a leading `/` says the same. A `systemFile` written the old way, relative to the file that
names it, is still found when nothing is at its root path, with a deprecation warning.
AgentV files keep AgentV's own rule (relative to the eval file, then each folder above it;
importers/agentv/convert.py). The rules live here, beneath both the resources and the door
to their files (files/committed.py), so that neither imports the other to ask.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import stat
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path

from evalward.errors import OutsideRepository
from evalward.git import MAX_LINK_HOPS

NAME_MAX = 255
"""The longest name of a file or folder Linux's file systems hold, in bytes."""


def overlong_name(path: str) -> str | None:
    """The first name of `path` longer than a file system holds (`NAME_MAX` bytes), else
    None. The machine refuses to look such a path up (ENAMETOOLONG), where a missing file is
    merely not there: a question about it (`Path.is_dir`) raises instead of answering."""
    return next((name for name in path.split("/") if len(os.fsencode(name)) > NAME_MAX), None)


def mode_of(path: Path) -> int | None:
    """The mode of what `path` names in the working tree, links followed; None when nothing
    can be found there: missing, a link that loops, a name holding a NUL, or one longer than
    the file system allows (`overlong_name`: `Path.is_dir` raises for that one)."""
    try:
        return path.stat().st_mode
    except (OSError, ValueError):
        return None


def repo_path(root: Path, reference: str, *, resolved: bool = False) -> Path:
    """`reference` from the root (`/x` too), resolved; OutsideRepository when it leaves `root`
    (`resolved`: `root` is already its own links followed, as a caller that asks of many
    paths keeps it)."""
    real_root = root if resolved else root.resolve()
    try:
        candidate = (real_root / reference.lstrip("/")).resolve()
    except (OSError, RuntimeError, ValueError):
        # links that loop, or a NUL (no file is named with one): the path as written, which
        # reads as missing
        candidate = Path(os.path.normpath(real_root / reference.lstrip("/")))
    if not candidate.is_relative_to(real_root):
        raise OutsideRepository(reference)
    return candidate


def reference_candidates(defined_in: str, reference: str) -> list[str]:
    """The repository paths an Agent's file reference may mean, the rule's first: from the
    root, then (deprecated) relative to `defined_in`, the resource file that names it."""
    from_root = posixpath.normpath(reference.lstrip("/"))
    folder = posixpath.dirname(defined_in)
    if reference.startswith("/") or not folder:
        return [from_root]
    legacy = posixpath.normpath(posixpath.join(folder, reference))
    return [from_root] if legacy == from_root else [from_root, legacy]


def leads_outside(root: Path, path: Path) -> bool:
    """Whether `path`, symbolic links followed, leaves `root`. Links that loop lead nowhere,
    so not outside: reading them fails as reading a missing file does."""
    try:
        return not path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return False


def program_path(root: Path, program: str) -> Path | None:
    """The program a command runs, when it is a path (else None: it is looked up on PATH).

    Programs run with the repository root as their working directory, so a relative path is
    relative to it. Raises OutsideRepository for a path that leaves the repository.
    """
    if "/" not in program:
        return None
    return repo_path(root, program)


def _on_the_way(workspace: Path, folder: Path) -> Iterator[Path]:
    """Each path between `workspace` and `folder` (itself included), from the top down."""
    try:
        relative = folder.relative_to(workspace)
    except ValueError:
        return  # outside the checkout: only the workflow puts it there
    location = workspace
    for part in relative.parts:
        location = location / part
        yield location


def link_on_the_way(workspace: Path, folder: Path) -> Path | None:
    """The first symbolic link between `workspace` and `folder` (itself included), if any."""
    return next((path for path in _on_the_way(workspace, folder) if path.is_symlink()), None)


def file_on_the_way(workspace: Path, folder: Path) -> Path | None:
    """The first path between `workspace` and `folder` (itself included) that exists and is
    not a folder: a file, a FIFO or a device a commit put where evalward needs a folder."""
    for location in _on_the_way(workspace, folder):
        try:
            mode = location.lstat().st_mode
        except FileNotFoundError:
            return None
        except OSError:
            return location
        if not (stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            return location
    return None


def looked_up(root: Path, relative: str) -> set[str]:
    """Every repository path that reading `relative` (from the root) depends on: the path
    and each folder on its way, and for every symbolic link met, the link itself and where
    it leads, followed the same way. A change to any of them can change what is read, though
    `relative` itself is unchanged; a result reused across commits must key on all of them.
    A link that leaves the repository ends the walk (such a read is refused anyway); one
    that leads back into it by an absolute path is followed."""
    return _walk(root, relative)[0]


def links_met(root: Path, relative: str) -> list[tuple[str, str]]:
    """Each symbolic link reading `relative` goes through, in order, with its target as
    written (`looked_up`'s walk): where a link leads, also out of the repository, which no
    hash of the repository's files shows."""
    return _walk(root, relative)[1]


def leaves_repository(root: Path, path: Path) -> bool:
    """Whether `path`, under `root`, leads out of the repository through its symbolic links,
    each read as it is written and followed only while it stays inside (`looked_up`'s walk):
    decided by the links alone, nothing outside the repository looked at, so a commit's link
    to `/` says where it leads, never what is there. Links that loop lead nowhere, so not out."""
    for top in (root, root.resolve()):
        try:
            inner = path.relative_to(top)
        except ValueError:
            continue
        return _walk(root, inner.as_posix())[2]
    return True


def _walk(root: Path, relative: str) -> tuple[set[str], list[tuple[str, str]], bool]:
    """`looked_up`'s paths, `links_met`'s links, and whether the walk left the repository."""
    real_root = root.resolve()
    found: set[str] = set()
    links: list[tuple[str, str]] = []
    pending = [part for part in relative.split("/") if part not in ("", ".")]
    resolved: list[str] = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part == "..":
            if not resolved:
                return found, links, True
            resolved.pop()
            continue
        here = "/".join([*resolved, part])
        found.add(here)
        try:
            target = str((real_root / here).readlink())
        except OSError:  # not a link (or not there): a folder or the file itself
            resolved.append(part)
            continue
        links.append((here, target))
        hops += 1
        if hops > MAX_LINK_HOPS:
            break
        if target.startswith("/"):  # absolute: from the root, if it leads into the repository
            if not Path(target).is_relative_to(real_root):
                return found, links, True
            target = Path(target).relative_to(real_root).as_posix()
            resolved = []
        pending = [p for p in target.split("/") if p not in ("", ".")] + pending
    return found, links, False


WILDCARD = re.compile(r"[*?\[]")
"""What makes a glob (`fnmatch`'s) more than a literal path."""


@functools.lru_cache(maxsize=4096)
def literal_start(glob: str) -> str:
    """What a glob begins with before its first wildcard: every path it matches begins so.
    Kept per glob, as fnmatch keeps its compiled globs: it is asked for each path a `watch`
    is matched against (0.26 µs a split, 0.07 µs kept, beside fnmatch's 0.38 µs)."""
    return WILDCARD.split(glob, maxsplit=1)[0]


def glob_matches(path: str, glob: str) -> bool:
    """`fnmatch`, asked only of a path that begins with the glob's literal start: no other
    can match, and fnmatch compiles a glob of a few KiB in 16 ms (a pull request's `watch`
    may hold hundreds)."""
    return path.startswith(literal_start(glob)) and fnmatch(path, glob)


def watched_folders(patterns: list[str]) -> list[str]:
    """The folders a list of globs can match paths in: each glob's literal start, up to its
    last `/` ("" when the glob starts with a wildcard: the whole checkout). A glob without a
    wildcard is its own path; one through `..` matches nothing, and lists nothing."""
    folders: set[str] = set()
    for pattern in patterns:
        literal = literal_start(pattern)
        folder = literal if literal == pattern else literal.rpartition("/")[0]
        folder = folder.strip("/")
        if ".." not in folder.split("/"):  # a listed path never has one: it matches nothing
            folders.add(folder)
    return sorted(folders)
