"""Which files of a tree may hold resources: every `*.yaml` / `*.yml` under the configured
roots, less the built-in excludes and `evalward.yaml`'s `exclude` globs.

More paths are found so that the load can refuse them rather than pass over them: a name
that ends `.YAML` or `.Yml` (evalward reads only the lower-case suffixes), a `*.json` file
(refused when its first bytes declare an evalward resource), and a symbolic link
to a folder that the walk would not read otherwise (git holds a link as a link, so the files
it leads to are no files of the commit under that path), which the load refuses when a file
under it is evalward's (on a commit side a link out of the repository is judged by the link
alone, and nothing under it is looked at: definitions/loader.py)."""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from evalward.errors import TreeError
from evalward.files.trees import TreeBounds, walk
from evalward.resources.reading.repo_config import CONFIG_FILE, RepoConfig

DEFAULT_EXCLUDES = frozenset(
    {
        ".git",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".evalward",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "site-packages",
    }
)


YAML_SUFFIXES = (".yaml", ".yml")
"""The names of the files evalward reads resources from, as they must end: in lower case."""
JSON_SUFFIX = ".json"
"""A file named so is never read as definitions; `discover` finds it only for the load to
refuse one that declares an evalward resource (JSON is YAML: a user may well have written
one), having looked at its first bytes alone."""


def is_json(path: Path) -> bool:
    """Whether `path` is named as a JSON file (in any case), which `discover` yields only to
    be refused when it declares a resource of ours."""
    return path.name.lower().endswith(JSON_SUFFIX)


def discover(root: Path, config: RepoConfig) -> Iterator[Path]:
    """Every `*.yaml` / `*.yml` under the configured roots, minus the excludes; and each
    file whose suffix is those in other case, each `*.json` file (`is_json`), and each link
    to a folder not read at its own path (`unread_link`), for the load to refuse."""
    excludes = config.exclude
    starts = _starts(root, config)
    seen: set[Path] = set()
    for start in starts:
        for dirpath, dirnames, filenames in os.walk(start):
            base = Path(dirpath)
            dirnames[:] = sorted(
                d
                for d in dirnames
                if d not in DEFAULT_EXCLUDES and not excluded(base / d, root, excludes)
            )
            for name in dirnames:
                if unread_link(base / name, root, starts, excludes) and base / name not in seen:
                    seen.add(base / name)
                    yield base / name
            # Only a YAML file's name becomes a Path: the other files of a large repository
            # cost one string test each.
            for name in filenames:
                if not name.endswith(YAML_SUFFIXES) and not name.lower().endswith(
                    (*YAML_SUFFIXES, JSON_SUFFIX)
                ):
                    continue
                path = base / name
                if path in seen or (base == root and name == CONFIG_FILE):
                    continue
                if not excluded(path, root, excludes):
                    seen.add(path)
                    yield path


def _starts(root: Path, config: RepoConfig) -> list[Path]:
    """The folders the roots name, links resolved, that are inside the repository (the load
    reports the others)."""
    starts: list[Path] = []
    for sub in config.roots:
        try:
            start = (root / sub).resolve() if sub != "." else root
            if start.resolve().is_relative_to(root.resolve()):
                starts.append(start)
        except (OSError, RuntimeError):
            continue  # links that loop: reported by the load
    return starts


@dataclass(frozen=True)
class UnreadLink:
    """Why the folder a symbolic link leads to (`target`, resolved) is read at no path of its
    own: it is `outside` the repository, under no root (`rootless`), or `excluded`, by the
    `exclude` glob or built-in exclude `by` (`builtin` for one of `DEFAULT_EXCLUDES`)."""

    target: Path
    reason: Literal["outside", "rootless", "excluded"]
    by: str = ""
    builtin: bool = False


def unread_link(path: Path, root: Path, starts: list[Path], excludes: list[str]) -> bool:
    """Whether `path` is a symbolic link to a folder whose files the walk reads at no path of
    their own (`why_unread_link`)."""
    return why_unread_link(path, root, starts, excludes) is not None


