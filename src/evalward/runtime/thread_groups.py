"""The processes of the machine as the kernel keeps them: thread groups, read from /proc.

`/proc/<pid>/stat` speaks for a process's first thread only. When that thread ends on its own
(the `exit` system call, not `exit_group`) while another thread runs, the process shows as a
zombie (`Z`) yet goes on running: reading its state there, it looks dead and is passed over.
So a process here is alive while any of its threads is, and runs as every uid any of its
threads runs as (real, effective or saved: `/proc/<pid>/status` itself may say root for a
process that made itself undumpable, and a thread may change its own uid alone). Signalling
the process (its thread group id) reaches every thread, even once the first has ended.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
DEAD = ("Z", "X")


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
    try:
        text = (PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # after "pid (command) "
    if len(fields) <= 19 or not fields[3].lstrip("-").isdigit():
        return None
    if fields[0] in DEAD and not _a_thread_alive(pid):
        return None
    return ThreadGroup(pid, int(fields[3]), int(fields[19]), int(fields[1]))


def pids() -> Iterator[int]:
    """Every process id now (thread group ids: /proc lists no other thread at its top)."""
    try:
        entries = [entry.name for entry in PROC.iterdir()]
    except OSError:
        return
    for name in entries:
        if name.isdigit():
            yield int(name)


def uids_of(pid: int) -> set[int]:
    """Every uid (real, effective, saved) any thread of `pid` runs as; empty when gone."""
    found: set[int] = set()
    for task in _tasks(pid):
        try:
            status = (PROC / str(pid) / "task" / task / "status").read_text(
                encoding="utf-8", errors="replace"
            )
        except OSError:
            continue
        found.update(status_uids(status))
    if not found:  # no task listed: read the process's own
        try:
            status = (PROC / str(pid) / "status").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return found
        found.update(status_uids(status))
    return found


def status_uids(status: str) -> set[int]:
    """The real, effective and saved uid a `status` file names."""
    uids = next((x.split()[1:4] for x in status.splitlines() if x.startswith("Uid:")), [])
    return {int(uid) for uid in uids if uid.isdigit()}


def live_of(uids: set[int] | frozenset[int]) -> list[ThreadGroup]:
    """Every live process any thread of which runs as one of `uids`."""
    found = []
    for pid in pids():
        if uids_of(pid) & uids and (group := facts(pid)) is not None:
            found.append(group)
    return found


def _a_thread_alive(pid: int) -> bool:
    """Whether a thread of `pid` other than its ended first one still runs."""
    for task in _tasks(pid):
        try:
            text = (PROC / str(pid) / "task" / task / "stat").read_text(
                encoding="utf-8", errors="replace"
            )
        except OSError:
            continue
        state = text[text.rfind(")") + 2 :][:1]
        if state and state not in DEAD:
            return True
    return False


def _tasks(pid: int) -> list[str]:
    try:
        return [task.name for task in (PROC / str(pid) / "task").iterdir() if task.name.isdigit()]
    except OSError:
        return []
