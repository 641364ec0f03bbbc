"""The test suite as CI runs it: a fresh clone of HEAD, `CI=true bash .ci/run` (the
virtualenv made from the lock, ruff, ruff format, mypy --strict, pytest on two workers), with
another process keeping one core busy the whole time, as a loaded CI machine would. Prints
the tests counted, pytest's own time and the whole run's. Takes 10-20 minutes.

    python bench/test_suite.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        with tempfile.TemporaryDirectory(prefix="evalward-suite-") as work:
            clone = Path(work) / "clone"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
            start = time.perf_counter()
            done = subprocess.run(
                ["bash", ".ci/run"],
                cwd=clone,
                env={**os.environ, "CI": "true"},
                capture_output=True,
                text=True,
                check=False,
            )
            whole = time.perf_counter() - start
    finally:
        busy.kill()
    # pytest -q's last line: "4092 passed in 532.28s (0:08:52)" (with `=` around it, without -q)
    summary = re.findall(r"^=*\s*(\d.*?) in ([\d.]+)s\b", done.stdout, re.MULTILINE)
    counted, pytest_s = summary[-1] if summary else ("no pytest summary", "nan")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    print("| commit | tests | pytest | whole `.ci/run`, venv included | exit |")
    print("|---|---|---|---|---|")
    minutes = f"{int(whole // 60)} min {int(whole % 60)} s"
    print(f"| {head} | {counted} | {pytest_s} s | {minutes} ({whole:.0f} s) | {done.returncode} |")
    if done.returncode != 0:
        print(done.stdout[-3000:], file=sys.stderr)


if __name__ == "__main__":
    main()
