"""What a sandboxed job pays before its first turn to find where any user may write: the
walk of every writable mount (`evalward.runtime.isolation.shared_places.find`) on this machine, this
tree's evalward and each `--before` tree's alternated, each in a fresh interpreter, the
median wall of each.

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
import json, time
from evalward.runtime.isolation import shared_places
started = time.perf_counter()
places = shared_places.find()
print(json.dumps([time.perf_counter() - started, len(places.folders), places.complete]))
"""


def main() -> None:
    rounds, trees = alternation(__doc__, 9)
    walls: dict[str, list[float]] = {name: [] for name in trees}
    found: dict[str, tuple[int, bool]] = {}
    for _ in range(rounds):
        for name, src in trees.items():
            done = subprocess.run(
                [sys.executable, "-c", WALK],
                env={**os.environ, "PYTHONPATH": src},
                capture_output=True,
                text=True,
                check=True,
            )
            wall, places, complete = json.loads(done.stdout)
            walls[name].append(wall * 1000)
            found[name] = (places, complete)
    for name, measured in walls.items():
        places, complete = found[name]
        print(
            f"{name}: the shared places' walk, median {statistics.median(measured):.0f} ms "
            f"(fastest {min(measured):.0f}) over {rounds} alternated rounds; "
            f"{places} places found, {'every' if complete else 'not every'} folder seen"
        )


if __name__ == "__main__":
    main()
