"""Run the `evalward` command line as a user does: a subprocess, with no provider key or
other secret inherited from the environment the tests run in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import evalward as _imported
from support import head_strays
from support.limits import subprocess_limit

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE = str(Path(_imported.__file__).resolve().parents[1])
"""Where the evalward these tests import lives: the subprocess runs the same code."""
DEMO_PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
"""`make demo`'s PATH, for a run of the repository's own examples: the virtualenv's `bin`
first, where the MCP example's server (`python3`) finds the MCP SDK."""


def evalward(*args: str, cwd: Path = REPO_ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    with head_strays.reading():  # no head user of another test's outside a turn meanwhile
        return subprocess.run(
            [sys.executable, "-m", "evalward", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=subprocess_limit(),
            env={
                "PATH": os.environ["PATH"],
                "HOME": str(cwd),
                "GIT_CONFIG_NOSYSTEM": "1",
                "PYTHONPATH": SOURCE,
                **env,
            },
        )


def run_for_results(cwd: Path, *args: str, **env: str) -> tuple[int, dict[str, Any], str]:
    """`evalward run . --no-history --no-cache --output-dir out ARGS` in `cwd`: its exit code,
    its results.json and all it said, which never holds a traceback."""
    out = cwd / "out"
    done = evalward(
        "run", ".", "--no-history", "--no-cache", "--output-dir", str(out), *args, cwd=cwd, **env
    )
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said
    return done.returncode, json.loads((out / "results.json").read_text()), said
