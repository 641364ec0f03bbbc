"""The cyclic garbage collector during start-up: off until the suite (or the shard results
to merge) is read.

Start-up imports about 500 modules and then loads the suite: objects that live as long as the
process, which every collection in between would rescan (about 80 ms before the first model
call in bench/p1_overhead.py). The process's entry point turns the collector off; the first
resource load (or a merge, which reads results instead) ends that by freezing everything built
so far out of the collector's sight (`gc.freeze`) and turning it back on, so later collections
scan only what the run itself creates. Commands that do neither are short.

Only the entry point pauses: code that calls `main()` in a long-lived process (the tests) never
freezes what it built.
"""

from __future__ import annotations

import gc

_paused = False


def pause_collector() -> None:
    """Called once, first thing in the process."""
    global _paused
    _paused = gc.isenabled()
    gc.disable()


def end_pause() -> None:
    """Called where start-up ends (after each resource load, and once shard results are read);
    ends a start-up pause the first time."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
