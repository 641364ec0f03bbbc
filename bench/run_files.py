"""The run's files and the result cache's keys, timed inside the process: P1's 1,000
one-call fixtures run against the benchmark model server (`--parallel 32 --no-cache
--no-history --output-dir`), with a timer around writing results.json, around writing all
four files (results.json, junit.xml, report.html, comment.md) and around making each run's
result-cache key. Whole-process figures hide these among the run's 1.2 s of CPU; timed
alone, a change to one of them shows.

With `--before LABEL=SRC` (the `src` folder of another checkout; repeatable) that evalward
runs the same suite too, every version's runs alternated, and each is printed beside this
one (medians of `--runs`).

    python bench/run_files.py [--fixtures 1000] [--runs 3] [--before main=/tmp/evalward-main/src]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TIMED = {
    "results.json": ("evalward.report.files", "write_results"),
    "all four files": ("evalward.report.files", "write_reports"),
    "result-cache keys": ("evalward.plan.result_cache", "CacheKeys._key"),
}


def child(repo: str, out: str) -> None:
    """One run of the suite in this process, each TIMED function's CPU summed into `out`."""
    import importlib

    spent = dict.fromkeys(TIMED, 0.0)

    def timer(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] += time.process_time() - started

        return timed

    for name, (module, path) in TIMED.items():
        owner: Any = importlib.import_module(module)
        *outer, last = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        setattr(owner, last, timer(name, getattr(owner, last)))
    output = Path(tempfile.mkdtemp(prefix="evalward-run-files-"))
    sys.argv = ["evalward", "run", repo, "--parallel", "32", "--no-cache", "--no-history"]
    sys.argv += ["--output-dir", str(output)]
    try:
        runpy.run_module("evalward", run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (0, 1):
            raise
    Path(out).write_text(json.dumps(spent))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixtures", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", action="append", default=[], metavar="[LABEL=]SRC")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    from common import compile_evalward, model_server
    from synth import generate

    versions = {"this evalward": os.environ.get("PYTHONPATH", "")}
    for before in args.before:
        label, _, src = before.rpartition("=")
        versions = {label or src: src, **versions}
        compile_evalward({"PYTHONPATH": src})
    repo = Path(tempfile.mkdtemp(prefix="evalward-run-files-")) / "suite"
    generate(repo, 1, args.fixtures, tools=False, parallel=32, fail_every=7)
    figures: dict[str, dict[str, list[float]]] = {v: {n: [] for n in TIMED} for v in versions}
    with model_server(50) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
        for _ in range(args.runs):
            for label, src in versions.items():
                out = Path(tempfile.mkdtemp()) / "spent.json"
                command = [sys.executable, __file__, "--child", str(repo), str(out)]
                subprocess.run(
                    command,
                    env={**env, "PYTHONPATH": src} if src else env,
                    check=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for name, seconds in json.loads(out.read_text()).items():
                    figures[label][name].append(seconds)
    heading = f"| CPU, {args.fixtures:,} fixtures, median of {args.runs} | "
    print(heading + " | ".join(versions) + " |")
    print("|---|" + "---|" * len(versions))
    for name in TIMED:
        cells = [f"{statistics.median(figures[v][name]) * 1000:.1f} ms" for v in versions]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
