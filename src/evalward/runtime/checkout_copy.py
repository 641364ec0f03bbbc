"""A working copy of a checkout that holds only what a side's runs read (`stages/reach.py`),
so that an agent user's copy of a large repository costs what its agents name, not the
repository's size: what the base side's checkout holds, for the head's working tree."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from evalward.resources.paths import looked_up


def copy_reach(
    source: Path, target: Path, paths: Iterable[str], not_copied: frozenset[str]
) -> None:
    """Copy `paths` (relative to `source`) into `target`: a file; a folder whole; a symbolic
    link as a link, and what it leads to inside the checkout. The folders on the way are
    made, not copied. Special files and the `not_copied` paths are left out, as from a
    whole copy; a path the checkout lacks is left out, so reading it fails as it would."""
    target.mkdir(parents=True, exist_ok=True)
    real_source = source.resolve()
    for path in sorted(set(paths)):
        try:
            final = Path(os.path.realpath(source / path)).relative_to(real_source).as_posix()
        except ValueError:
            final = ""  # it leads out of the checkout: the links on the way are copied
        for part in sorted(looked_up(source, path)):
            if not _left_out(part, not_copied):
                _copy_one(source, target, part, part in (path, final), not_copied)
    open_to_reading(target)


def _left_out(part: str, not_copied: frozenset[str]) -> bool:
    pieces = part.split("/")
    return any("/".join(pieces[: depth + 1]) in not_copied for depth in range(len(pieces)))


def _copy_one(
    source: Path, target: Path, part: str, whole: bool, not_copied: frozenset[str]
) -> None:
    """Copy one path of the checkout: a folder whole only when it is `whole`."""
    here, there = source / part, target / part
    try:
        mode = here.lstat().st_mode
    except OSError:
        return  # not in the checkout
    if os.path.lexists(there) and not (whole and stat.S_ISDIR(mode)):
        return
    there.parent.mkdir(parents=True, exist_ok=True)
    if stat.S_ISLNK(mode):
        there.symlink_to(here.readlink())
    elif stat.S_ISREG(mode):
        shutil.copy2(here, there)
    elif stat.S_ISDIR(mode) and whole:

        def ignore(folder: str, names: list[str]) -> set[str]:
            inside = Path(folder).relative_to(source).as_posix()
            return {
                name
                for name in names
                if _special(Path(folder) / name) or _left_out(f"{inside}/{name}", not_copied)
            }

        shutil.copytree(here, there, symlinks=True, ignore=ignore, dirs_exist_ok=True)
    elif stat.S_ISDIR(mode):
        there.mkdir(exist_ok=True)


def _special(path: Path) -> bool:
    mode = path.lstat().st_mode
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def open_to_reading(tree: Path) -> None:
    """Make a copied tree readable by everyone and writable by nobody but its owner: folders
    0755, files 0644 (0755 when executable)."""
    for folder, _, files in os.walk(tree):
        Path(folder).chmod(0o755)
        for name in files:
            path = Path(folder) / name
            mode = path.lstat().st_mode
            if stat.S_ISREG(mode):
                path.chmod(0o644 | (0o111 if mode & 0o111 else 0))
