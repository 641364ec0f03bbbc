"""What an agent's behaviour depends on, for change detection and for the result cache.

An agent depends on its definition, on the files it names — `systemFile`, and the program
files in its tools' and runtime's command lines (an argument that looks like a path: it has a
`/` or a file extension and is not an option or a URL) — and on every file its `watch` globs
match, which is how an agent declares the rest of its code.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from evalward.resources import Located
from evalward.resources.loader import DEFAULT_EXCLUDES
from evalward.resources.models import Agent


def resolve_reference(resource_file: str, reference: str) -> str:
    """A path referenced from a resource file, as a repository path (`/x` = from the root)."""
    if reference.startswith("/"):
        return posixpath.normpath(reference.lstrip("/"))
    return posixpath.normpath(posixpath.join(posixpath.dirname(resource_file), reference))


def referenced_files(located: Located[Agent]) -> list[str]:
    """Repository paths the agent's definition names (they may not exist)."""
    spec = located.resource.spec
    paths: list[str] = []
    if spec.system_file:
        paths.append(resolve_reference(located.file, spec.system_file))
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
    return sorted(set(paths))


def _looks_like_a_path(argument: str) -> bool:
    if argument.startswith("-") or "://" in argument or "{" in argument:
        return False
    name = argument.rsplit("/", 1)[-1]
    return "/" in argument or ("." in name.strip(".") and not name.startswith("."))


class FileIndex:
    """The files of one checkout, listed once, for `watch` globs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: list[str] | None = None

    def files(self) -> list[str]:
        if self._files is None:
            found: list[str] = []
            for dirpath, dirnames, filenames in os.walk(self.root):
                dirnames[:] = sorted(d for d in dirnames if d not in DEFAULT_EXCLUDES)
                base = Path(dirpath).relative_to(self.root).as_posix()
                found += [name if base == "." else f"{base}/{name}" for name in filenames]
            self._files = sorted(found)
        return self._files

    def matching(self, patterns: list[str]) -> list[str]:
        return [path for path in self.files() if any(fnmatch(path, p) for p in patterns)]


def agent_fingerprint(located: Located[Agent], index: FileIndex) -> dict[str, Any]:
    """The agent's definition and the content hash of every file it depends on."""
    paths = set(referenced_files(located)) | set(index.matching(located.resource.spec.watch))
    hashes: dict[str, str] = {}
    for path in sorted(paths):
        try:
            hashes[path] = hashlib.sha256((index.root / path).read_bytes()).hexdigest()
        except OSError:
            hashes[path] = "missing"
    return {
        "agent": located.resource.metadata.name,
        "spec": located.resource.spec.model_dump(mode="json", by_alias=True),
        "files": hashes,
    }