def unread_link_in(path: Path, root: Path, config: RepoConfig) -> UnreadLink | None:
    """`why_unread_link` under `config`'s roots and excludes."""
    return why_unread_link(path, root, _starts(root, config), config.exclude)


def why_unread_link(
    path: Path, root: Path, starts: list[Path], excludes: list[str]
) -> UnreadLink | None:
    """Why `path`, a symbolic link to a folder, leads to files the walk reads at no path of
    their own; None when it is no such link. A link to a folder the roots hold anyway adds
    nothing, and is no loss."""
    if not path.is_symlink():
        return None
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None  # leads nowhere: os.walk lists it as a file, not a folder
    if not target.is_dir():
        return None
    real_root = root.resolve()
    if not target.is_relative_to(real_root):
        return UnreadLink(target, "outside")
    under = [start.resolve() for start in starts if target.is_relative_to(start.resolve())]
    if not under:
        return UnreadLink(target, "rootless")
    inside = target.relative_to(real_root)
    walked = [real_root / Path(*inside.parts[:n]) for n in range(1, len(inside.parts) + 1)]
    for folder in walked:
        if not any(folder.is_relative_to(start) and folder != start for start in under):
            continue
        if folder.name in DEFAULT_EXCLUDES:
            return UnreadLink(target, "excluded", folder.name, builtin=True)
        pattern = excluding(folder, real_root, excludes)
        if pattern is not None:
            return UnreadLink(target, "excluded", pattern)
    return None


LINKED_WALK = TreeBounds(depth=128, entries=20_000, seconds=10.0)
"""How far the look under a linked folder goes (on a commit too, as git lists it): 128
folders deep, the first 20,000 entries it meets (counted as each folder is read, so a folder
of millions is not listed whole) and 10 seconds. A link to `/` is not walked whole. The look
only decides whether to say that the folder holds resources no one reads: a folder of
evalward's resources fits, and a larger one is what `roots` and `exclude` are for."""


def yaml_files_under(folder: Path, most: int) -> Iterator[Path]:
    """At most `most` files under `folder` named as YAML (in any case), parents first in
    name order, less the built-in excludes' folders, within `LINKED_WALK` (files/trees.py's
    walk: a folder swapped for a link leads nowhere); no link under it is followed to a
    folder, so no walk loops through one, nor leaves for `/proc`."""
    count = 0
    try:
        for entry in walk(folder, LINKED_WALK, leave_out=_builtin_excluded):
            if entry.is_folder or not entry.name.lower().endswith(YAML_SUFFIXES):
                continue
            if count >= most:
                return
            count += 1
            yield folder / entry.path
    except TreeError:
        return  # past the bounds: what was found is all the look finds


def _builtin_excluded(path: str, mode: int) -> bool:
    """Whether a walk's entry is a folder of `DEFAULT_EXCLUDES`, which it does not enter."""
    return stat.S_ISDIR(mode) and path.rpartition("/")[2] in DEFAULT_EXCLUDES


def under_builtin_exclude(path: str) -> bool:
    """Whether `path` (a file's, `/`-separated) lies in a folder of `DEFAULT_EXCLUDES`: what
    `yaml_files_under` never enters, asked of a commit's list of files."""
    return any(part in DEFAULT_EXCLUDES for part in path.split("/")[:-1])


def excluded(path: Path, root: Path, patterns: list[str]) -> bool:
    return excluding(path, root, patterns) is not None


def excluding(path: Path, root: Path, patterns: list[str]) -> str | None:
    """The first of `exclude`'s globs (`patterns`) that leaves `path` out, else None."""
    if not patterns:
        return None
    rel = relative(path, root)
    return next(
        (
            p
            for p in patterns
            if fnmatch.fnmatchcase(rel, p)
            or fnmatch.fnmatchcase(path.name, p)
            or rel.startswith(p + "/")
        ),
        None,
    )


def relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()
