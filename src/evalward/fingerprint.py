"""What an agent's behaviour depends on, for change detection and for the result cache.

An agent depends on its definition, on the files it names — `systemFile`, and the program
files in its tools' and runtime's command lines (an argument that looks like a path: it has a
`/` or a file extension and is not an option or a URL), the files its `environment` is built
from (with the lock files beside them) — and on every file its `watch` globs match, which is
how an agent declares the rest of its code.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from evalward.errors import GitError
from evalward.git import Git
from evalward.resources import Located
from evalward.resources.models import Agent
from evalward.resources.paths import reference_candidates


def referenced_files(located: Located[Agent]) -> list[str]:
    """Repository paths the agent's definition names (they may not exist)."""
    spec = located.resource.spec
    paths: list[str] = []
    if spec.system_file:
        # Both places the file may be read from (the root, or the deprecated rule's).
        paths += reference_candidates(located.file, spec.system_file)
    argv: list[str] = []
    for tool in spec.tools:
        if tool.command is not None:
            argv += tool.command.run
    if spec.runtime is not None:
        if spec.runtime.command is not None:
            argv += spec.runtime.command.run
        if spec.runtime.http is not None:
            argv += spec.runtime.http.start
    paths += [posixpath.normpath(a.removeprefix("./")) for a in argv if _looks_like_a_path(a)]
    if spec.environment is not None:
        paths += spec.environment.files()
    return sorted(set(paths))


def through_links(root: Path, path: str) -> set[str]:
    """`path` and, when it is a symbolic link (or runs through one) inside the repository,
    the repository path it leads to."""
    paths = {path}
    try:
        real_root = root.resolve()
        target = (root / path).resolve()
    except OSError:
        return paths
    if target.is_relative_to(real_root):
        paths.add(target.relative_to(real_root).as_posix())
    return paths


def _looks_like_a_path(argument: str) -> bool:
    if argument.startswith("-") or "://" in argument or "{" in argument:
        return False
    name = argument.rsplit("/", 1)[-1]
    return "/" in argument or ("." in name.strip(".") and not name.startswith("."))


class FileIndex:
    """The files of one checkout that `watch` globs match, listed once.

    Exactly the files change detection sees: what git tracks there (and, in a working tree,
    what it would add: untracked files that are not ignored), `node_modules/` or a committed
    `.venv/` included. A cache key that left out a path change detection counts would reuse a
    result from before that path changed. A folder git does not know (a copy of a commit's
    changed files) is listed whole, but for `.git`.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: list[str] | None = None

    def files(self) -> list[str]:
        if self._files is None:
            self._files = sorted(_listed_by_git(self.root) or _walked(self.root))
        return self._files

    def matching(self, patterns: list[str]) -> list[str]:
        return [path for path in self.files() if any(fnmatch(path, p) for p in patterns)]


def _listed_by_git(root: Path) -> list[str] | None:
    git = Git(root)
    try:
        if git.run("rev-parse", "--show-toplevel").strip() != str(root.resolve()):
            return None  # not a repository's root: a folder inside some other repository
        out = git.run("ls-files", "-z", "--cached", "--others", "--exclude-standard")
    except GitError:
        return None
    return sorted({name for name in out.split("\0") if name})


def _walked(root: Path) -> list[str]:
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        base = Path(dirpath).relative_to(root).as_posix()
        found += [name if base == "." else f"{base}/{name}" for name in filenames]
    return found


def agent_fingerprint(located: Located[Agent], index: FileIndex) -> dict[str, Any]:
    """The agent's definition and the content hash of every file it depends on."""
    paths = set(referenced_files(located)) | set(index.matching(located.resource.spec.watch))
    return {
        "agent": located.resource.metadata.name,
        "spec": located.resource.spec.model_dump(mode="json", by_alias=True),
        "files": {path: _content_hash(index.root, path) for path in sorted(paths)},
    }


def _content_hash(root: Path, path: str) -> str:
    """The file's hash; only regular files inside the repository are read (a link to
    `/dev/zero` or out of the checkout is named, not followed)."""
    try:
        target = (root / path).resolve()
        if not target.is_relative_to(root.resolve()):
            return "outside the repository"
        if not target.is_file():
            return "missing" if not target.exists() else "not a regular file"
        return hashlib.sha256(target.read_bytes()).hexdigest()
    except OSError:
        return "missing"
