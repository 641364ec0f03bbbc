"""What a sandboxed job pays before its first turn to find where any user may write: the
walk of every writable mount (`evalward.runtime.isolation.shared_places.find`) on this machine, this
tree's evalward and each `--before` tree's alternated, each in a fresh interpreter, the
median wall of each, and how many folders it looked at (its `lstat` calls, counted in a
second, untimed walk).

    python bench/shared_places.py [--rounds 9] [--before NAME=SRC ...]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from common import alternation

WALK = """\
import json, os, time
from evalward.runtime.isolation import shared_places
started = time.perf_counter()
places = shared_places.find()
wall = time.perf_counter() - started
looked, lstat = [0], os.lstat
def counted(*args, **kwargs):
    looked[0] += 1
    return lstat(*args, **kwargs)
os.lstat = counted  # once more, untimed: the folders it looks at (one lstat each)
shared_places.find()
print(json.dumps([wall, len(places.folders), places.complete, looked[0]]))
"""


def main() -> None:
    rounds, trees = alternation(__doc__, 9)
    walls: dict[str, list[float]] = {name: [] for name in trees}
    found: dict[str, tuple[int, bool, int]] = {}
    for _ in range(rounds):
        for name, src in trees.items():
            done = subprocess.run(
                [sys.executable, "-c", WALK],
                env={**os.environ, "PYTHONPATH": src},
                capture_output=True,
                text=True,
                check=True,
            )
            wall, places, complete, looked = json.loads(done.stdout)
            walls[name].append(wall * 1000)
            found[name] = (places, complete, looked)
    for name, measured in walls.items():
        places, complete, looked = found[name]
        print(
            f"{name}: the shared places' walk, median {statistics.median(measured):.0f} ms "
            f"(fastest {min(measured):.0f}) over {rounds} alternated rounds; {looked:,} "
            f"folders looked at, {places} places found, "
            f"{'every' if complete else 'not every'} folder seen"
        )


if __name__ == "__main__":
    main()
