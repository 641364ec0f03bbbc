"""Which files of a tree may hold resources: every `*.yaml` / `*.yml` under the configured
roots, less the built-in excludes and `evalward.yaml`'s `exclude` globs."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from pathlib import Path

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


def discover(root: Path, config: RepoConfig) -> Iterator[Path]:
    """Every `*.yaml` / `*.yml` under the configured roots, minus the excludes."""
    excludes = config.exclude
    seen: set[Path] = set()
    for sub in config.roots:
        try:
            start = (root / sub).resolve() if sub != "." else root
        except (OSError, RuntimeError):
            continue  # links that loop: reported by the load
        if not start.resolve().is_relative_to(root.resolve()):
            continue  # a link out of the repository: reported by the load
        for dirpath, dirnames, filenames in os.walk(start):
            base = Path(dirpath)
            dirnames[:] = sorted(
                d
                for d in dirnames
                if d not in DEFAULT_EXCLUDES and not excluded(base / d, root, excludes)
            )
            # Only a YAML file's name becomes a Path: the other files of a large repository
            # cost one string test each.
            for name in filenames:
                if not name.endswith((".yaml", ".yml")):
                    continue
                path = base / name
                if path in seen or (base == root and name == CONFIG_FILE):
                    continue
                if not excluded(path, root, excludes):
                    seen.add(path)
                    yield path


def excluded(path: Path, root: Path, patterns: list[str]) -> bool:
    if not patterns:
        return False
    rel = relative(path, root)
    return any(
        fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(path.name, p) or rel.startswith(p + "/")
        for p in patterns
    )


def relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()
