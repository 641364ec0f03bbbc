"""Unix sockets an agent user made that outlive its processes, and who holds them.

Ending every process of an agent user does not end every socket it made: a socket is a file
descriptor, which a process may hand to a process of another user over a Unix socket
(`SCM_RIGHTS`), and one that keeps it keeps the socket bound. An abstract socket (`@name`)
has no file a sweep could remove: held elsewhere, a head program's listener would still take
the connections of a later base run. The kernel lists the network namespace's Unix sockets in
`/proc/net/unix` by inode; the inode belongs to the user that made the socket, whoever holds
it now; and each thread's descriptors name the inodes it holds (`thread_groups`). So a socket
an agent user made is found with every process that holds it, once the user's own processes
are gone. A socket no process holds (one in flight, queued in another socket) is not seen.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from evalward.files.trees import shown
from evalward.runtime.processes import thread_groups

PROC = Path("/proc")
UNIX = PROC / "net" / "unix"


@dataclass(frozen=True)
class HeldSocket:
    """A Unix socket an agent user made, and the processes holding it."""

    name: str
    """Its address: `@name` (abstract), a path, or "" (unnamed)."""
    maker: int
    holders: tuple[int, ...]

    def said(self) -> str:
        """The socket, and who holds it, as the log says it."""
        holders = ", ".join(
            f"pid {pid} (uid {'/'.join(map(str, sorted(thread_groups.uids_of(pid)))) or '?'})"
            for pid in self.holders[:5]
        )
        more = f" and {len(self.holders) - 5} more" if len(self.holders) > 5 else ""
        name = shown(self.name) if self.name else "an unnamed one"
        return f"{name}, made by uid {self.maker}, held by {holders}{more}"


def held(uids: Collection[int]) -> list[HeldSocket]:
    """Every Unix socket one of `uids` made that a live process holds."""
    names = unix_sockets()
    if not names or not uids:
        return []
    found: dict[int, tuple[int, set[int]]] = {}
    for pid in thread_groups.pids():
        for inode, maker in _sockets_held(pid, names):
            if maker in uids:
                found.setdefault(inode, (maker, set()))[1].add(pid)
    return [
        HeldSocket(names[inode], maker, tuple(sorted(pids)))
        for inode, (maker, pids) in sorted(found.items())
    ]


def _sockets_held(pid: int, among: Collection[int]) -> list[tuple[int, int]]:
    """(inode, maker's uid) of every socket of `among` that a thread of `pid` holds
    (`thread_groups.descriptor_links`: each thread's own table too)."""
    held: dict[int, int] = {}
    for path, target in thread_groups.descriptor_links(pid):
        inode = target[8:-1] if target.startswith("socket:[") and target.endswith("]") else ""
        if not inode.isdigit() or int(inode) not in among or int(inode) in held:
            continue
        try:
            held[int(inode)] = os.stat(path).st_uid  # noqa: PTH116 - the socket inode: its maker
        except OSError:
            continue
    return list(held.items())


def unix_sockets() -> dict[int, str]:
    """inode → address of every Unix socket of this network namespace."""
    try:
        lines = UNIX.read_text(encoding="utf-8", errors="replace").splitlines()[1:]
    except OSError:
        return {}
    sockets: dict[int, str] = {}
    for line in lines:
        fields = line.split(maxsplit=7)
        if len(fields) >= 7 and fields[6].isdigit():
            sockets[int(fields[6])] = fields[7] if len(fields) > 7 else ""
    return sockets
