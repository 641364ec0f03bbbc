"""A path a definition names, from the repository root, that stays inside the repository
(resources/paths.py says the rule). Here, beneath both the resources and the door to their
files (files/committed.py), so that neither imports the other to ask."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from evalward.errors import OutsideRepository


def repo_path(root: Path, reference: str, relative_to: str | Path = ".") -> Path:
    """`reference` relative to the folder `relative_to` (`/x`: from the root), resolved.

    Raises OutsideRepository when the resolved path leaves `root`.
    """
    real_root = root.resolve()
    base = real_root if reference.startswith("/") else real_root / relative_to
    try:
        candidate = (base / reference.lstrip("/")).resolve()
    except (OSError, RuntimeError):  # links that loop: the path as written, which reads as missing
        candidate = Path(os.path.normpath(base / reference.lstrip("/")))
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
