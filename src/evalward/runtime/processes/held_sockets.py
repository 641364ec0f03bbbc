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
from typing import Literal

from evalward.files.trees import shown
from evalward.runtime.processes import thread_groups

PROC = Path("/proc")
UNIX = PROC / "net" / "unix"

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_DONE = 3
UDIAG_SHOW_UID = 0x40
UNIX_DIAG_UID = 7
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port
_REQUEST = struct.Struct("=BBHIIIII")  # unix_diag_req: family, protocol, pad, states, inode,
# what to show, cookie
_MESSAGE = struct.Struct("=BBBBIII")  # unix_diag_msg: family, type, state, pad, inode, cookie
_ATTRIBUTE = struct.Struct("=HH")  # rtattr: length, type
_ANSWER_BYTES = 1 << 16
_ANSWER_SECONDS = 5.0


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
    kernel's socket diagnostics say; None when they say nothing (no netlink, a kernel before
    5.3 that gives no uid) or their answer is not whole. Read here, not through pyroute2:
    its 0.9.7 calls its sock_diag request work in progress, does not name UNIX_DIAG_UID
    (its attribute comes back as UNKNOWN), and costs 150-200 ms to import against this
    whole dump's 0.05 ms (its own dump: 2.5 ms), for four short structs."""
    try:
        diagnostics = socket.socket(
            socket.AF_NETLINK, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC, NETLINK_SOCK_DIAG
        )
    except OSError:
        return None
    with diagnostics:
        diagnostics.settimeout(_ANSWER_SECONDS)
        every_state = 0xFFFFFFFF
        request = _REQUEST.pack(
            socket.AF_UNIX, 0, 0, every_state, 0, UDIAG_SHOW_UID, every_state, every_state
        )
        flags = NLM_F_REQUEST | NLM_F_DUMP
        header = _HEADER.pack(_HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, flags, 1, 0)
        try:
            diagnostics.sendto(header + request, (0, 0))
            makers: dict[int, int] = {}
            read = "more"
            while read == "more":
                answer, _, answer_flags, _ = diagnostics.recvmsg(_ANSWER_BYTES)
                read = "not whole" if answer_flags & socket.MSG_TRUNC else _read(answer, makers)
        except OSError:  # the timeout too
            return None
        return makers if read == "done" else None


def _read(answer: bytes, makers: dict[int, int]) -> Literal["more", "done", "not whole"]:
    """Add one netlink answer's sockets to `makers`: whether the dump goes on, ended, or
    gave what the request does not ask for (an error, a message cut, no uid)."""
    at = 0
    while at + _HEADER.size <= len(answer):
        length, kind, _, _, _ = _HEADER.unpack_from(answer, at)
        if length < _HEADER.size or at + length > len(answer):
            return "not whole"
        if kind == NLMSG_DONE:
            return "done"
        if kind != SOCK_DIAG_BY_FAMILY or length < _HEADER.size + _MESSAGE.size:
            return "not whole"  # NLMSG_ERROR among them
        inode = _MESSAGE.unpack_from(answer, at + _HEADER.size)[4]
        maker = _uid_attribute(answer, at + _HEADER.size + _MESSAGE.size, at + length)
        if maker is None:
            return "not whole"
        makers[inode] = maker
        at += (length + 3) & ~3
    return "more" if at == len(answer) else "not whole"


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
