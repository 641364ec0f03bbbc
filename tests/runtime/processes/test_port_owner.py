"""Reading the kernel's socket tables for an http agent's port: which listeners a loopback
connection can reach, and whose they are."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from evalward.errors import PortTaken
from evalward.runtime.processes import sock_diag
from evalward.runtime.processes.port_owner import loopback_listeners, owned_host
from fakes.http import quiet_listener

pytestmark = pytest.mark.unit

HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"


def row(address: str, port: int, state: str, uid: int) -> str:
    return f"   0: {address}:{port:04X} 00000000:0000 {state} 0:0 00:0 0 {uid} 0 123 1\n"


def tables(tmp_path: Path, tcp: list[str], tcp6: list[str]) -> tuple[str, str]:
    (tmp_path / "tcp").write_text(HEADER + "".join(tcp))
    (tmp_path / "tcp6").write_text(HEADER + "".join(tcp6))
    return str(tmp_path / "tcp"), str(tmp_path / "tcp6")


def test_loopback_and_wildcard_listeners_count_and_other_addresses_do_not(tmp_path: Path) -> None:
    files = tables(
        tmp_path,
        [
            row("0100007F", 8080, "0A", 10002),  # 127.0.0.1, listening
            row("0A00000A", 8080, "0A", 0),  # 10.0.0.10: a service on another address
            row("0100007F", 8080, "01", 0),  # an established connection, not a listener
            row("0100007F", 8081, "0A", 0),  # another port
        ],
        [
            row("00000000000000000000000001000000", 8080, "0A", 10001),  # ::1
            row("0000000000000000FFFF00000100007F", 8080, "0A", 10003),  # ::ffff:127.0.0.1
        ],
    )
    found = {(str(entry.address), entry.uid) for entry in loopback_listeners(8080, files)}
    assert found == {("127.0.0.1", 10002), ("::1", 10001), ("127.0.0.1", 10003)}


def test_the_agents_own_listeners_give_the_address_to_use(tmp_path: Path) -> None:
    only_v6 = tables(tmp_path, [], [row("00000000000000000000000001000000", 9000, "0A", 7)])
    assert owned_host(9000, 7, only_v6) == "::1"
    wildcard_v6 = tables(tmp_path, [], [row("0" * 32, 9000, "0A", 7)])  # dual-stack ::
    assert owned_host(9000, 7, wildcard_v6) == "127.0.0.1"
    with pytest.raises(PortTaken, match="nothing of the agent's user listens on port 9000"):
        owned_host(9000, 8, tables(tmp_path, [], []))
    shared = tables(tmp_path, [row("0100007F", 9000, "0A", 7)], [row("0" * 32, 9000, "0A", 0)])
    with pytest.raises(PortTaken, match=r"another user \(uid 0\)"):
        owned_host(9000, 7, shared)


def _listening_sockets() -> tuple[list[socket.socket], list[int]]:
    """This process's listeners on 127.0.0.1, ::1, a dual-stack :: and ::ffff:127.0.0.1, off
    the ports evalward's servers are given (one bound beside them would be listed too)."""
    held = [
        quiet_listener(family, host, v6only=v6only)
        for family, host, v6only in (
            (socket.AF_INET, "127.0.0.1", None),
            (socket.AF_INET6, "::1", None),
            (socket.AF_INET6, "::", 0),
            (socket.AF_INET6, "::ffff:127.0.0.1", 0),
        )
    ]
    return held, [int(sock.getsockname()[1]) for sock in held]


def test_the_kernels_listeners_are_the_same_through_sock_diag_as_in_its_tables() -> None:
    """The kernel's own tables are asked through sock_diag (a read of /proc/net/tcp walks
    every socket); the same tables read as files (by another name) list the same listeners."""
    held, ports = _listening_sockets()
    try:
        as_files = ("/proc/self/net/tcp", "/proc/self/net/tcp6")
        for port in ports:
            asked = loopback_listeners(port)
            assert asked and sorted(map(repr, asked)) == sorted(
                map(repr, loopback_listeners(port, as_files))
            )
            assert owned_host(port, os.getuid()) == owned_host(port, os.getuid(), as_files)
        assert sock_diag.listeners(socket.AF_INET) is not None
    finally:
        for sock in held:
            sock.close()


def test_a_kernel_that_does_not_answer_sock_diag_has_its_tables_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held, ports = _listening_sockets()
    try:
        monkeypatch.setattr(sock_diag, "listeners", lambda family: None)
        for port in ports:
            assert {entry.uid for entry in loopback_listeners(port)} == {os.getuid()}
        with pytest.raises(PortTaken, match=r"another user \(uid"):
            owned_host(ports[0], os.getuid() + 1)
    finally:
        for sock in held:
            sock.close()
