"""What a job pays for each look for the sockets its agent users made and someone still holds
(`evalward.runtime.processes.held_sockets.held`: at every turn's start and end and after every
base run), on a busy machine: `--processes` processes of `--threads` threads each, every
one holding a few descriptors, started beside the look as a runner's other work would be.
This tree's evalward and each `--before` tree's, alternated, each in a fresh interpreter,
`--looks` looks each; the median of the rounds.

    python bench/held_sockets.py [--rounds 7] [--processes 40] [--threads 25]
                                 [--before NAME=SRC ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

from common import before_and_this

BUSY = """\
import socket, sys, threading
held = [socket.socket(socket.AF_UNIX) for _ in range(8)]
stop = threading.Event()
for _ in range(int(sys.argv[1]) - 1):
    threading.Thread(target=stop.wait, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""
LOOK = """\
import sys, time
from evalward.runtime.processes.held_sockets import held
looks = int(sys.argv[1])
started = time.perf_counter()
for _ in range(looks):
    assert held({4_000_000}) == []  # a user who made no socket: the look of almost every turn
print((time.perf_counter() - started) / looks)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--processes", type=int, default=40)
    parser.add_argument("--threads", type=int, default=25)
    parser.add_argument("--looks", type=int, default=20)
    parser.add_argument("--before", action="append", default=[], metavar="NAME=SRC")
    args = parser.parse_args()
    trees = before_and_this(args.before)
    busy = [
        subprocess.Popen(
            [sys.executable, "-c", BUSY, str(args.threads)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(args.processes)
    ]
    try:
        for process in busy:
            assert process.stdout is not None and process.stdout.readline() == "ready\n"
        seconds: dict[str, list[float]] = {name: [] for name in trees}
        for round_ in range(args.rounds + 1):  # the first round compiles bytecode: not counted
            for name, src in trees.items():
                done = subprocess.run(
                    [sys.executable, "-c", LOOK, str(args.looks)],
                    env={**os.environ, "PYTHONPATH": src},
                    check=True,
                    text=True,
                    capture_output=True,
                )
                if round_:
                    seconds[name].append(float(done.stdout))
    finally:
        for process in busy:
            assert process.stdin is not None
            process.stdin.close()
            process.wait()
    tasks = args.processes * args.threads
    for name, looks in seconds.items():
        print(
            f"{name}: a look beside {args.processes} processes of {args.threads} threads "
            f"({tasks:,} threads), {statistics.median(looks) * 1000:.2f} ms median (fastest "
            f"{min(looks) * 1000:.2f} ms) over {args.rounds} alternated rounds"
        )


if __name__ == "__main__":
    main()
