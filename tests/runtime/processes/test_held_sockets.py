"""Which user made each Unix socket, as the kernel's socket diagnostics say
(`processes/held_sockets.py`): the same user the socket's inode names, so a look for the
sockets agent users made reads no descriptor when the kernel says none of them made one."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
from collections.abc import Iterator

import pytest

from evalward.runtime.processes import held_sockets, sock_diag
from support.byoagent import SYSTEM_PYTHON, runnable_by_all

pytestmark = pytest.mark.integration

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not runnable_by_all(SYSTEM_PYTHON),
    reason="a socket made by another user needs root and a Python every user may run",
)

MAKER = """\
import os, socket, sys
made = socket.socket(socket.AF_UNIX)
made.bind(b"\\0" + sys.argv[1].encode())
made.listen()
print(os.fstat(made.fileno()).st_ino, flush=True)
sys.stdin.read()
"""

OTHER_UID = 3_000_000 + os.getpid() % 100_000
"""A uid no other test's process runs as (the kernel needs no account for it)."""


@pytest.fixture
def made_by_another() -> Iterator[tuple[int, str, subprocess.Popen[str]]]:
    """A listening abstract socket that a process of `OTHER_UID` made and holds: its inode,
    its address and the process."""
    name = f"evalward-maker-{os.getpid()}"
    process = subprocess.Popen(
        [SYSTEM_PYTHON, "-I", "-c", MAKER, name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        user=OTHER_UID,
    )
    try:
        assert process.stdout is not None
        yield int(process.stdout.readline()), f"@{name}", process
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


@needs_root
def test_the_kernel_names_the_user_the_socket_s_inode_names(
    made_by_another: tuple[int, str, subprocess.Popen[str]],
) -> None:
    inode, _, _ = made_by_another
    with socket.socket(socket.AF_UNIX) as own:
        own.bind(f"\0evalward-own-{os.getpid()}".encode())
        makers = held_sockets.socket_makers()
        assert makers is not None, "this kernel says no socket's maker"
        assert makers[os.fstat(own.fileno()).st_ino] == os.fstat(own.fileno()).st_uid == 0
    assert makers[inode] == OTHER_UID


@needs_root
def test_a_socket_another_user_made_is_found_held_and_none_for_a_user_who_made_none(
    made_by_another: tuple[int, str, subprocess.Popen[str]],
) -> None:
    _, name, process = made_by_another
    found = held_sockets.held({OTHER_UID})
    assert [(held.name, held.maker, held.holders) for held in found] == [
        (name, OTHER_UID, (process.pid,))
    ]
    assert held_sockets.held({OTHER_UID + 1}) == []


def _message(kind: int, body: bytes) -> bytes:
    return struct.pack("=IHHII", 16 + len(body), kind, 2, 1, 0) + body


def _socket(inode: int, attributes: bytes) -> bytes:
    return _message(20, struct.pack("=BBBBIII", 1, 1, 10, 0, inode, 0, 0) + attributes)


UID_7 = struct.pack("=HHI", 8, 7, 1001)
"""A UNIX_DIAG_UID attribute: uid 1001."""


@pytest.mark.parametrize(
    ("answer", "read"),
    [
        (_socket(11, UID_7) + _socket(12, UID_7), "more"),
        (_socket(11, UID_7) + _message(3, b"\0\0\0\0"), "done"),
        (_socket(11, b""), "not whole"),  # a kernel that gives no uid
        (_socket(11, struct.pack("=HH", 2, 7)), "not whole"),  # an attribute shorter than itself
        (_message(2, struct.pack("=i", -1)), "not whole"),  # NLMSG_ERROR
        (_socket(11, UID_7)[:-3], "not whole"),  # a message cut
    ],
    ids=["two sockets", "the end", "no uid", "short attribute", "error", "cut"],
)
def test_an_answer_is_read_whole_or_not_at_all(answer: bytes, read: str) -> None:
    """What the look falls back on: an answer that is not whole (its messages as
    `sock_diag.framed` reads them, each socket's maker as `makers_of` does) says nothing of
    any socket."""
    messages: list[bytes] = []
    framing = sock_diag.framed(answer, messages)
    makers = held_sockets.makers_of(messages) if framing != "not whole" else None
    assert (framing if makers is not None else "not whole") == read
    if read != "not whole":
        assert makers == ({11: 1001, 12: 1001} if read == "more" else {11: 1001})
