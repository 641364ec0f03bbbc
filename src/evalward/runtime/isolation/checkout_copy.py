"""An agent user's working copy of a checkout: only what a side's runs read
(`plan/reach.py`) where that is known, so that a copy of a large repository costs what its
agents name, not the repository's size (what the base side's checkout holds, for the head's
working tree); else the whole checkout.

A side that is a commit is written from that commit's tree (`copy_side`, `RepoFiles.write_copy`):
git's objects, with the modes git records (0644, 0755), so a file another workflow step left
in the workspace (private, git-ignored) is never in the copy, and no mode is widened. The
working tree (no head commit: the user's own code) is copied from disk without what git
ignores.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from evalward.files.committed import RepoFiles
from evalward.files.inside import looked_up
from evalward.files.trees import TreeBounds, copy_tree
from evalward.git import Git


def readable_by_all(mode: int) -> int:
    """A copy's permissions: readable by everyone, writable by nobody but its owner (folders
    and executables 0755, other files 0644)."""
    return 0o755 if stat.S_ISDIR(mode) or mode & 0o111 else 0o644


def copy_reach(
    source: Path,
    target: Path,
    paths: Iterable[str],
    not_copied: frozenset[str],
    bounds: TreeBounds,
) -> None:
    """Copy `paths` (relative to `source`) into `target`, as `copy_tree` copies (within
    `bounds`, links as links, special files and the `not_copied` paths left out): a file; a
    folder whole; a symbolic link, and what it leads to inside the checkout. The folders on
    the way are entered, not copied whole: a folder no path goes through is not read at all.
    A path the checkout lacks is left out, so reading it fails as it would."""
    real_source = source.resolve()
    on_the_way: set[str] = set()
    whole: set[str] = set()
    for path in set(paths):
        try:
            final = Path(os.path.realpath(source / path)).relative_to(real_source).as_posix()
        except ValueError:
            final = ""  # it leads out of the checkout: the links on the way are copied
        parts = looked_up(source, path)
        on_the_way |= parts
        whole |= parts & {path, final}

    def leave_out(path: str, _mode: int) -> bool:
        if path in not_copied:
            return True
        if path in on_the_way:
            return False
        pieces = path.split("/")
        return not any("/".join(pieces[:depth]) in whole for depth in range(1, len(pieces)))

    copy_tree(source, target, bounds, leave_out=leave_out, modes=readable_by_all)


def copy_side(
    files: RepoFiles,
    source: Path,
    target: Path,
    reads: Iterable[str] | None,
    not_copied: frozenset[str],
    bounds: TreeBounds,
    *,
    linked_from: Path | None = None,
) -> None:
    """The working copy of one side at `target`, as the module says: its `reads`
    (`copy_reach`), or all of it where they are not known; special files and the `not_copied`
    paths (relative to the checkout, `/`-separated) left out. A side that is a commit links
    what `linked_from` (another copy of it) holds rather than writing it again."""
    if files.git is not None and files.commit is not None:
        files.write_copy(target, reads, not_copied, bounds, linked_from=linked_from)
        return
    left_out = not_copied | (Git(source).ignored() if files.git is not None else set())
    if reads is not None:
        copy_reach(source, target, reads, left_out, bounds)
        return
    copy_tree(
        source, target, bounds, leave_out=lambda path, _: path in left_out, modes=readable_by_all
    )
