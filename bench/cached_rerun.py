"""A rerun of an unchanged gate (a label added, a workflow rerun), through the action as root
(the agent user switch, as in the image): every run is in the result cache.

The refund desk of P9 (--fixtures fixtures, a SQLite playground and a fake CRM service per
run) is gated once with the result cache on, untimed; then the same pull request, its head
unchanged, is gated again --runs times. Since d7d7e0ca a side whose every run is cached takes
no turn, so the rerun neither waits for the machine's turns nor walks the folders any user may
write (`shared_places`); before, both sides took theirs for programs that never started.

With --before SRC (the `src` folder of another checkout), reruns alternate between that
evalward and this one, and both are printed: the wall and CPU time of the action, medians.

    python bench/cached_rerun.py --before /tmp/ew-before/src [--fixtures 40] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from common import ROOT, compile_evalward, model_server
from p9_sides import Gates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="alternate with the evalward in this src")
    parser.add_argument("--after", type=Path, default=ROOT / "src", help="(default: this one)")
    parser.add_argument("--fixtures", type=int, default=40)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("cached_rerun runs the action as the image does, as root (the user switch)")
    versions = {"after": args.after.resolve()}
    if args.before:
        versions = {"before": args.before.resolve(), **versions}
    for source in versions.values():
        compile_evalward({"PYTHONPATH": str(source)})
    folder = Path(tempfile.mkdtemp(prefix="evalward-rerun-"))
    folder.chmod(0o755)
    timings: dict[str, list[tuple[float, float]]] = {name: [] for name in versions}
    turned: dict[str, bool] = {}
    with model_server(args.latency_ms) as server:
        gates = {}
        for name, source in versions.items():
            (folder / name).mkdir(mode=0o755)
            gates[name] = Gates(folder / name, source, args.fixtures, server.base_url)
            gates[name].gate("read-write")  # untimed: fills the result cache
        try:
            for _ in range(args.runs):
                for name, gates_of in gates.items():  # alternated
                    timings[name].append(gates_of.rerun("read-write"))
                    turned[name] = "sides take turns" in gates_of.said
        finally:
            for each in gates.values():
                each.close()
            shutil.rmtree(folder, ignore_errors=True)
    print(f"A rerun of an unchanged gate: {args.fixtures} fixtures, every run cached")
    print(f"  medians of {args.runs} reruns each, alternated; through the action, as root")
    for name, runs in timings.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        turns = "took its turns" if turned[name] else "took no turn"
        print(f"  {name:<6}  wall {wall:5.2f} s  cpu {cpu:5.2f} s  ({turns})")


if __name__ == "__main__":
    main()
