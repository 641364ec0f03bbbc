"""A loopback port for a server evalward starts (an http agent, a playground's service), and
whose server answers on it (Linux: the kernel's TCP tables, asked through `sock_diag`, or
read from /proc/net/tcp and tcp6 where it does not answer).

The port is free when evalward picks it, but free for anyone: another user's process (a pull
request's agent, reading the base server's `--port` from its command line) could bind it
first, or bind the same port on the other loopback address (`::1` beside `127.0.0.1`, which
`localhost` may reach first), and answer in the server's place. So in the action, before each
request, every loopback or wildcard listener on the port must be the agent user's, and the
request goes to a numeric address that one of those listeners holds: no other user can bind
an address and port a listener already holds.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evalward.errors import PortTaken
from evalward.runtime.processes import sock_diag

PROC_NET_TCP = ("/proc/net/tcp", "/proc/net/tcp6")
FAMILIES: dict[str, int] = {"/proc/net/tcp": socket.AF_INET, "/proc/net/tcp6": socket.AF_INET6}
"""The kernel's tables sock_diag answers for, by address family."""
TCP_LISTEN = "0A"


@dataclass(frozen=True)
class Listener:
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    uid: int
    inode: int = 0
    """Its socket's inode (0: the kernel names none), which says whose process holds it."""


HANDED: set[int] = set()
"""Ports `free_port` handed to a server of this process that `release_port` has not taken
back: the kernel's own book forgets a port once its probe socket closes, though the server
it was picked for may not have bound it yet."""


def free_port() -> int:
    """A port free on 127.0.0.1 now (free for anyone: `owned_host` says whose it is later)
    and not in `HANDED`: with many services starting at once, two were given one port, and
    the one that bound it second exited while the other answered its ready probe."""
    probes: list[socket.socket] = []
    try:
        while True:
            # each probe is held open until the end, so each asks for a port not yet offered
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            probes.append(probe)
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
            if port not in HANDED:
                HANDED.add(port)
                return port
    finally:
        for probe in probes:
            probe.close()


def release_port(port: int) -> None:
    """`port`'s server has ended: `free_port` may hand the port out again."""
    HANDED.discard(port)


def loopback_listeners(port: int, tables: tuple[str, ...] = PROC_NET_TCP) -> list[Listener]:
    """The listeners on `port` that a connection to a loopback address can reach: loopback
    and wildcard addresses, IPv4-mapped ones included. Empty where the kernel lists none."""
    found: list[Listener] = []
    for address, listening, uid, inode in _listening(tables):
        ip = unmapped(address)
        if listening == port and (ip.is_loopback or ip.is_unspecified):
            found.append(Listener(ip, uid, inode))
    return found


def _listening(tables: tuple[str, ...]) -> Iterator[sock_diag.Row]:
    """Every TCP listener these tables list: the kernel's own tables asked through sock_diag
    (it walks the listening sockets alone), a table read where it does not answer."""
    for table in tables:
        family = FAMILIES.get(table)
        rows = sock_diag.listeners(family) if family is not None else None
        if rows is not None:
            yield from rows
            continue
        for fields in tcp_rows((table,)):
            if len(fields) <= 9 or fields[3] != TCP_LISTEN:
                continue
            address, _, port_hex = fields[1].partition(":")
            try:
                yield proc_address(address), int(port_hex, 16), int(fields[7]), int(fields[9])
            except ValueError:
                continue


def tcp_rows(tables: tuple[str, ...]) -> Iterator[list[str]]:
    """The fields of each socket's line in these tables (/proc/net/tcp, tcp6); a table that
    cannot be read lists none."""
    for table in tables:
        try:
            lines = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            yield line.split()


def owned_host(port: int, uid: int, tables: tuple[str, ...] = PROC_NET_TCP) -> str:
    """The numeric host to send requests to, when every loopback listener on `port` is
    `uid`'s; raises PortTaken naming the strangers, or saying nothing of `uid` listens."""
    listeners = loopback_listeners(port, tables)
    strangers = sorted({entry.uid for entry in listeners if entry.uid != uid})
    if strangers:
        raise PortTaken(
            f"port {port} is held by a process of another user "
            f"(uid {', '.join(map(str, strangers))}), not by the agent's server: something "
            "else took the port before the server bound it"
        )
    own = [entry for entry in listeners if entry.uid == uid]
    if not own:
        raise PortTaken(f"nothing of the agent's user listens on port {port}")
    # a connection to 127.0.0.1 lands on an IPv4 listener or an IPv6 wildcard (dual-stack)
    ipv4 = any(entry.address.version == 4 or entry.address.is_unspecified for entry in own)
    return "127.0.0.1" if ipv4 else "::1"


def proc_address(hex_text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as /proc/net/tcp writes it: 32-bit words in the machine's byte order
    (little-endian on the machines this runs on)."""
    raw = bytes.fromhex(hex_text)
    if len(raw) == 4:
        return ipaddress.IPv4Address(raw[::-1])
    if len(raw) == 16:
        return ipaddress.IPv6Address(b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4)))
    raise ValueError(f"an address of {len(raw)} bytes")


def unmapped(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An IPv4 address an IPv6 socket speaks to as `::ffff:a.b.c.d`, as itself."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip
