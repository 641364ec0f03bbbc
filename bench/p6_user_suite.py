"""P6 on a suite written the way users write one: CPU per fixture, wall time against the ideal.

1,000 one-call fixtures of one agent with a system prompt, each with a `contains` and a
`regex` on its own expected answer (no two fixtures share a pattern), one Eval without
`execution.parallel`, run as a user runs it: `evalward run . --parallel 32` in the
repository (a git repository with one commit), with the result cache, the history and the
Evals' status all written, against the benchmark model server at 50 ms. Each run starts
from a repository without `.evalward/`, so every run makes its 1,000 calls. Ideal =
ceil(fixtures / 32) x latency. Prints the wall time (median of --runs; target <= 1.3 x the
ideal), split by what the model server saw, and evalward's CPU per fixture: user + sys of the
evalward process divided by the fixtures, start-up and reports included (target <= 1.0 ms).

With `--before SRC` (the `src` folder of another checkout), runs alternate between that
evalward and this one, and both are printed: on a shared machine, a before/after comparison
means something only when both saw the same load.

    python bench/p6_user_suite.py [--fixtures 1000] [--parallel 32] [--latency-ms 50] [--runs 5]
    python bench/p6_user_suite.py --before /tmp/evalward-main/src
    python bench/p6_user_suite.py --profile /tmp/p6u.prof   # also one run under cProfile
"""

from __future__ import annotations

import argparse
import math
import os
import pstats
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from common import EVALWARD, compile_evalward, median, model_server, timed
from p6_parallel import PROFILE
from synth import generate_user_suite, init_git


@dataclass
class Runs:
    """One evalward's runs: what each took, and how the model server saw it."""

    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    calls: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)

    def report(self, label: str, fixtures: int, ideal: float) -> None:
        wall = median(self.walls)
        per_fixture = [cpu / fixtures * 1000 for cpu in self.cpus]
        print(f"  {label}")
        print(f"    wall (median {len(self.walls)}) {wall:.2f} s = {wall / ideal:.2f} x ideal")
        print(f"      runs:          {', '.join(f'{w:.2f}' for w in self.walls)}")
        print(f"      start-up       {median(self.starts):.2f} s   (to the first model call)")
        print(f"      calls          {median(self.calls):.2f} s   (first call to last reply)")
        print(f"      end            {median(self.ends):.2f} s   (last reply to exit)")
        print(
            f"    CPU per fixture  {median(per_fixture):.2f} ms   "
            f"(runs: {', '.join(f'{c:.2f}' for c in per_fixture)})"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixtures", type=int, default=1000)
    parser.add_argument("--parallel", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", type=Path, help="alternate with the evalward in this src")
    parser.add_argument(
        "--profile", type=Path, help="after the timed runs, profile one run into this file"
    )
    args = parser.parse_args()

    repo = Path(tempfile.mkdtemp(prefix="evalward-p6u-"))
    generate_user_suite(repo, args.fixtures)
    init_git(repo)
    ideal = math.ceil(args.fixtures / args.parallel) * args.latency_ms / 1000
    command = [*EVALWARD, "run", ".", "--parallel", str(args.parallel)]
    versions: dict[str, dict[str, str]] = {"this evalward": {}}
    if args.before:
        before = {"PYTHONPATH": str(args.before.resolve())}
        compile_evalward(before)
        versions = {"before": before, **versions}
    runs = {label: Runs() for label in versions}
    with model_server(args.latency_ms) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
        for _ in range(args.runs):
            for label, version in versions.items():
                shutil.rmtree(repo / ".evalward", ignore_errors=True)
                server.stats(reset=True)
                started = time.time()
                run = timed(command, env={**env, **version}, cwd=repo, ok=(0,))
                ended = time.time()
                stats = server.stats(reset=True)
                assert stats["latency"]["n"] == args.fixtures, "one model call per fixture"
                assert f"{args.fixtures}/{args.fixtures}" in run.stdout, "every fixture passes"
                for written in ("cache", "history", "status"):
                    assert any((repo / ".evalward" / written).iterdir()), f"no {written} written"
                runs[label].starts.append(stats["first"] - started)
                runs[label].calls.append(stats["last"] - stats["first"])
                runs[label].ends.append(ended - stats["last"])
                runs[label].walls.append(run.wall)
                runs[label].cpus.append(run.cpu)
        if args.profile:
            shutil.rmtree(repo / ".evalward", ignore_errors=True)
            profiled = [EVALWARD[0], "-c", PROFILE, str(args.profile), *command[3:]]
            timed(profiled, env=env, cwd=repo, ok=(0,))
    print(
        f"P6 user suite: {args.fixtures} fixtures x 1 call, a contains and a distinct regex "
        f"each, a system prompt, `evalward run . --parallel {args.parallel}`, "
        f"{args.latency_ms:g} ms latency"
    )
    print(f"  ideal  {ideal:.2f} s (ceil({args.fixtures}/{args.parallel}) x latency)")
    print(
        "  targets: wall <= 1.3 x ideal; CPU <= 1.0 ms per fixture (evalward process, "
        "user + sys, start-up included)"
    )
    for label, measured in runs.items():
        measured.report(label, args.fixtures, ideal)
    print(f"  load average after the runs: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.profile:
        print(f"  profile  {args.profile}; the top of it by own time:")
        pstats.Stats(str(args.profile)).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
