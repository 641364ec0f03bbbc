"""Which processes hold the client end of a loopback TCP connection, or a listener
(Linux: /proc).

The model proxy knows a connection by its two addresses. The kernel finds the client's socket
by those addresses, swapped, and gives its inode (`sock_diag`: one lookup; /proc/net/tcp or
tcp6, which list every socket, where that finds no such socket); a process
holds the socket when a descriptor of any of its threads names that inode
(`thread_groups.descriptor_links`). A descriptor passed to another process (over a Unix
socket) is held by both, and each is found.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass

from evalward.runtime.processes import sock_diag, thread_groups
from evalward.runtime.processes.cgroups import cgroup_of
from evalward.runtime.processes.port_owner import (
    PROC_NET_TCP,
    TCP_LISTEN,
    proc_address,
    tcp_rows,
    unmapped,
)

Address = tuple[str, int]
"""A host and port, as a socket's `getpeername` and `getsockname` give them."""


@dataclass(frozen=True)
class Holder:
    """A process that holds the socket: what says whose it is."""

    pid: int
    session: int
    cgroup: str | None
    uids: frozenset[int]


def holders(
    client: Address, server: Address, *, among_others_than: int | None = None
) -> list[Holder]:
    """The live processes holding the client's end of the connection from `client` to
    `server` (not this one); empty when the kernel lists no such socket or no one holds it.
    `among_others_than`: a uid whose processes are not read (evalward's own, when the run's
    programs are another user's: reading every descriptor of every process costs tens of
    milliseconds a call where evalward's own hold hundreds)."""
    inode = socket_inode(client, server)
    if inode is None:
        return []
    named = f"socket:[{inode}]"
    found = []
    for pid in thread_groups.pids():
        if pid == os.getpid() or _owned_by(pid, among_others_than) or not _holds(pid, named):
            continue
        facts = thread_groups.facts(pid)
        if facts is not None:
            uids = frozenset(thread_groups.uids_of(pid))
            found.append(Holder(pid, facts.session, cgroup_of(pid), uids))
    return found


def sockets_holders(inodes: set[int], uid: int) -> dict[int, list[Holder]]:
    """For each socket of `inodes`, the live processes of `uid` (any thread's user) holding
    it: a listener a server of that user's bound, and which of its processes answer on it."""
    named = {f"socket:[{inode}]": inode for inode in inodes if inode}
    found: dict[int, list[Holder]] = {inode: [] for inode in inodes}
    for group in thread_groups.live_of({uid}):
        links = thread_groups.descriptor_links(group.pid)
        held = {named[target] for _, target in links if target in named}
        if held and group.pid != os.getpid():
            uids = frozenset(thread_groups.uids_of(group.pid))
            holder = Holder(group.pid, group.session, cgroup_of(group.pid), uids)
            for inode in held:
                found[inode].append(holder)
    return found


def socket_inode(client: Address, server: Address) -> int | None:
    """The inode of the socket whose own address is `client` and whose peer is `server`."""
    want = (_ip(client[0]), client[1], _ip(server[0]), server[1])
    asked = sock_diag.connection((want[0], want[1]), (want[2], want[3]))
    if asked is not None and asked.state != sock_diag.TCP_LISTEN and asked.inode:
        local, remote = asked.local, asked.remote
        if (unmapped(local[0]), local[1], unmapped(remote[0]), remote[1]) == want:
            return asked.inode
    # the kernel found another socket, none, or did not answer: its tables say (each read
    # walks every socket, where the lookup above is one)
    for fields in tcp_rows(PROC_NET_TCP):
        if len(fields) <= 9 or fields[3] == TCP_LISTEN or fields[9] == "0":
            continue
        try:
            if _end(fields[1]) + _end(fields[2]) == want:
                return int(fields[9])
        except ValueError:
            continue
    return None


def _end(text: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    address, _, port = text.partition(":")
    return unmapped(proc_address(address)), int(port, 16)


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return unmapped(ipaddress.ip_address(host.partition("%")[0]))


def _owned_by(pid: int, uid: int | None) -> bool:
    """Whether `pid`'s /proc entry is `uid`'s (its effective user's); False when gone."""
    if uid is None:
        return False
    try:
        return os.stat(f"{thread_groups.PROC}/{pid}").st_uid == uid  # noqa: PTH116
    except OSError:
        return False


def _holds(pid: int, named: str) -> bool:
    """Whether a descriptor of any thread of `pid` names the socket `named`."""
    return any(target == named for _, target in thread_groups.descriptor_links(pid))
