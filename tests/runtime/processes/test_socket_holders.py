"""Which processes hold the client end of a loopback connection (`processes/socket_holders.py`),
read from the kernel's socket table and each process's descriptors: the one that connected,
and the one it passed the descriptor to."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from evalward.runtime.processes import sock_diag
from evalward.runtime.processes.socket_holders import holders, socket_inode
from fakes.http import quiet_listener

pytestmark = pytest.mark.integration

CLIENT = """\
import socket, subprocess, sys
client = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
# a second process given the descriptor, as one passed over a Unix socket would be
other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                         stdin=subprocess.PIPE, pass_fds=[client.fileno()])
print(client.getsockname()[1], other.pid, flush=True)
sys.stdin.read()
other.kill()
"""


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    # off the ports evalward's servers are given: the connection it accepts is the test's,
    # never another's readiness probe
    server = quiet_listener()
    yield server
    server.close()


def test_the_process_that_connected_and_the_one_it_passed_the_descriptor_to_hold_it(
    listener: socket.socket,
) -> None:
    port = listener.getsockname()[1]
    program = subprocess.Popen(
        [sys.executable, "-c", CLIENT, str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert program.stdout is not None
        client_port, other = map(int, program.stdout.readline().split())
        accepted, peer = listener.accept()
        with accepted:
            assert peer == ("127.0.0.1", client_port)
            server = ("127.0.0.1", port)
            assert socket_inode(peer, server) is not None
            assert sorted(h.pid for h in holders(peer, server)) == sorted([program.pid, other])
            assert holders(("127.0.0.1", 1), server) == []  # no such connection
            # the processes of a user left unread (evalward's own, when runs are another's)
            assert holders(peer, server, among_others_than=os.getuid()) == []
            other_user = os.getuid() + 1
            found = holders(peer, server, among_others_than=other_user)
            assert sorted(h.pid for h in found) == sorted([program.pid, other])
    finally:
        program.communicate("")


def test_a_connection_of_this_process_is_held_by_no_other(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    with socket.create_connection(("127.0.0.1", port)) as client:
        accepted, peer = listener.accept()
        with accepted:
            assert client.getsockname() == peer
            assert holders(peer, ("127.0.0.1", port)) == []  # this process is never counted


SHAPES = (
    (socket.AF_INET, "127.0.0.1", socket.AF_INET, "127.0.0.1"),
    (socket.AF_INET6, "::1", socket.AF_INET6, "::1"),
    (socket.AF_INET6, "::", socket.AF_INET, "127.0.0.1"),  # a dual-stack server
    (socket.AF_INET6, "::", socket.AF_INET6, "::ffff:127.0.0.1"),  # an IPv4-mapped client
)


@pytest.mark.parametrize("kernel_answers", [True, False], ids=["sock_diag", "tables"])
@pytest.mark.parametrize("shape", SHAPES, ids=["v4", "v6", "dual-stack", "mapped"])
def test_each_end_of_a_connection_is_found_by_its_descriptors_inode(
    shape: tuple[int, str, int, str], kernel_answers: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel is asked for the one socket (sock_diag), where its tables list them all;
    a kernel that does not answer has its tables read, and both find the same socket."""
    if not kernel_answers:
        monkeypatch.setattr(sock_diag, "connection", lambda local, remote: None)
    server_family, server_host, client_family, client_host = shape
    server = quiet_listener(server_family, server_host, v6only=0 if server_host == "::" else None)
    client = socket.socket(client_family, socket.SOCK_STREAM)
    with server, client:
        client.connect((client_host, server.getsockname()[1]))
        accepted, _ = server.accept()
        with accepted:
            for end in (client, accepted):
                own, peer = end.getsockname()[:2], end.getpeername()[:2]
                assert socket_inode(own, peer) == os.fstat(end.fileno()).st_ino
            assert socket_inode(client.getsockname()[:2], ("127.0.0.1", 1)) is None
