"""A machine that refuses a write the run cannot go on without (a full disk, a file size
limit) is an outside failure said in one line, exit 3 (run again), never a traceback or
"a bug in evalward". The run is made under `prlimit --fsize`: past it a write fails with
EFBIG, as one on a full disk fails with ENOSPC; SQLite calls it a disk I/O error."""

from __future__ import annotations

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


def test_a_result_cache_the_disk_refuses_is_said_in_one_line_with_exit_3(repo: GitRepo) -> None:
    started = initialised(repo)
    # -B: Python would write its bytecode caches under the limit too, and keep them cut short
    command = [sys.executable, "-B", "-m", "evalward", "run", ".", "--mock-script", MOCK]
    done = subprocess.run(
        [PRLIMIT, "--fsize=4000", "--", *command],
        cwd=started.path,
        env={"PATH": os.environ["PATH"], "HOME": str(started.path), "PYTHONPATH": SOURCE},
        capture_output=True,
        text=True,
        timeout=subprocess_limit(),
        check=False,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 3, said
    assert "Traceback" not in said and "bug" not in said, said
    (line,) = [line for line in done.stderr.splitlines() if "refused a write" in line]
    assert "results.sqlite" in line and "(EIO)" in line and "Free space" in line, line
