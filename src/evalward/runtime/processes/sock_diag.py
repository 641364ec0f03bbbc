"""The kernel's socket diagnostics (sock_diag, netlink) for this network namespace: one
request, its messages (`messages`), and the TCP sockets they describe (`listeners`,
`connection`); `held_sockets` asks it of Unix sockets.

/proc/net/tcp and tcp6 are written by walking every bucket of the kernel's TCP tables: each
read cost about 10 ms on a machine with a few hundred sockets (tcp6 as much with none in it),
and an http agent's port is checked before each request. Asked for listeners only, sock_diag
walks the listening table alone and answers the same rows (address, port, uid, inode). None where
the kernel does not answer it (no sock_diag, a family it does not serve): the caller reads
that family's /proc table then, as before. pyroute2's DiagSocket asks the same, but importing
it costs a process about 0.1 s of CPU (0.10-0.11 s against 0.01 s for this module's
imports), more than the reads it would save a gate; the request and its messages are a few
structs.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from dataclasses import dataclass
from typing import Literal

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3
TCP_LISTEN = 10
ANSWER_SECONDS = 5.0
"""A bound on waiting for the kernel's answer, which comes at once: past it, /proc is read."""
ANSWER_BYTES = 1 << 16
"""The most one read of the kernel's answer takes: a message cut there is not whole."""

_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
_REQUEST = struct.Struct("=BBBBI48s")  # inet_diag_req_v2: family, protocol, ext, pad, states, id
_MESSAGE = struct.Struct("=BBBB2s2s16s16sI8sIIIII")  # inet_diag_msg

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Row = tuple[IpAddress, int, int, int]
"""A listener's local address, port, uid and inode."""
ALL_STATES = 0xFFFFFFFF
NO_COOKIE = b"\xff" * 8
"""INET_DIAG_NOCOOKIE: a lookup by addresses alone."""


@dataclass(frozen=True)
class Socket:
    """One socket as the kernel describes it."""

    family: int
    state: int
    local: tuple[IpAddress, int]
    remote: tuple[IpAddress, int]
    uid: int
    inode: int


def listeners(family: int) -> list[Row] | None:
    """Every TCP listener of `family` (AF_INET or AF_INET6); None when the kernel did not
    answer the question whole."""
    found = _ask(family, 1 << TCP_LISTEN, b"", NLM_F_DUMP)
    if found is None:
        return None
    return [
        (each.local[0], each.local[1], each.uid, each.inode)
        for each in found
        if each.family == family and each.state == TCP_LISTEN
    ]


def connection(local: tuple[IpAddress, int], remote: tuple[IpAddress, int]) -> Socket | None:
    """The socket the kernel finds for these two ends (its own address first): one lookup,
    where /proc/net/tcp lists every socket. The kernel may answer with another (a listener
    on the local port, a closed connection's): the caller checks what it got. None when it
    finds none or does not answer."""
    if local[0].version != remote[0].version:
        return None
    family = socket.AF_INET if local[0].version == 4 else socket.AF_INET6
    sockid = (
        local[1].to_bytes(2, "big")
        + remote[1].to_bytes(2, "big")
        + local[0].packed.ljust(16, b"\0")
        + remote[0].packed.ljust(16, b"\0")
        + b"\0\0\0\0"
        + NO_COOKIE
    )
    found = _ask(family, ALL_STATES, sockid, 0)
    return found[0] if found else None


def _ask(family: int, states: int, sockid: bytes, flags: int) -> list[Socket] | None:
    """The kernel's answer to one inet_diag request for TCP sockets of `family`."""
    request = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, states, sockid)
    answer = messages(request, dump=bool(flags & NLM_F_DUMP))
    try:
        return None if answer is None else [_socket(message) for message in answer]
    except (struct.error, ValueError):
        return None


Read = Literal["more", "done", "not whole"]
"""Where one read of an answer leaves it: it goes on, it ended, or it is not what was asked
(an error, a message cut)."""


def messages(request: bytes, *, dump: bool) -> list[bytes] | None:
    """Each message the kernel answers a sock_diag `request` (a family's `*_diag_req`) with,
    without its header: every one of a dump until it says it is done, or a lookup's one.
    None when it does not answer whole: no netlink, an error (a lookup that finds nothing is
    one), a message cut, no answer within ANSWER_SECONDS."""
    flags = NLM_F_REQUEST | (NLM_F_DUMP if dump else 0)
    header = _HEADER.pack(_HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, flags, 1, 0)
    found: list[bytes] = []
    try:
        with socket.socket(
            socket.AF_NETLINK, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC, NETLINK_SOCK_DIAG
        ) as sock:
            sock.settimeout(ANSWER_SECONDS)
            sock.sendto(header + request, (0, 0))
            read: Read = "more"
            while read == "more":
                data, _, answer_flags, _ = sock.recvmsg(ANSWER_BYTES)
                read = "not whole" if answer_flags & socket.MSG_TRUNC else framed(data, found)
                if read == "more" and found and not dump:
                    read = "done"  # a lookup's one answer
    except (OSError, struct.error):  # the timeout too
        return None
    return found if read == "done" else None


def framed(data: bytes, found: list[bytes]) -> Read:
    """Add the messages of one read of the kernel's answer to `found`, each without its
    header."""
    at = 0
    while at + _HEADER.size <= len(data):
        length, kind, _, _, _ = _HEADER.unpack_from(data, at)
        if length < _HEADER.size or at + length > len(data):
            return "not whole"
        if kind == NLMSG_DONE:
            return "done"
        if kind != SOCK_DIAG_BY_FAMILY:
            return "not whole"  # NLMSG_ERROR
        found.append(data[at + _HEADER.size : at + length])
        at += (length + 3) & ~3  # each message is aligned to 4 bytes
    return "more" if data and at == len(data) else "not whole"


def _socket(message: bytes) -> Socket:
    """One inet_diag_msg."""
    fields = _MESSAGE.unpack_from(message)
    family, state, local_port, remote_port, local, remote = fields[:2] + fields[4:8]
    size = 4 if family == socket.AF_INET else 16
    return Socket(
        family,
        state,
        (ipaddress.ip_address(local[:size]), int.from_bytes(local_port, "big")),
        (ipaddress.ip_address(remote[:size]), int.from_bytes(remote_port, "big")),
        int(fields[13]),
        int(fields[14]),
    )
