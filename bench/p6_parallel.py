"""P6: the run's `--parallel` alone bounds an Eval that does not set `execution.parallel`.

1,000 fixtures of one model call each, one Eval with no `execution.parallel`, run with
`evalward run --parallel 32` against the benchmark model server at 50 ms. Ideal =
ceil(fixtures / 32) x latency. Prints the wall time (median of --runs), its ratio to the ideal
(target <= 1.5), the peak number of model calls the server saw in flight at once (32 when the
run's limit is the only one), and evalward's CPU per fixture: the user + sys time of the
evalward process divided by the fixtures, start-up and reports included.

    python bench/p6_parallel.py [--fixtures 1000] [--parallel 32] [--latency-ms 50] [--runs 3]
    python bench/p6_parallel.py --profile /tmp/p6.prof   # also one run under cProfile (CPU time)
"""

from __future__ import annotations

import argparse
import math
import pstats
import tempfile
import time
from pathlib import Path

from common import EVALWARD, median, model_server, timed
from synth import generate

PROFILE = """\
import cProfile, sys, time
from evalward.__main__ import entry
out = sys.argv[1]
sys.argv = ["evalward", *sys.argv[2:]]
profile = cProfile.Profile(time.process_time)
try:
    profile.runcall(entry)
except SystemExit:
    pass
profile.dump_stats(out)
"""
"""One run of evalward under cProfile, timed by CPU (process time), not by the wall clock: time
waiting on the network or the disk is not the cost this benchmark looks for."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixtures", type=int, default=1000)
    parser.add_argument("--parallel", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--profile", type=Path, help="after the timed runs, profile one run into this file"
    )
    args = parser.parse_args()

    repo = Path(tempfile.mkdtemp(prefix="evalward-p6-"))
    generate(repo, 1, args.fixtures, tools=False, parallel=None)
    assert "parallel" not in next((repo / "evals").iterdir()).read_text()
    ideal = math.ceil(args.fixtures / args.parallel) * args.latency_ms / 1000
    command = [*EVALWARD, "run", str(repo), "--parallel", str(args.parallel)]
    command += ["--no-cache", "--no-history"]
    walls, cpus, peaks, starts, phases, ends = [], [], [], [], [], []
    with model_server(args.latency_ms) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
        for _ in range(args.runs):
            server.stats(reset=True)
            started = time.time()
            run = timed(command, env=env, ok=(0,))
            ended = time.time()
            stats = server.stats(reset=True)
            starts.append(stats["first"] - started)
            phases.append(stats["last"] - stats["first"])
            ends.append(ended - stats["last"])
            assert stats["latency"]["n"] == args.fixtures, "one model call per fixture"
            walls.append(run.wall)
            cpus.append(run.cpu)
            peaks.append(stats["peak_in_flight"])
        if args.profile:
            profiled = [EVALWARD[0], "-c", PROFILE, str(args.profile), *command[3:]]
            timed(profiled, env=env, ok=(0,))
    wall = median(walls)
    print(
        f"P6 parallel: {args.fixtures} fixtures x 1 call, one Eval without execution.parallel, "
        f"--parallel {args.parallel}, {args.latency_ms:g} ms latency"
    )
    print(f"  ideal            {ideal:.2f} s   (ceil({args.fixtures}/{args.parallel}) x latency)")
    runs = ", ".join(f"{w:.2f}" for w in walls)
    print(f"  wall (median {args.runs}) {wall:.2f} s   runs: {runs}")
    print(f"  wall / ideal     {wall / ideal:.2f}   (target <= 1.5)")
    print(f"    start-up       {median(starts):.2f} s   (process start to the first model call)")
    print(
        f"    calls          {median(phases):.2f} s   (first call to last reply; "
        f"{median(phases) / ideal:.2f} x ideal)"
    )
    print(f"    end            {median(ends):.2f} s   (last reply to exit: scoring, reports)")
    print(f"  peak in flight   {max(peaks)} model calls (the run's limit: {args.parallel})")
    print(
        f"  CPU per fixture  {median(cpus) / args.fixtures * 1000:.2f} ms "
        "(evalward process, user+sys, start-up included)"
    )
    if args.profile:
        print(f"  profile          {args.profile}; the top of it by own time:")
        pstats.Stats(str(args.profile)).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
