"""The sdist and the wheel of this checkout, built once per test session.

Two tests install evalward as users get it (the release test, and the docs' `pip install
evalward` block): they share one build. pytest-xdist's workers are separate processes, so
the first to ask builds into the session's shared folder under a lock, and the others wait
for it and take the same files; nothing installs from them in place."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalward import __version__

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Distributions:
    wheel: Path
    sdist: Path


def session_folder(factory: pytest.TempPathFactory) -> Path:
    """A folder every worker of this session sees (the parent of the workers' own)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built(folder: Path) -> Distributions:
    """The sdist and the wheel of this checkout in `folder/dist`, built by the first caller."""
    dist = folder / "dist"
    found = Distributions(
        wheel=dist / f"evalward-{__version__}-py3-none-any.whl",
        sdist=dist / f"evalward-{__version__}.tar.gz",
    )
    with (folder / "dist.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (dist / "built").exists():
            uv = Path(sys.executable).parent / "uv"
            subprocess.run(
                [uv, "build", "--sdist", "--wheel", "--out-dir", dist, "--quiet", ROOT],
                check=True,
                timeout=300,
            )
            (dist / "built").touch()
    return found
