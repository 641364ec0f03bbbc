"""How long a test waits for a subprocess before calling it hung: a base limit, stretched by
how busy the machine is when the wait starts.

A limit is a guard against a hang, not a measure of speed: on a 2-core machine that other
work keeps at a load of 8, a run that takes 9 s alone takes minutes, and a fixed 120 s would
fail a correct run. The load average per core (at least 1) multiplies the base, up to
MAX_STRETCH times, so a real hang still ends the test.
"""

from __future__ import annotations

import os

MAX_STRETCH = 8.0


def stretch() -> float:
    """The machine's one-minute load average per core, between 1 and MAX_STRETCH."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this platform: as if idle
        return 1.0
    return min(MAX_STRETCH, max(1.0, load / (os.cpu_count() or 1)))


def subprocess_limit(base: float = 120.0) -> float:
    """Seconds to wait for a subprocess whose run takes well under `base` on an idle machine."""
    return base * stretch()
