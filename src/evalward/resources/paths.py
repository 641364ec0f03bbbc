"""Every path a resource names stays inside the repository, `..` and symlinks included.

The agents under test come from the pull request's head, so a path in them is untrusted: a
`systemFile`, a file reference or a program to run must resolve (symlinks followed) to a
file under the repository root, or evalward could read or run anything on the runner.
"""

from __future__ import annotations

from pathlib import Path


class OutsideRepository(ValueError):
    """A path that resolves outside the repository."""


def repo_path(root: Path, reference: str, relative_to: str | Path = ".") -> Path:
    """`reference` relative to the folder `relative_to` (`/x`: from the root), resolved.

    Raises OutsideRepository when the resolved path leaves `root`.
    """
    real_root = root.resolve()
    base = real_root if reference.startswith("/") else real_root / relative_to
    candidate = (base / reference.lstrip("/")).resolve()
    if not candidate.is_relative_to(real_root):
        raise OutsideRepository(reference)
    return candidate


def program_path(root: Path, program: str) -> Path | None:
    """The program a command runs, when it is a path (else None: it is looked up on PATH).

    Programs run with the repository root as their working directory, so a relative path is
    relative to it. Raises OutsideRepository for a path that leaves the repository.
    """
    if "/" not in program:
        return None
    return repo_path(root, program)


def link_on_the_way(workspace: Path, folder: Path) -> Path | None:
    """The first symbolic link between `workspace` and `folder` (itself included), if any."""
    try:
        relative = folder.relative_to(workspace)
    except ValueError:
        return None  # outside the checkout: only the workflow puts it there
    location = workspace
    for part in relative.parts:
        location = location / part
        if location.is_symlink():
            return location
    return None
