"""P1: 1,000 fixture runs of two model calls each at parallel 32 against 50 ms latency.

Ideal = ceil(calls / 32) x 50 ms. Prints the wall time, the ratio to the ideal (target
<= 1.10), and evalward's CPU per model call.

    python bench/p1_overhead.py [--fixtures 1000] [--parallel 32] [--latency-ms 50] [--runs 3]
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

from common import EVALWARD, median, model_server, timed
from synth import generate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixtures", type=int, default=1000)
    parser.add_argument("--parallel", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    repo = Path(tempfile.mkdtemp(prefix="evalward-p1-"))
    generate(repo, 1, args.fixtures, tools=True, parallel=args.parallel)
    calls = 2 * args.fixtures
    ideal = math.ceil(calls / args.parallel) * args.latency_ms / 1000
    walls, cpus = [], []
    with model_server(args.latency_ms) as server:
        for _ in range(args.runs):
            before = server.requests()
            run = timed(
                [*EVALWARD, "run", str(repo), "--parallel", str(args.parallel), "--no-cache"],
                env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"},
            )
            made = server.requests() - before
            assert made == calls, f"expected {calls} model calls, the server saw {made}"
            assert run.returncode == 0, "every fixture should pass"
            walls.append(run.wall)
            cpus.append(run.cpu)
    wall = median(walls)
    print(
        f"P1 overhead: {args.fixtures} fixtures x 2 calls, parallel {args.parallel}, "
        f"{args.latency_ms:g} ms latency"
    )
    print(f"  ideal            {ideal:.2f} s")
    print(
        f"  wall (median {args.runs}) {wall:.2f} s   runs: {', '.join(f'{w:.2f}' for w in walls)}"
    )
    print(f"  wall / ideal     {wall / ideal:.2f}   (target <= 1.10)")
    print(f"  CPU per call     {median(cpus) / calls * 1000:.2f} ms (evalward process, user+sys)")


if __name__ == "__main__":
    main()
