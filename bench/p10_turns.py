"""P10: jobs that share a machine take the sides' turns first come, first served: what two
and four gates at once cost each of them, against one alone (as root, through the action: the
agent user switch, each job its own pair, the turns in the machine's shared folder).

Each job is p9's pull request (`p9_sides.Gates`: the refund desk grown to --fixtures
fixtures, a SQLite database and a CRM service per run, one command tool, two model calls at
--latency-ms) in a workspace of its own, gated with `cache: off`. Base turns go together, a
head's turn alone (the jobs gate different commits), so the heads queue. For each number of
jobs at once, every job's wall time (median of --runs per job slot), its ratio to a job
alone, and the longest a job's turns waited in all (from its log) are printed.

    python bench/p10_turns.py [--fixtures 10] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import ROOT, compile_evalward, model_server
from p9_sides import Gates

WAITED = re.compile(r"runs start after (\d+(?:\.\d+)?) s waiting for other jobs' turns")
JOBS = (1, 2, 4)


def waited(log: str) -> float:
    """How long a job's turns waited for other jobs' turns in all, from its log."""
    return sum(float(found) for found in WAITED.findall(log))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixtures", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("p10 runs the action as the image does, as root (the agent user switch)")
    source = (ROOT / "src").resolve()
    compile_evalward({"PYTHONPATH": str(source)})
    folder = Path(tempfile.mkdtemp(prefix="evalward-p10-"))
    folder.chmod(0o755)
    loads = [os.getloadavg()[0]]
    walls: dict[int, list[list[float]]] = {}
    waits: dict[int, list[float]] = {}
    with model_server(args.latency_ms) as server:
        gates = []
        for index in range(max(JOBS)):
            (folder / str(index)).mkdir(mode=0o755)
            gates.append(Gates(folder / str(index), source, args.fixtures, server.base_url))
        try:
            gates[0].gate("off")  # a first gate, untimed: files cached, the pool warm
            for _ in range(args.runs):
                for jobs in JOBS:
                    with ThreadPoolExecutor(jobs) as pool:
                        timed = list(pool.map(lambda g: g.gate("off")[0], gates[:jobs]))
                    walls.setdefault(jobs, []).append(timed)
                    waits.setdefault(jobs, []).extend(waited(g.said) for g in gates[:jobs])
                loads.append(os.getloadavg()[0])
        finally:
            for each in gates:
                each.close()
            shutil.rmtree(folder, ignore_errors=True)
    alone = statistics.median(run[0] for run in walls[1])
    print(
        f"{args.fixtures} fixtures a job, each run: a SQLite database and a CRM service, one "
        f"command tool, 2 model calls at {args.latency_ms:g} ms; cache off; medians of "
        f"{args.runs}; load average {min(loads):.1f}-{max(loads):.1f}"
    )
    for jobs in JOBS:
        each = [statistics.median(run[slot] for run in walls[jobs]) for slot in range(jobs)]
        shown = " / ".join(f"{wall:.2f}" for wall in each)
        print(
            f"{jobs} at once: each job's wall {shown} s (x{max(each) / alone:.2f} of alone at "
            f"most), longest wait for other jobs' turns {max(waits[jobs]):.2f} s"
        )


if __name__ == "__main__":
    main()
