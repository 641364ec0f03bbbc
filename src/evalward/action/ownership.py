"""Give the workspace back to its owner when the action ends.

A Docker action runs as root, and the workspace belongs to the runner's user. On a hosted
runner the machine is thrown away after the job; on a self-hosted one it is not, and the
files root left behind (the output and cache directories, git's index, the metadata of the
base worktree) make the next job's `actions/checkout` fail in `git clean`. So at the end of
every run, whatever ended it, what root owns there is handed back to the workspace's owner.

Only root changes owners, and only when the workspace belongs to another user. Only what
root owns changes hands; nothing is followed through a symbolic link (walked with directory
descriptors, so a link swapped in cannot redirect it), and a file with other hard links is
left alone: the link could name a file outside the workspace.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from evalward.files.inside import link_on_the_way

ROOT = 0


def hand_back(workspace: Path, written: Iterable[Path]) -> int:
    """Give the workspace's owner what root owns in `written` (the folders evalward wrote,
    with everything in them and the folders on the way from the workspace), in `.evalward`
    and in the git directory. Returns how many entries changed owner."""
    if os.geteuid() != ROOT:
        return 0
    try:
        owner = workspace.lstat()
    except OSError:
        return 0
    if owner.st_uid == ROOT or not stat.S_ISDIR(owner.st_mode):
        return 0
    changed = 0
    for folder in {*written, workspace / ".evalward", workspace / ".git"}:
        folder = Path(os.path.normpath(folder))
        if not folder.is_relative_to(workspace) or folder == workspace:
            continue
        if link_on_the_way(workspace, folder) is not None:
            continue
        relative = folder.relative_to(workspace)
        for parent in reversed(relative.parents[:-1]):  # the folders on the way, outermost first
            changed += _give(workspace / parent, owner.st_uid, owner.st_gid)
        changed += _give_tree(folder, owner.st_uid, owner.st_gid)
    return changed


def _give(path: Path, uid: int, gid: int) -> int:
    """One directory on the way to a folder evalward wrote (not what else it holds)."""
    with contextlib.suppress(OSError):
        found = path.lstat()
        if found.st_uid == ROOT and stat.S_ISDIR(found.st_mode):
            os.chown(path, uid, gid, follow_symlinks=False)
            return 1
    return 0


def _give_tree(top: Path, uid: int, gid: int) -> int:
    if not top.is_dir():
        return 0
    changed = 0
    with contextlib.suppress(OSError):
        for _path, _folders, names, folder_fd in os.fwalk(top, follow_symlinks=False):
            if os.fstat(folder_fd).st_uid == ROOT:
                os.fchown(folder_fd, uid, gid)
                changed += 1
            for name in names:  # files, and links; folders are given as the walk enters them
                with contextlib.suppress(OSError):
                    found = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
                    if _ours(found):
                        os.chown(name, uid, gid, dir_fd=folder_fd, follow_symlinks=False)
                        changed += 1
    return changed


def _ours(found: os.stat_result) -> bool:
    """A regular file root owns, with no other name that could lie outside the workspace."""
    return found.st_uid == ROOT and stat.S_ISREG(found.st_mode) and found.st_nlink == 1
