"""A machine that refuses a write the run cannot go on without (a full disk, a file size
limit) is an outside failure said in one line, exit 3 (run again), never a traceback or
"a bug in evalward". The run is made under `prlimit --fsize`: past it a write fails with
EFBIG, as one on a full disk fails with ENOSPC; SQLite calls it a disk I/O error."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from support.clirun import SOURCE, initialised
from support.gitrepo import GitRepo
from support.limits import subprocess_limit

pytestmark = pytest.mark.e2e

PRLIMIT = "/usr/bin/prlimit"
MOCK = "evals/mock-replies.yaml"


def _limited(repo: GitRepo, limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    """`evalward run` of `evalward init`'s suite under a file size limit of `limit` bytes."""
    # -B: Python would write its bytecode caches under the limit too, and keep them cut short
    command = [sys.executable, "-B", "-m", "evalward", "run", ".", "--mock-script", MOCK, *args]
    return subprocess.run(
        [PRLIMIT, f"--fsize={limit}", "--", *command],
        cwd=repo.path,
        env={"PATH": os.environ["PATH"], "HOME": str(repo.path), "PYTHONPATH": SOURCE},
        capture_output=True,
        text=True,
        timeout=subprocess_limit(),
        check=False,
    )


def _said_once(done: subprocess.CompletedProcess[str]) -> str:
    said = done.stdout + done.stderr
    assert done.returncode == 3, said
    assert "Traceback" not in said and "bug" not in said, said
    (line,) = [line for line in done.stderr.splitlines() if "refused a write" in line]
    assert "results.sqlite" in line and "(EIO)" in line and "Free space" in line, line
    return line


def test_a_result_cache_the_disk_refuses_is_said_in_one_line_with_exit_3(repo: GitRepo) -> None:
    """The database cannot be made at all: the run ends before its plan."""
    _said_once(_limited(initialised(repo), 4_000))


def test_a_result_cache_refused_once_runs_began_is_the_decision_s_reason(repo: GitRepo) -> None:
    """The database is made, and its first result's write is refused: the run stops there,
    and its decision (incomplete) says why in the words the error line uses, not "a bug"."""
    done = _limited(initialised(repo), 16_000, "--json")
    line = _said_once(done)
    document = json.loads(done.stdout)
    assert document["result"] == "incomplete", document
    assert line.removeprefix("evalward: ") in document["reason"], document["reason"]
