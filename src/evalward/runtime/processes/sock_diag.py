"""The TCP sockets listening in this network namespace, as the kernel's sock_diag netlink
interface lists them (Linux), for `port_owner`.

/proc/net/tcp and tcp6 are written by walking every bucket of the kernel's TCP tables: each
read cost about 10 ms on a machine with a few hundred sockets (tcp6 as much with none in it),
and an http agent's port is checked before each request. Asked for listeners only, sock_diag
walks the listening table alone and answers the same rows (address, port, uid). None where
the kernel does not answer it (no sock_diag, a family it does not serve): the caller reads
that family's /proc table then, as before.
"""

from __future__ import annotations

import ipaddress
import socket
import struct

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3
TCP_LISTEN = 10
ANSWER_SECONDS = 5.0
"""A bound on waiting for the kernel's answer, which comes at once: past it, /proc is read."""

_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
_REQUEST = struct.Struct("=BBBBI48s")  # inet_diag_req_v2: family, protocol, ext, pad, states, id
_MESSAGE = struct.Struct("=BBBB2s2s16s16sI8sIIIII")  # inet_diag_msg

Row = tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int, int]
"""A listener's local address, port and uid."""


def listeners(family: int) -> list[Row] | None:
    """Every TCP listener of `family` (AF_INET or AF_INET6); None when the kernel did not
    answer the question whole."""
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as sock:
            sock.settimeout(ANSWER_SECONDS)
            request = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN, b"")
            flags = NLM_F_REQUEST | NLM_F_DUMP
            header = _HEADER.pack(_HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, flags, 1, 0)
            sock.sendall(header + request)
            return _read_dump(sock, family)
    except (OSError, struct.error):
        return None


def _read_dump(sock: socket.socket, family: int) -> list[Row] | None:
    """The rows of the dump's messages, until the kernel says it is done."""
    rows: list[Row] = []
    while True:
        data = sock.recv(1 << 16)
        if not data:
            return None
        at = 0
        while at + _HEADER.size <= len(data):
            length, kind, _, _, _ = _HEADER.unpack_from(data, at)
            if length < _HEADER.size or at + length > len(data):
                return None
            if kind == NLMSG_DONE:
                return rows
            if kind == NLMSG_ERROR or kind != SOCK_DIAG_BY_FAMILY:
                return None
            row = _row(data[at + _HEADER.size : at + length], family)
            if row is not None:
                rows.append(row)
            at += (length + 3) & ~3  # each message is aligned to 4 bytes


def _row(message: bytes, family: int) -> Row | None:
    """One listener's address, port and uid; None for a socket of another state or family."""
    fields = _MESSAGE.unpack_from(message)
    found, state, source_port, source, uid = fields[0], fields[1], fields[4], fields[6], fields[13]
    if found != family or state != TCP_LISTEN:
        return None
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    if family == socket.AF_INET:
        address = ipaddress.IPv4Address(source[:4])
    else:
        address = ipaddress.IPv6Address(source)
    return address, int.from_bytes(source_port, "big"), int(uid)
