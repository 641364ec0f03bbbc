"""P1: 1,000 fixture runs of two model calls each at parallel 32 against 50 ms latency.

Ideal = ceil(calls / 32) x 50 ms. Prints the wall time and its ratio to the ideal (target
<= 1.10), split by what the model server saw into start-up (process start to the first
model call), the calls (first call to last reply) and the end (last reply to exit); the
same calls made by a bare aiohttp client (bench/bare_client.py), the floor this machine
and server allow, both its calls alone and its whole process (interpreter start, `import
aiohttp`, the calls, exit) timed from outside as evalward's wall is; the latency the server
actually delivered (mean, p99) to each; and the CPU per model call of each process: what
evalward spends beside what the HTTP client alone does.

    python bench/p1_overhead.py [--fixtures 1000] [--parallel 32] [--latency-ms 50] [--runs 3]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import BENCH, EVALWARD, median, model_server, timed
from synth import generate


def delivered(stats: list[dict[str, Any]]) -> str:
    """The server's delivered latency over some runs: the median run's mean and p99."""
    mean = median([s["latency"]["mean_ms"] for s in stats])
    p99 = median([s["latency"]["p99_ms"] for s in stats])
    cpu = median([s["cpu"] / s["latency"]["n"] * 1000 for s in stats])
    return f"mean {mean:.2f} ms, p99 {p99:.2f} ms (server CPU {cpu:.2f} ms/call)"


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
    walls, cpus, starts, phases, ends, floors = [], [], [], [], [], []
    bare_walls, bare_starts, bare_cpus = [], [], []
    served: dict[str, list[dict[str, Any]]] = {"evalward": [], "bare": []}
    with model_server(args.latency_ms) as server:
        for _ in range(args.runs):
            before = server.requests()
            server.stats(reset=True)
            started = time.time()
            run = timed(
                [*EVALWARD, "run", str(repo), "--parallel", str(args.parallel), "--no-cache"],
                env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"},
            )
            ended = time.time()
            stats = server.stats(reset=True)
            made = stats["requests"] - before
            assert made == calls, f"expected {calls} model calls, the server saw {made}"
            assert run.returncode == 0, "every fixture should pass"
            walls.append(run.wall)
            cpus.append(run.cpu)
            starts.append(stats["first"] - started)
            phases.append(stats["last"] - stats["first"])
            ends.append(ended - stats["last"])
            served["evalward"].append(stats)
            started = time.time()
            bare = timed(
                [
                    sys.executable,
                    str(BENCH / "bare_client.py"),
                    server.base_url,
                    "--fixtures",
                    str(args.fixtures),
                    "--parallel",
                    str(args.parallel),
                ],
                ok=(0,),
            )
            stats = server.stats(reset=True)
            assert stats["latency"]["n"] == calls, "the bare client should make every call"
            floors.append(float(bare.stdout))
            bare_walls.append(bare.wall)
            bare_cpus.append(bare.cpu)
            bare_starts.append(stats["first"] - started)
            served["bare"].append(stats)
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
    print(f"    start-up       {median(starts):.2f} s   (process start to the first model call)")
    print(
        f"    calls          {median(phases):.2f} s   (first call to last reply; "
        f"{median(phases) / ideal:.2f} x ideal)"
    )
    print(f"    end            {median(ends):.2f} s   (last reply to exit: scoring, reports)")
    print(
        f"  bare client      {median(floors):.2f} s   ({median(floors) / ideal:.2f} x ideal: "
        "the same calls from a bare aiohttp loop, the floor here)"
    )
    bare_wall = median(bare_walls)
    print(
        f"  bare process     {bare_wall:.2f} s   ({bare_wall / ideal:.2f} x ideal: the whole "
        f"bare_client.py process, start-up {median(bare_starts):.2f} s; the end-to-end floor)"
    )
    print(f"  server latency   configured {args.latency_ms:g} ms; as the server delivered it:")
    print(f"    to evalward    {delivered(served['evalward'])}")
    print(f"    to bare client {delivered(served['bare'])}")
    print(f"  CPU per call     {median(cpus) / calls * 1000:.2f} ms (evalward process, user+sys)")
    print(
        f"    bare process   {median(bare_cpus) / calls * 1000:.2f} ms (interpreter, "
        "`import aiohttp` and the same calls: the floor under evalward's)"
    )


if __name__ == "__main__":
    main()
