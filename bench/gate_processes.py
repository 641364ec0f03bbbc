"""What one blocked gate and its attribution start and spend: git processes, CPU (this
process's and its children's) and wall time, on bench/attribution.py's pull request
(examples/refund-desk, three fields of its agent changed, a scripted model on loopback, the
base branch asking for `attribution: { mode: on-block, budget: 2 }`).

Each round runs the gate, then attribution, in a fresh process of this tree's evalward and
of each `--before` tree's, alternated (the first round, which writes bytecode, is not
counted); the median over the rounds, and the fewest git processes.

    python bench/gate_processes.py [--rounds 5] [--before NAME=SRC ...]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from common import alternation

BENCH = Path(__file__).resolve().parent
ONE_GATE = """\
import asyncio, json, resource, shutil, subprocess, sys, threading, time
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import evalward  # this tree's, before bench/attribution.py puts its own first
import attribution as bench
from http.server import ThreadingHTTPServer

counted = {"on": None, "gate": 0, "attribution": 0}
popen = subprocess.Popen.__init__
def counting(self, args, *rest, **options):
    if counted["on"] and isinstance(args, (list, tuple)) and str(args[0]).endswith("git"):
        counted[counted["on"]] += 1
    popen(self, args, *rest, **options)
subprocess.Popen.__init__ = counting

def cpu():
    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime

spent = {}
attribute = bench.attribute_run
async def attributing(request, verdict):
    spent["gate"] = (cpu() - spent.pop("start"), time.perf_counter() - spent.pop("wall"))
    counted["on"], began, wall = "attribution", cpu(), time.perf_counter()
    try:
        return await attribute(request, verdict)
    finally:
        spent["attribution"] = (cpu() - began, time.perf_counter() - wall)
        counted["on"] = None
bench.attribute_run = attributing

server = ThreadingHTTPServer(("127.0.0.1", 0), bench._Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
root = bench._repository(2)
try:
    counted["on"], spent["start"], spent["wall"] = "gate", cpu(), time.perf_counter()
    found = asyncio.run(bench._gate(root, f"http://127.0.0.1:{server.server_address[1]}/v1"))
finally:
    shutil.rmtree(root, ignore_errors=True)
print(json.dumps({"counted": counted, "spent": spent, "found": found["found"]}))
"""


def main() -> None:
    rounds, trees = alternation(__doc__.split("\n\n")[0], 5)
    runs: dict[str, list[dict[str, object]]] = {name: [] for name in trees}
    for round_ in range(rounds + 1):
        for name, src in trees.items():
            done = subprocess.run(
                [sys.executable, "-c", ONE_GATE, src, str(BENCH)],
                env={**os.environ, "PYTHONPATH": src}, check=True, text=True,
                capture_output=True,
            )  # fmt: skip
            if round_:
                runs[name].append(json.loads(done.stdout.splitlines()[-1]))
    print(
        "| tree | gate: git processes | gate: CPU | gate: wall | attribution: git processes "
        "| attribution: CPU | attribution: wall | found |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, done in runs.items():
        cells = [name]
        for phase in ("gate", "attribution"):
            git = [r["counted"][phase] for r in done]  # type: ignore[index]
            cpu = statistics.median(r["spent"][phase][0] for r in done)  # type: ignore[index]
            wall = statistics.median(r["spent"][phase][1] for r in done)  # type: ignore[index]
            cells += [f"{statistics.median(git):.0f} (fewest {min(git)})", f"{cpu:.2f} s"]
            cells.append(f"{wall:.2f} s")
        cells.append(" / ".join(sorted({str(r["found"]) for r in done})))
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
