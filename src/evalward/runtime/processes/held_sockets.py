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

Reading every descriptor of every thread of the machine is the costly part (12 ms here with
a hundred threads; a busy runner has thousands), and most looks find no socket of an agent
user at all. So the kernel's socket diagnostics (`sock_diag`, netlink) are asked first which
user made each Unix socket (the same owner the inode has, Linux 5.3 and later): when none of
them is one of the users, no descriptor is read. A kernel that does not say, or an answer
that is not whole, leaves the look as it was.
"""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from evalward.files.trees import shown
from evalward.runtime.processes import sock_diag, thread_groups
from evalward.text.counts import first_few

PROC = Path("/proc")
UNIX = PROC / "net" / "unix"

UDIAG_SHOW_UID = 0x40
UNIX_DIAG_UID = 7
_REQUEST = struct.Struct("=BBHIIIII")  # unix_diag_req: family, protocol, pad, states, inode,
# what to show, cookie
_MESSAGE = struct.Struct("=BBBBIII")  # unix_diag_msg: family, type, state, pad, inode, cookie
_ATTRIBUTE = struct.Struct("=HH")  # rtattr: length, type


@dataclass(frozen=True)
class HeldSocket:
    """A Unix socket an agent user made, and the processes holding it."""

    name: str
    """Its address: `@name` (abstract), a path, or "" (unnamed)."""
    maker: int
    holders: tuple[int, ...]

    def said(self) -> str:
        """The socket, and who holds it, as the log says it."""
        holders = [
            f"pid {pid} (uid {'/'.join(map(str, sorted(thread_groups.uids_of(pid)))) or '?'})"
            for pid in self.holders[:5]
        ]
        name = shown(self.name) if self.name else "an unnamed one"
        held_by = first_few(holders, 5, total=len(self.holders))
        return f"{name}, made by uid {self.maker}, held by {held_by}"


def held(uids: Collection[int]) -> list[HeldSocket]:
    """Every Unix socket one of `uids` made that a live process holds."""
    names = unix_sockets()
    if not names or not uids:
        return []
    makers = socket_makers()
    candidates = {None, *uids}  # None: made since the kernel was asked, so looked for
    if makers is not None and not any(makers.get(inode) in candidates for inode in names):
        return []  # the kernel says another user made each one
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


def socket_makers() -> dict[int, int] | None:
    """inode → the uid that made it, of every Unix socket of this network namespace, as the
    kernel's socket diagnostics say (`sock_diag.messages`); None when they say nothing (no
    netlink, a kernel before 5.3 that gives no uid) or their answer is not whole. Read here,
    not through pyroute2: its 0.9.7 calls its sock_diag request work in progress, does not
    name UNIX_DIAG_UID (its attribute comes back as UNKNOWN), and costs 150-200 ms to import
    against this whole dump's 0.05 ms (its own dump: 2.5 ms), for four short structs."""
    every_state = 0xFFFFFFFF
    request = _REQUEST.pack(
        socket.AF_UNIX, 0, 0, every_state, 0, UDIAG_SHOW_UID, every_state, every_state
    )
    answer = sock_diag.messages(request, dump=True)
    return None if answer is None else makers_of(answer)


def makers_of(messages: list[bytes]) -> dict[int, int] | None:
    """inode → maker of each unix_diag_msg of the kernel's answer; None where one gives no
    uid (a kernel before 5.3) or is shorter than itself."""
    makers: dict[int, int] = {}
    for message in messages:
        if len(message) < _MESSAGE.size:
            return None
        maker = _uid_attribute(message, _MESSAGE.size, len(message))
        if maker is None:
            return None
        makers[_MESSAGE.unpack_from(message)[4]] = maker
    return makers


def _uid_attribute(answer: bytes, start: int, end: int) -> int | None:
    """The UNIX_DIAG_UID attribute among a message's attributes, or None."""
    while start + _ATTRIBUTE.size <= end:
        length, kind = _ATTRIBUTE.unpack_from(answer, start)
        if length < _ATTRIBUTE.size or start + length > end:
            return None
        if kind == UNIX_DIAG_UID and length >= _ATTRIBUTE.size + 4:
            uid: int = struct.unpack_from("=I", answer, start + _ATTRIBUTE.size)[0]
            return uid
        start += (length + 3) & ~3
    return None
