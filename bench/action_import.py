"""What the action's process pays before it does anything: `import evalward.action.run` in a
fresh interpreter (bytecode compiled), this tree's evalward and each `--before` tree's
alternated, the median wall of each.

    python bench/action_import.py [--rounds 15] [--before NAME=SRC ...]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from common import alternation


def main() -> None:
    rounds, trees = alternation(__doc__, 15)
    walls: dict[str, list[float]] = {name: [] for name in trees}
    for round_ in range(rounds + 1):  # the first round compiles the bytecode: not counted
        for name, src in trees.items():
            env = {**os.environ, "PYTHONPATH": src}
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", "import evalward.action.run"], env=env, check=True
            )
            if round_:
                walls[name].append((time.perf_counter() - started) * 1000)
    for name, found in walls.items():
        print(
            f"{name}: import evalward.action.run, median {statistics.median(found):.0f} ms "
            f"(fastest {min(found):.0f}) over {rounds} alternated rounds"
        )


if __name__ == "__main__":
    main()
