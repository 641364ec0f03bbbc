"""The size and file count of a folder an install is writing, checked while it writes.

The seal checks what an install left against its caps, but only once the installer is done;
an install that writes without end would fill the disk until its time limit. `watch` samples
the folder being built while the installer runs and returns as soon as it goes over a cap,
with the cap's message; the installer's process group is then ended
(runtime/environments/installers.py). What the environment keeps (the virtualenv,
`node_modules`) is held to the caps themselves; the installer's HOME (its download caches,
its scratch files, which the seal drops) may take as much again (`SCRATCH_SHARE`): a
framework whose wheels are cached beside what they unpack to is bounded by what it installs,
and a disk is still never filled. Each file is counted once, however many hard links it has
(uv links its cache into the virtualenv: such a file is the environment's). The folder is
walked in a thread without following links, and never more than half of the time: a folder
of many files is sampled less often.
"""

from __future__ import annotations

import asyncio
import math
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from evalward.errors import AgentRunError
from evalward.runtime.environments.environment_limits import EnvironmentLimits, over

MIN_INTERVAL = 0.25
"""The shortest pause between two samples, in seconds."""


SCRATCH_SHARE = 1.0
"""What the installer's HOME may hold beside the environment, as a share of its caps."""


def measure(folder: Path, most: float = math.inf) -> tuple[int, int]:
    """The entries under `folder` (files, folders, links; each inode once) and their bytes
    (files only), counted no further than `most` entries (a tree of millions of files is
    over its cap long before its end). What vanishes while it is walked is skipped."""
    return measure_apart(folder, None, most)[0]


def measure_apart(
    folder: Path, scratch: str | None, most: float = math.inf
) -> tuple[tuple[int, int], tuple[int, int]]:
    """(entries, bytes) under `folder` but its child named `scratch` (None: none is apart),
    then those of `scratch` that are not the same files: a file linked into both is the
    first's. `most` bounds the entries of both together."""
    apart = str(folder / scratch) if scratch else ""
    count = _Count(most, skip=apart)
    count.walk(str(folder))
    kept = len(count.seen), count.size
    if apart:
        count.skip = ""
        count.walk(apart)
    return kept, (len(count.seen) - kept[0], count.size - kept[1])


class _Count:
    """A walk's tally: each inode once, no further than `most` entries, `skip` not entered."""

    def __init__(self, most: float, skip: str = "") -> None:
        self.most = most
        self.skip = skip
        self.seen: set[tuple[int, int]] = set()
        self.size = 0

    def walk(self, top: str) -> None:
        pending = [top]
        while pending:
            where = pending.pop()
            try:
                entries = list(os.scandir(where))
            except OSError:
                continue
            for entry in entries:
                if entry.path == self.skip:
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                identity = (info.st_dev, info.st_ino)
                if identity in self.seen:
                    continue
                self.seen.add(identity)
                if len(self.seen) > self.most:
                    return
                if stat.S_ISDIR(info.st_mode):
                    pending.append(entry.path)
                elif stat.S_ISREG(info.st_mode):
                    self.size += info.st_size


@dataclass(frozen=True)
class Sample:
    """What an install has written so far: in what the environment keeps, and in the
    installer's HOME (its caches and scratch files)."""

    kept: tuple[int, int]
    scratch: tuple[int, int]


def sample(
    folder: Path, home: str | None, limits: EnvironmentLimits, before: Sample | None = None
) -> Sample:
    """One look at `folder`, no further than its caps need beyond what was there `before`
    (None: the whole folder)."""
    most = math.inf
    if before is not None:
        most = before.kept[0] + before.scratch[0] + (1 + SCRATCH_SHARE) * limits.files.value
    return Sample(*measure_apart(folder, home, most))


def over_while_writing(written: Sample, limits: EnvironmentLimits) -> None:
    """AgentRunError when an install has written more than `limits` allow in what the
    environment keeps, or more than `SCRATCH_SHARE` of them in its caches."""
    over(*written.kept, limits, "the install")
    files, size = written.scratch
    many = files > SCRATCH_SHARE * limits.files.value
    if many or size > SCRATCH_SHARE * limits.max_bytes:
        at = f"{limits.declared}: " if limits.declared else ""
        cap = limits.files if many else limits.size_mb
        raise AgentRunError(
            f"{at}the installer's caches and scratch files hold {files:,} files, folders "
            f"and links and {size / 1024 / 1024:,.1f} MB so far, more than the environment "
            f"itself may ({limits.files.value:,.0f}, {limits.size_mb.value:,g} MB): "
            f"{cap.told()}"
        )


async def watch(folder: Path, home: str | None, limits: EnvironmentLimits) -> AgentRunError:
    """Sample `folder` until what was written in it since the first sample goes over
    `limits`; the error that says which cap. What was there before (the installer's copy of
    the checkout) is not the install's. `home` names the child that is the installer's HOME
    (None: it has none)."""
    before = await asyncio.to_thread(sample, folder, home, limits)
    while True:
        started = time.monotonic()
        now = await asyncio.to_thread(sample, folder, home, limits, before)
        written = Sample(_less(now.kept, before.kept), _less(now.scratch, before.scratch))
        try:
            over_while_writing(written, limits)
        except AgentRunError as exc:
            return exc
        spent = time.monotonic() - started
        await asyncio.sleep(max(MIN_INTERVAL, spent))


def _less(now: tuple[int, int], before: tuple[int, int]) -> tuple[int, int]:
    return now[0] - before[0], now[1] - before[1]
