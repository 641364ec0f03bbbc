"""What git would commit of a working tree, asked of git as few times as a run allows.

The door (files/committed.py) refuses a working tree's file git would not commit: one it
ignores and does not track. A run asks that of every file its definitions name (each
`systemFile`, program, environment file, seed), often twice; asking git path by path costs
a process that reads the whole index each time (200 of them for 100 agents). So one
`WorkingTreeAnswers` per side reads the index once (`git ls-files -z --cached`: what is
tracked is committable, whatever `.gitignore` says) and asks git only about the paths the
index does not hold, many in one call (`Git.committable`, whose rule it keeps exactly:
tracked, or untracked and not ignored). Its answers hold for the run: the working tree is
the user's own, read as the run starts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from evalward.git import Git


class WorkingTreeAnswers:
    """`Git.committable` and `Git.ignored` for one working tree, each path asked once."""

    def __init__(self, git: Git) -> None:
        self._git = git
        self._tracked: frozenset[bytes] | None = None
        self._untracked: dict[str, bool] = {}
        self._ignored: set[str] | None = None

    def committable(self, paths: Iterable[str]) -> set[str]:
        """Which of `paths` (repository paths of files) git tracks or would commit."""
        asked = list(dict.fromkeys(paths))
        if self._tracked is None:
            self._tracked = self._git.index_names()
        tracked = {p for p in asked if os.fsencode(p) in self._tracked}
        rest = [p for p in asked if p not in tracked and p not in self._untracked]
        if rest:
            found = self._git.committable(rest)
            self._untracked.update((p, p in found) for p in rest)
        return tracked | {p for p in asked if self._untracked.get(p, False)}

    def submodule_of(self, path: str) -> str | None:
        """The submodule of the index `path` lies in (its folder), if any: what its folder
        holds is another repository's, which no commit of this one holds."""
        first = path.split("/", 1)[0]
        gitlinks = self._git.index(first).gitlinks()
        return next((g for g in sorted(gitlinks) if path.startswith(f"{g}/")), None)

    def ignored(self) -> set[str]:
        """The untracked paths git ignores (`Git.ignored`), listed once."""
        if self._ignored is None:
            self._ignored = self._git.ignored()
        return self._ignored
