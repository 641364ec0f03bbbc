"""Run the `evalward` command line as a user does: a subprocess, with no provider key or
other secret inherited from the environment the tests run in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import evalward as _imported

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE = str(Path(_imported.__file__).resolve().parents[1])
"""Where the evalward these tests import lives: the subprocess runs the same code."""


def evalward(*args: str, cwd: Path = REPO_ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalward", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(cwd),
            "GIT_CONFIG_NOSYSTEM": "1",
            "PYTHONPATH": SOURCE,
            **env,
        },
    )
