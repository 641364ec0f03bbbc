"""The size and file count of a folder an install is writing, checked while it writes.

The seal checks what an install left against its caps, but only once the installer is done;
an install that writes without end would fill the disk until its time limit. `watch` samples
the folder being built (everything in it: what is installed, the installer's caches and its
copy of the checkout) while the installer runs and returns as soon as it goes over a cap,
with the cap's message; the installer's process group is then ended (runtime/installers.py).
Each file is counted once, however many hard links it has (uv links its cache into the
virtualenv). The folder is walked in a thread without following links, and never more than
half of the time: a folder of many files is sampled less often.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path

from evalward.errors import AgentRunError
from evalward.runtime.environment_limits import EnvironmentLimits, over

MIN_INTERVAL = 0.25
"""The shortest pause between two samples, in seconds."""


def measure(folder: Path) -> tuple[int, int]:
    """The entries under `folder` (files, folders, links; each inode once) and their bytes
    (files only). What vanishes while it is walked is skipped."""
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
            if stat.S_ISDIR(info.st_mode):
                pending.append(entry.path)
            elif stat.S_ISREG(info.st_mode):
                size += info.st_size
    return len(seen), size


def check(folder: Path, limits: EnvironmentLimits) -> None:
    """AgentRunError when what is under `folder` goes over `limits`."""
    entries, size = measure(folder)
    over(entries, size, limits)


async def watch(folder: Path, limits: EnvironmentLimits) -> AgentRunError:
    """Sample `folder` until it goes over `limits`; the error that says which cap."""
    while True:
        started = time.monotonic()
        try:
            await asyncio.to_thread(check, folder, limits)
        except AgentRunError as exc:
            return exc
        spent = time.monotonic() - started
        await asyncio.sleep(max(MIN_INTERVAL, spent))
