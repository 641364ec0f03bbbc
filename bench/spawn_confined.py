"""What a program an agent user runs pays to enter its Landlock domain
(`evalward.runtime.isolation.landlock`): a child that makes two system calls between
switching user and exec, forked rather than vforked, as `preexec_fn` makes it. `/bin/true`
started as uid 10001 from an interpreter holding the action's modules (the heap a fork
copies the page tables of), with and without the domain, alternated in `--rounds` rounds of
`--starts` starts each; the median of the rounds. Needs root (the user switch).

    python bench/spawn_confined.py [--rounds 10] [--starts 30]
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import time
from collections.abc import Callable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--starts", type=int, default=30)
    args = parser.parse_args()
    importlib.import_module("evalward.action.pull_request")  # the heap a gate's fork copies
    from evalward.runtime.isolation import landlock

    confine = landlock.confinement()
    if confine is None:
        sys.exit("this kernel has no Landlock (ABI 2 or later): nothing to measure")
    ways: dict[str, Callable[[], None] | None] = {"without": None, "in a domain": confine}
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, preexec in ways.items():
            started = time.perf_counter()
            for _ in range(args.starts):
                subprocess.run(
                    ["/bin/true"], user=10001, group=10001, extra_groups=[], preexec_fn=preexec
                )
            times[name].append((time.perf_counter() - started) / args.starts * 1000)
    for name, each in times.items():
        print(
            f"{name}: {statistics.median(each):.2f} ms a start, median "
            f"(fastest {min(each):.2f} ms) over {args.rounds} alternated rounds"
        )


if __name__ == "__main__":
    main()
