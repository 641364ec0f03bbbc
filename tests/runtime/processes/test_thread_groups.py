"""The machine's processes as the kernel keeps them (`runtime/processes/thread_groups.py`),
with real processes: a process is alive while any of its threads is, even once its first
thread has ended and /proc calls it a zombie; a reaped or unreaped dead one is gone."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from collections.abc import Iterator

import pytest

from evalward.runtime.processes import held_sockets
from evalward.runtime.processes.thread_groups import (
    facts,
    live_of,
    pids,
    status_uids,
    uids_of,
)

pytestmark = pytest.mark.integration

UNTIL_FIRST_ENDS = """
import ctypes, os, sys, threading, time

def until_first_ends():
    main = f"/proc/self/task/{os.getpid()}/stat"
    while True:  # until the first thread has ended: /proc then calls the process a zombie
        with open(main, "rb") as stat:
            if stat.read().rsplit(b")", 1)[1][1:2] in (b"Z", b"X"):
                return
        time.sleep(0.01)
"""
FIRST_THREAD_ENDS = (
    UNTIL_FIRST_ENDS
    + """
def keep_running():
    until_first_ends()
    print("first thread gone", flush=True)
    sys.stdin.read()  # until the test closes it
    os._exit(0)

threading.Thread(target=keep_running).start()
ctypes.CDLL(None).syscall(60, 0)  # SYS_exit on x86_64: this thread alone, not exit_group
"""
)


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    """`code` run by this interpreter with `args`, its stdin and stdout pipes of text."""
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[str]]:
    child = _python("import sys; print('up', flush=True); sys.stdin.read()")
    assert child.stdout is not None
    assert child.stdout.readline() == "up\n"
    yield child
    child.kill()
    child.wait()


def test_a_live_child_is_found_with_its_parent_and_uids(
    sleeper: subprocess.Popen[str],
) -> None:
    group = facts(sleeper.pid)
    assert group is not None
    assert (group.pid, group.parent) == (sleeper.pid, os.getpid())
    assert group.session == os.getsid(0)
    assert group.started > 0
    assert os.getuid() in uids_of(sleeper.pid)
    assert sleeper.pid in set(pids())
    assert sleeper.pid in {g.pid for g in live_of({os.getuid()})}


def test_a_dead_child_is_gone_reaped_or_not(sleeper: subprocess.Popen[str]) -> None:
    assert sleeper.stdin is not None
    sleeper.stdin.close()
    os.waitid(os.P_PID, sleeper.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
    assert facts(sleeper.pid) is None
    assert sleeper.pid not in {g.pid for g in live_of({os.getuid()})}
    sleeper.wait()
    assert facts(sleeper.pid) is None
    assert uids_of(sleeper.pid) == set()


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the exit system call's number")
def test_a_process_whose_first_thread_ended_is_alive_while_another_runs() -> None:
    child = _python(FIRST_THREAD_ENDS)
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline() == "first thread gone\n"
        with open(f"/proc/{child.pid}/stat", "rb") as stat:
            assert stat.read().rsplit(b")", 1)[1][1:2] == b"Z"  # what a naive reader sees
        group = facts(child.pid)
        assert group is not None
        assert group.parent == os.getpid()
        assert os.getuid() in uids_of(child.pid)
        child.stdin.close()
        assert child.wait() == 0
        assert facts(child.pid) is None
    finally:
        child.kill()
        child.wait()


THREAD_OF_ANOTHER_UID = (
    UNTIL_FIRST_ENDS
    + """
def as_nobody():
    libc = ctypes.CDLL(None)
    assert libc.syscall(117, 65534, 65534, 65534) == 0  # setresuid: this thread alone
    if sys.argv[1] == "first-ends":
        until_first_ends()
    print("ready", flush=True)
    sys.stdin.read()  # until the test closes it
    os._exit(0)

threading.Thread(target=as_nobody).start()
if sys.argv[1] == "first-ends":
    ctypes.CDLL(None).syscall(60, 0)  # SYS_exit: the first thread alone
sys.stdin.read()
"""
)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the system calls' numbers")
@pytest.mark.skipif(os.geteuid() != 0, reason="a thread changes its uid as root")
@pytest.mark.parametrize("first", ["first-runs", "first-ends"])
def test_a_thread_that_changed_its_uid_alone_is_found_as_that_uid(first: str) -> None:
    """Where a process has one live thread, its own `status` says that thread's uids; where
    it has more, or its first has ended (its `status` then speaks for the dead first thread,
    root), each thread's is read: a thread of another uid is found either way."""
    child = _python(THREAD_OF_ANOTHER_UID, first)
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline() == "ready\n"
        assert uids_of(child.pid) >= {65534}
        assert child.pid in {group.pid for group in live_of({65534})}
    finally:
        child.kill()
        child.wait()


def test_the_uids_are_read_from_the_uid_line_alone() -> None:
    status = b"Name:\tUid: 5 5 5 5\nUmask:\t0022\nUid:\t1000\t1001\t1002\t1003\nGid:\t0\t0\t0\t0\n"
    assert status_uids(status) == {1000, 1001, 1002}
    assert status_uids(b"Name:\tx\n") == set()


OWN_TABLE = """
import ctypes, os, socket, sys, threading

def own_table():
    assert ctypes.CDLL(None, use_errno=True).unshare(0x400) == 0  # CLONE_FILES: a table of its own
    kept = socket.socket(socket.AF_UNIX)
    kept.bind(b"\\0" + sys.argv[1].encode())
    print("bound", kept.fileno(), flush=True)
    sys.stdin.read()  # until the test closes it

threading.Thread(target=own_table).start()
"""


def test_a_socket_held_only_in_a_threads_own_table_is_found_held() -> None:
    """A thread that unshares its descriptor table holds what it opens there alone (the
    process's `fd` folder does not list it): the descriptors of every thread are read, so a
    Unix socket it holds is found held (`held_sockets`), by its process."""
    token = f"evalward-own-table-{os.getpid()}"
    process = _python(OWN_TABLE, token)
    try:
        assert process.stdout is not None and process.stdout.readline().startswith("bound")
        held = [h for h in held_sockets.held({os.getuid()}) if h.name == f"@{token}"]
        assert [h.holders for h in held] == [(process.pid,)]
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)
