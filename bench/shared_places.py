"""What a sandboxed job pays before its first turn to find where any user may write: the
walk of every writable mount (`evalward.runtime.isolation.shared_places.find`) on this machine,
as the second of two jobs walks it (with what the first kept, `shared_places.KEPT`, where the
tree keeps it), this tree's evalward and each `--before` tree's alternated, each in a fresh
interpreter: the median wall of each, how many folders it looked at (its `lstat` calls) and
how many it read (its `scandir` calls), counted in a third, untimed walk.

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
kept = {"kept": shared_places.KEPT} if hasattr(shared_places, "KEPT") else {}
shared_places.find(**kept)  # the job before
started = time.perf_counter()
places = shared_places.find(**kept)
wall = time.perf_counter() - started
looked, read, lstat, scandir = [0], [0], os.lstat, os.scandir
def counted(*args, **kwargs):
    looked[0] += 1
    return lstat(*args, **kwargs)
def counted_reads(*args, **kwargs):
    read[0] += 1
    return scandir(*args, **kwargs)
os.lstat, os.scandir = counted, counted_reads  # once more, untimed
shared_places.find(**kept)
print(json.dumps([wall, len(places.folders), places.complete, looked[0], read[0]]))
"""


def main() -> None:
    rounds, trees = alternation(__doc__, 9)
    walls: dict[str, list[float]] = {name: [] for name in trees}
    found: dict[str, tuple[int, bool, int, int]] = {}
    for _ in range(rounds):
        for name, src in trees.items():
            done = subprocess.run(
                [sys.executable, "-c", WALK],
                env={**os.environ, "PYTHONPATH": src},
                capture_output=True,
                text=True,
                check=True,
            )
            wall, places, complete, looked, read = json.loads(done.stdout)
            walls[name].append(wall * 1000)
            found[name] = (places, complete, looked, read)
    for name, measured in walls.items():
        places, complete, looked, read = found[name]
        print(
            f"{name}: the shared places' walk, median {statistics.median(measured):.0f} ms "
            f"(fastest {min(measured):.0f}) over {rounds} alternated rounds; {looked:,} "
            f"folders looked at, {read:,} read, {places} places found, "
            f"{'every' if complete else 'not every'} folder seen"
        )


if __name__ == "__main__":
    main()
