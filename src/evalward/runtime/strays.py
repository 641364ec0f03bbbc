"""Ending every process an agent user left running (Linux: /proc).

An install's process group is killed when its installer ends, but a process it started may
have left the group (`setsid`, a double fork) and still hold a file of the environment open,
or keep changing it. Before an environment is sealed, every process of the installing user
goes, but those in the session of a program evalward itself started and still runs (another
agent of the same side, mid-run): those it ends at their own end. A process forking as fast
as it is killed is killed again, round after round, until none is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

from evalward.errors import AgentRunError

ROUNDS = 200


class Sessions:
    """The sessions of the programs evalward started (agents' programs, installers) while
    they run, and a lock held while one starts (its session is not yet known) or while the
    strays of a user are ended: a program starting meanwhile is never taken for one."""

    def __init__(self) -> None:
        self.live: set[int] = set()
        self.lock = asyncio.Lock()

    async def end_strays(self, uid: int) -> int:
        """`end_strays` of `uid`, sparing every live session."""
        async with self.lock:
            return await asyncio.to_thread(end_strays, uid, set(self.live))


def end_strays(uid: int, spared_sessions: set[int]) -> int:
    """SIGKILL every live process of `uid` outside `spared_sessions`, until there is none.
    Returns how many it killed; AgentRunError when they outlast every round."""
    killed = 0
    for _ in range(ROUNDS):
        strays = [pid for pid, session in _processes_of(uid) if session not in spared_sessions]
        if not strays:
            return killed
        for pid in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.01)  # the signals land; zombies are not counted
    raise AgentRunError(f"processes of uid {uid} kept starting faster than they were ended")


def uids_running() -> set[int]:
    """Every uid a live process runs as (real, effective or saved)."""
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        uids = next((x.split()[1:4] for x in status.splitlines() if x.startswith("Uid:")), [])
        found.update(int(uid) for uid in uids if uid.isdigit())
    return found


def _processes_of(uid: int) -> list[tuple[int, int]]:
    """(pid, session id) of every process running as `uid` (its real, effective or saved
    uid: /proc/<pid> itself may say root for a process that made itself undumpable) that is
    not a zombie."""
    found: list[tuple[int, int]] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text(encoding="utf-8", errors="replace")
            text = (entry / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        uids = next((x.split()[1:4] for x in status.splitlines() if x.startswith("Uid:")), [])
        fields = text[text.rfind(")") + 2 :].split()  # after "pid (command) "
        if str(uid) in uids and len(fields) > 3 and fields[0] not in ("Z", "X"):
            found.append((int(entry.name), int(fields[3])))
    return found
