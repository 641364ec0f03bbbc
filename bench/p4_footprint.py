"""P4: start-up and memory. `python -m evalward --version` <= 0.3 s; peak RSS <= 300 MB with
20,000 fixture results in one run (mock provider, so the figure is evalward's own), and the
size of the files that run writes per fixture result (report.html, results.json).

    python bench/p4_footprint.py [--fixtures 20000] [--repeat 10]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from common import EVALWARD, timed
from synth import generate

SCRIPT = 'replies: []\ndefault: "answer: case 1 of agent"\n'


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixtures", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        subprocess.run([*EVALWARD, "--version"], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    print(
        f"P4 start-up: `python -m evalward --version` median {statistics.median(times):.3f} s "
        f"over {args.repeat} (min {min(times):.3f})   (target <= 0.3 s)"
    )

    repo = Path(tempfile.mkdtemp(prefix="evalward-p4-"))
    generate(repo, 20, args.fixtures, tools=False, parallel=64)
    script = repo / "mock.yaml"
    script.write_text(SCRIPT)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    run = timed(
        [
            *EVALWARD,
            "run",
            str(repo),
            "--mock-script",
            str(script),
            "--parallel",
            "64",
            "--no-cache",
            "--output-dir",
            str(repo / "out"),
        ]
    )
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(
        f"P4 memory: {args.fixtures} fixture results in one run: peak RSS {peak / 1024:.0f} MB "
        f"(target <= 300 MB), {run.wall:.1f} s; earlier children peaked at {before / 1024:.0f} MB"
    )
    for name in ("report.html", "results.json"):
        size = (repo / "out" / name).stat().st_size
        print(
            f"P4 files: {name} {size / 1e6:.1f} MB, {size / args.fixtures:.0f} bytes per "
            f"fixture result"
        )
    shutil.rmtree(repo, ignore_errors=True)


if __name__ == "__main__":
    main()
