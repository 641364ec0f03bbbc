"""POSIX message queues, listed where no mqueue file system is mounted.

A POSIX message queue (`mq_open`) lives in the machine's IPC namespace, not in a folder: it
shows as a file only on an mqueue file system (`/dev/mqueue`, which Docker mounts in a
container and many hosts do not). Without one, a queue a head program leaves is a name a base
program can open, and there is nothing to sweep. Root may mount an instance of its own (every
instance shows the namespace's queues) and sweep it as any shared folder; where the kernel
refuses (no `CAP_SYS_ADMIN`), the log says the queues cannot be listed. The instance another
job on the machine mounted for itself does not count as one mounted: it is in a folder of
that job's (not swept) and goes when that job ends, while this job's turns go on.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import tempfile
from pathlib import Path

from evalward.runtime.isolation.shared_places import MOUNTS, unescaped

MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x2, 0x4, 0x8
MNT_DETACH = 0x2
OWN_PREFIX = "evalward-mqueue-"
"""How the folder of an instance a job mounts for itself (`mount_own`) is named."""


def mounted() -> bool:
    """Whether an mqueue file system is mounted where this process sees it, but for one a
    job mounted for itself (`mount_own`: this one's or another's)."""
    return any(not point.name.startswith(OWN_PREFIX) for point in points())


def points() -> list[Path]:
    """Where every mqueue file system this process sees is mounted (its path `unescaped`)."""
    try:
        lines = MOUNTS.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [
        Path(unescaped(left.split()[4]))
        for left, _, right in (line.partition(" - ") for line in lines)
        if right.startswith("mqueue ") and len(left.split()) > 4
    ]


def mount_own() -> Path | str:
    """An mqueue file system mounted in a root-only folder of its own, or why it cannot be."""
    folder = Path(tempfile.mkdtemp(prefix=OWN_PREFIX))
    libc = ctypes.CDLL(None, use_errno=True)
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    if libc.mount(b"mqueue", os.fsencode(folder), b"mqueue", flags, None) != 0:
        why = os.strerror(ctypes.get_errno())
        folder.rmdir()
        return why
    return folder


def unmount(folder: Path) -> None:
    """Let go of a file system `mount_own` mounted, and remove its folder."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.umount2(os.fsencode(folder), MNT_DETACH)
    with contextlib.suppress(OSError):
        folder.rmdir()
