"""The processes of the machine as the kernel keeps them: thread groups, read from /proc.

`/proc/<pid>/stat` speaks for a process's first thread only. When that thread ends on its own
(the `exit` system call, not `exit_group`) while another thread runs, the process shows as a
zombie (`Z`) yet goes on running: reading its state there, it looks dead and is passed over.
So a process here is alive while any of its threads is, and runs as every uid any of its
threads runs as (real, effective or saved: `/proc/<pid>/status` itself may say root for a
process that made itself undumpable, and a thread may change its own uid alone). Signalling
the process (its thread group id) reaches every thread, even once the first has ended.

A job reads every process of the machine several times a run (each turn's sweep, each base
run's check for a head process), so /proc is read with plain system calls, as bytes: no
path object or decoded text per process and thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

PROC = "/proc"
DEAD = (b"Z", b"X")
READ_AT_ONCE = 1 << 16
"""More than a `stat` or `status` file of /proc holds."""


@dataclass(frozen=True)
class ThreadGroup:
    """One live process: what the sweeps need to know of it."""

    pid: int
    session: int
    started: int
    """Its start time, in clock ticks since boot."""
    parent: int


def facts(pid: int) -> ThreadGroup | None:
    """The process `pid` while any of its threads is alive; None when it is gone or every
    thread of it has ended (a zombie waiting to be reaped, which runs nothing)."""
    text = _read(f"{PROC}/{pid}/stat")
    fields = text[text.rfind(b")") + 2 :].split()  # after "pid (command) "
    if len(fields) <= 19 or not fields[3].lstrip(b"-").isdigit():
        return None
    if fields[0] in DEAD and not _a_thread_alive(pid):
        return None
    return ThreadGroup(pid, int(fields[3]), int(fields[19]), int(fields[1]))


def pids() -> Iterator[int]:
    """Every process id now (thread group ids: /proc lists no other thread at its top)."""
    yield from map(int, numbered(PROC))


def uids_of(pid: int) -> set[int]:
    """Every uid (real, effective, saved) any thread of `pid` runs as; empty when gone. A
    process of one thread, alive, is its first thread: its own `status` says it (most
    processes; each thread's is read only where there are more, or the first has ended)."""
    status = _read(f"{PROC}/{pid}/status")
    if _one_live_thread(status):
        return status_uids(status)
    tasks = [f"{PROC}/{pid}/task/{task}/status" for task in numbered(f"{PROC}/{pid}/task")]
    found = {uid for path in tasks for uid in status_uids(_read(path))}
    return found or status_uids(status)  # no task listed: its own


def status_uids(status: bytes) -> set[int]:
    """The real, effective and saved uid a `status` file names (its `Uid:` line: never the
    first, and a process's name there cannot hold a line break)."""
    at = status.find(b"\nUid:")
    if at < 0:
        return set()
    end = status.find(b"\n", at + 1)
    uids = status[at + 1 : end if end >= 0 else len(status)].split()[1:4]
    return {int(uid) for uid in uids if uid.isdigit()}


def _one_live_thread(status: bytes) -> bool:
    """Whether a `status` file is of a process of one thread, its first, alive: a first
    thread that has ended is still counted while another runs on (`Threads`), and its
    `status` then speaks for it, not for the others."""
    threads, state = status.find(b"\nThreads:\t1\n"), status.find(b"\nState:\t")
    return threads >= 0 and state >= 0 and status[state + 8 : state + 9] not in DEAD


def live_of(uids: set[int] | frozenset[int]) -> list[ThreadGroup]:
    """Every live process any thread of which runs as one of `uids`."""
    return [group for pid in pids() if uids_of(pid) & uids and (group := facts(pid)) is not None]


def _a_thread_alive(pid: int) -> bool:
    """Whether a thread of `pid` other than its ended first one still runs."""
    for task in numbered(f"{PROC}/{pid}/task"):
        text = _read(f"{PROC}/{pid}/task/{task}/stat")
        state = text[text.rfind(b")") + 2 :][:1]
        if state and state not in DEAD:
            return True
    return False


def descriptor_links(pid: int) -> Iterator[tuple[str, str]]:
    """(path, target) of each open descriptor of each thread of `pid`: a thread that unshared
    its table (`unshare(CLONE_FILES)`) holds what it opens there alone, and `/proc/<pid>/fd`
    lists the first thread's table only. The kernel lets a thread's descriptors be read all
    or none (ptrace access), so a table refused at its first is read no further: a machine's
    init may hold hundreds that no one in its container may read, at every look."""
    for task in numbered(f"{PROC}/{pid}/task"):
        try:
            with os.scandir(f"{PROC}/{pid}/task/{task}/fd") as entries:
                for entry in entries:
                    try:
                        target = os.readlink(entry.path)  # noqa: PTH115
                    except PermissionError:
                        break
                    except OSError:
                        continue
                    yield entry.path, target
        except OSError:
            continue


def numbered(folder: str) -> list[str]:
    """The entries of a folder of /proc that are numbers (processes, a process's threads,
    a thread's descriptors); none once it is gone."""
    try:
        with os.scandir(folder) as entries:
            return [entry.name for entry in entries if entry.name.isdigit()]
    except OSError:
        return []


def _read(path: str) -> bytes:
    """A file of /proc whole (one read: the kernel makes it at once), or nothing (b"") once
    gone: no process and no uid is read from that."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        return os.read(handle, READ_AT_ONCE)
    except OSError:
        return b""
    finally:
        os.close(handle)
