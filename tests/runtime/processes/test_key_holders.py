"""Whose processes may present one run's key of the model proxy (`processes/key_holders.py`):
the run's own (its sessions, its cgroup, its http agent's server), and a process told from no
one only while no other run of its user is under way; every holder of the connection counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.runtime.processes.cgroups import RunGroup
from evalward.runtime.processes.key_holders import KeyHolders
from evalward.runtime.processes.socket_holders import Holder
from evalward.runtime.processes.strays import RunProcesses, Sessions

pytestmark = pytest.mark.unit

USER = 10_500


def group(name: str) -> RunGroup:
    return RunGroup(Path("/sys/fs/cgroup") / name, f"/job/{name}", Path("/sys/fs/cgroup"))


def holder(session: int, cgroup: str | None = None, uid: int = USER) -> Holder:
    return Holder(pid=session + 1, session=session, cgroup=cgroup, uids=frozenset({uid}))


def two_runs(*, cgroups: bool) -> tuple[KeyHolders, RunProcesses, Sessions]:
    sessions = Sessions()
    mine = RunProcesses(USER, group("run-1") if cgroups else None, {100})
    other = RunProcesses(USER, group("run-2") if cgroups else None, {200})
    sessions.runs |= {mine, other}
    sessions.live |= {100, 200, 300}  # 300: an http agent's server
    return KeyHolders(mine, sessions), other, sessions


def test_the_runs_own_processes_and_its_servers_present_its_key() -> None:
    holders, _, _ = two_runs(cgroups=True)
    holders.servers.add(300)
    assert holders.refusal([holder(100)]) is None  # a program the run started
    assert holders.refusal([holder(100), holder(300)]) is None  # and the server answering it
    assert holders.refusal([holder(999, "/job/run-1")]) is None  # left its session: in the cgroup


def test_another_run_s_or_program_s_process_is_refused_even_beside_the_run_s_own() -> None:
    holders, _, _ = two_runs(cgroups=True)
    for stranger in (holder(200), holder(300), holder(999, "/job/run-2")):
        why = holders.refusal([holder(100), stranger])  # a descriptor passed to another run
        assert why is not None and "another run's or another program's" in why
    assert holders.refusal([]) == "no process holds the connection it came on any longer"


def test_a_process_told_from_no_one_presents_it_only_while_no_other_run_of_its_user_is_on() -> None:
    holders, other, sessions = two_runs(cgroups=False)
    loose = holder(999)  # left its session; no cgroup to tell whose it is
    why = holders.refusal([loose])
    assert why is not None and "cannot be told from the processes of another run" in why
    sessions.runs.discard(other)
    assert holders.refusal([loose]) is None
    why = holders.refusal([holder(999, uid=USER + 1)])
    assert why is not None and "another user" in why
