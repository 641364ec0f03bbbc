"""The size and file count of a folder an install is writing, checked while it writes.

The seal checks what an install left against its caps, but only once the installer is done;
an install that writes without end would fill the disk until its time limit. `watch` samples
the folder being built (everything written in it once the installer starts: what is
installed, and the installer's caches and scratch files) while the installer runs and
returns as soon as it goes over a cap, with the cap's message; the installer's process group
is then ended (runtime/environments/installers.py).
Each file is counted once, however many hard links it has (uv links its cache into the
virtualenv). The folder is walked in a thread without following links, and never more than
half of the time: a folder of many files is sampled less often.
"""

from __future__ import annotations

import asyncio
import math
import os
import stat
import time
from pathlib import Path

from evalward.errors import AgentRunError
from evalward.runtime.environments.environment_limits import EnvironmentLimits, over

MIN_INTERVAL = 0.25
"""The shortest pause between two samples, in seconds."""


def measure(folder: Path, most: float = math.inf) -> tuple[int, int]:
    """The entries under `folder` (files, folders, links; each inode once) and their bytes
    (files only), counted no further than `most` entries (a tree of millions of files is
    over its cap long before its end). What vanishes while it is walked is skipped."""
    seen: set[tuple[int, int]] = set()
    size = 0
    pending = [str(folder)]
    while pending:
        where = pending.pop()
        try:
            entries = list(os.scandir(where))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            identity = (info.st_dev, info.st_ino)
            if identity in seen:
                continue
            seen.add(identity)
            if len(seen) > most:
                return len(seen), size
            if stat.S_ISDIR(info.st_mode):
                pending.append(entry.path)
            elif stat.S_ISREG(info.st_mode):
                size += info.st_size
    return len(seen), size


def over_while_writing(entries: int, size: int, limits: EnvironmentLimits) -> None:
    """AgentRunError when an install has written more than `limits` allow: it counts what
    it writes beside the environment too (its caches, its scratch files)."""
    over(entries, size, limits, "the install, counting its caches,")


async def watch(folder: Path, limits: EnvironmentLimits) -> AgentRunError:
    """Sample `folder` until what was written in it since the first sample goes over
    `limits`; the error that says which cap. What was there before (the installer's copy of
    the checkout) is not the install's."""
    entries_before, size_before = await asyncio.to_thread(measure, folder)
    while True:
        started = time.monotonic()
        most = entries_before + limits.files.value
        entries, size = await asyncio.to_thread(measure, folder, most)
        try:
            over_while_writing(entries - entries_before, size - size_before, limits)
        except AgentRunError as exc:
            return exc
        spent = time.monotonic() - started
        await asyncio.sleep(max(MIN_INTERVAL, spent))
