"""What keeps a run's programs to their run and the sides apart, piece by piece, with real
processes of this test's agent users: a run's end, a side's turn, the shared folders' sweep,
and the turns jobs on one machine take. Through the action:
tests/runtime/isolation/test_sides_apart.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import fcntl
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalward.errors import TreeError
from evalward.files.trees import TreeBounds
from evalward.runtime.agents.process import kill_group, limited_env, spawn
from evalward.runtime.isolation import message_queues, shared_places
from evalward.runtime.isolation.agent_users import claim_pair
from evalward.runtime.isolation.apart import Apart
from evalward.runtime.isolation.leftovers import sweep
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.runtime.isolation.side_turns import Turns, group_of
from evalward.runtime.processes import held_sockets
from evalward.runtime.processes.cgroups import RunGroups, cgroup_of
from evalward.runtime.processes.strays import Sessions
from support.agentuser import agent_user

pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("head_strays_made"),
]  # the head user, outside any turn
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
PYTHON = "/usr/bin/python3"

# Starts a daemon of its own session (it prints its pid), then stays until its stdin closes.
PROGRAM = """\
import os, subprocess, sys
daemon = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(600)"],
    start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
print(daemon.pid, flush=True)
sys.stdin.read()
"""


def _alive(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rfind(")") + 2] not in "ZX"


@pytest.fixture
def checkout() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="evalward-run-processes-"))
    folder.chmod(0o755)
    (folder / "program.py").write_text(PROGRAM)
    yield folder
    subprocess.run(["rm", "-rf", str(folder)], check=False)


async def _start(sandbox: Sandbox, checkout: Path) -> tuple[asyncio.subprocess.Process, int]:
    """The program, started as one run's; and its daemon's pid."""
    env = limited_env({"PATH": "/usr/bin:/bin"}, (), sandbox=sandbox)
    process = await spawn([PYTHON, "program.py"], cwd=checkout, env=env, sandbox=sandbox)
    assert process.stdout is not None
    return process, int(await process.stdout.readline())


@needs_root
@pytest.mark.parametrize("tracked", ["cgroup", "sessions"])
def test_a_run_s_end_ends_what_it_left_running_and_spares_a_run_still_under_way(
    checkout: Path, tracked: str
) -> None:
    """Run A's program started a daemon of its own session and has ended; run B's program is
    still running, its own daemon beside it. A's end ends A's daemon and leaves B's program
    running. B's daemon runs on where each run has a cgroup; without one nothing tells it
    from A's, and it goes too (docs/github.md says so)."""
    sandbox = Sandbox(agent_user())
    if tracked == "cgroup":
        sandbox.keep_apart(lambda _line: None, turns=None)
    first, second = sandbox.begin_run(), sandbox.begin_run()
    if tracked == "cgroup" and first.group is None:
        sandbox.close()
        pytest.skip(f"no cgroup here: {RunGroups.make()}")

    async def go() -> tuple[bool, bool, bool, bool]:
        a, a_daemon = await _start(sandbox.in_run(first), checkout)
        b, b_daemon = await _start(sandbox.in_run(second), checkout)
        await kill_group(a, sandbox=sandbox)  # A's program ends, as a tool call does
        await sandbox.end_run(first)
        seen = (_alive(a_daemon), b.returncode is None, _alive(b_daemon))
        await kill_group(b, sandbox=sandbox)
        await sandbox.end_run(second)
        return (*seen, _alive(b_daemon))

    try:
        a_daemon, b_running, b_daemon, b_daemon_after = asyncio.run(go())
    finally:
        sandbox.close()
    assert not a_daemon
    assert b_running
    assert b_daemon is (tracked == "cgroup")
    assert not b_daemon_after


@needs_root
def test_what_a_program_forked_before_it_joined_its_run_is_the_runs(checkout: Path) -> None:
    """On a loaded machine a program may fork before evalward moves it into its run's cgroup:
    here it is moved late on purpose, its daemon (a session of its own) already running. The
    daemon joins the run's cgroup with it, so no other run's end takes it for a stray; a
    program of the same user started earlier outside any run (as a code scorer is) and the
    daemon that one left stay where they are, and the program goes on after the run's end."""
    sandbox = Sandbox(agent_user())
    sandbox.keep_apart(lambda _line: None, turns=None)
    run = sandbox.begin_run()
    if run.group is None:
        sandbox.close()
        pytest.skip(f"no cgroup here: {RunGroups.make()}")
    user = agent_user()

    async def go() -> tuple[list[str | None], bool]:
        earlier, earlier_daemon = await _start(sandbox, checkout)
        late = subprocess.Popen(
            [PYTHON, "program.py"],
            cwd=checkout,
            user=user.uid,
            group=user.gid,
            extra_groups=[],
            start_new_session=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert late.stdout is not None
        daemon = int(late.stdout.readline())
        sandbox.in_run(run).keep(late.pid, sandbox.new_home())
        where = [cgroup_of(pid) for pid in (late.pid, daemon, earlier.pid, earlier_daemon)]
        await sandbox.end_run(run)
        late.wait()
        still = earlier.returncode is None and _alive(earlier.pid)
        await kill_group(earlier, sandbox=sandbox)
        return where, still

    try:
        where, earlier_runs_on = asyncio.run(go())
    finally:
        sandbox.close()
    assert run.group is not None
    assert where[:2] == [run.group.name, run.group.name]
    assert run.group.name not in where[2:]
    assert earlier_runs_on


@needs_root
def test_a_side_s_turn_leaves_nothing_of_either_agent_user(checkout: Path) -> None:
    """What a side's programs leave (a daemon of the base user, one of the head's) is gone
    when a turn starts and when it ends, whoever started it."""
    sandbox = Sandbox(agent_user())
    base = sandbox.for_side("base")

    async def go() -> list[bool]:
        run = base.begin_run()
        program, daemon = await _start(base.in_run(run), checkout)
        seen = []
        async with sandbox.turn("head", "abc"):
            seen += [_alive(daemon), program.returncode is None]
            head_run = sandbox.begin_run()
            head, head_daemon = await _start(sandbox.in_run(head_run), checkout)
        seen += [_alive(head_daemon), head.returncode is None]
        await kill_group(program, sandbox=sandbox)
        await kill_group(head, sandbox=sandbox)
        return seen

    try:
        assert asyncio.run(go()) == [False, False, False, False]
    finally:
        sandbox.close()


# Its first thread ends alone (the `exit` system call) while a second thread runs on: /proc
# shows the process as a zombie, yet it runs. It prints its pid, then its second thread waits.
HALF_DEAD = """\
import ctypes, os, sys, threading, time
def go_on():
    while True:
        time.sleep(0.05)
threading.Thread(target=go_on).start()
print(os.getpid(), flush=True)
ctypes.CDLL(None).syscall(60, 0)  # SYS_exit (x86_64): this thread only
"""


def _threads_alive(pid: int) -> bool:
    """Whether any thread of `pid` still runs (its first may show as a zombie)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{task}/stat").read_text()
        except OSError:
            continue
        if text[text.rfind(")") + 2] not in "ZX":
            return True
    return False


@needs_root
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="SYS_exit is 60 on x86_64 only")
def test_a_turn_ends_a_process_whose_first_thread_ended_while_another_runs(
    checkout: Path,
) -> None:
    """A head process whose first thread ended (a zombie in /proc/<pid>/stat) with a second
    thread running, in a session of its own: a turn's start ends it, every thread."""
    user = agent_user()
    sandbox = Sandbox(user)
    (checkout / "half_dead.py").write_text(HALF_DEAD)
    half = subprocess.Popen(
        [PYTHON, "half_dead.py"],
        cwd=checkout,
        user=user.uid,
        group=user.gid,
        extra_groups=[],
        start_new_session=True,
        stdout=subprocess.PIPE,
    )
    assert half.stdout is not None
    pid = int(half.stdout.readline())
    for _ in range(500):  # its first thread has ended: it shows as a zombie
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.01)
    assert _threads_alive(pid) and not _alive(pid)

    async def go() -> bool:
        async with sandbox.turn("base", ""):
            return _threads_alive(pid)

    try:
        assert asyncio.run(go()) is False
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        half.wait()
        sandbox.close()


def _as_user(uid: int, code: str) -> None:
    subprocess.run([PYTHON, "-c", code], user=uid, group=uid, extra_groups=[], check=True)


@needs_root
def test_the_sweep_removes_what_a_user_left_in_shared_folders_and_nothing_else(
    tmp_path: Path,
) -> None:
    """A file, a folder, a socket and a link the agent user made in a folder every user may
    write, deep down too, go; root's file beside them, the link's target and what is in a
    folder only root may write stay; a link is never followed."""
    user = agent_user()
    shared = Path(tempfile.mkdtemp(prefix="evalward-shared-"))
    shared.chmod(0o1777)
    mine = tmp_path / "root-only"
    mine.mkdir()
    target = tmp_path / "target.txt"
    target.write_text("root's")
    target.chmod(0o666)
    (shared / "root.txt").write_text("root's")
    deep = shared / "a" / "b"
    deep.mkdir(parents=True)
    for folder in (shared / "a", deep):
        folder.chmod(0o777)
    try:
        _as_user(
            user.uid,
            f"""
import os, socket
os.chdir({str(shared)!r})
open("planted.json", "w").write("{{}}")
os.makedirs("own/inner")
open("own/inner/x", "w").write("x")
open("a/b/deep.json", "w").write("{{}}")
os.symlink({str(target)!r}, "link")
os.symlink({str(tmp_path)!r}, "a/into-root")
socket.socket(socket.AF_UNIX).bind("shop.sock")
""",
        )
        removed = sweep([user.uid], [user.gid], [shared, tmp_path]).removed
        left = sorted(str(p.relative_to(shared)) for p in shared.rglob("*"))
        assert left == ["a", "a/b", "root.txt"]
        assert removed == 6
        assert target.read_text() == "root's"
        assert mine.is_dir() and (tmp_path / "target.txt").exists()
    finally:
        subprocess.run(["rm", "-rf", str(shared)], check=False)


@needs_root
def test_the_sweep_removes_a_tree_past_any_recursion_limit_and_says_what_it_cannot(
    tmp_path: Path,
) -> None:
    """A folder nested 3,000 deep (`shutil.rmtree` recurses: a RecursionError) goes; a
    sweep past its bounds removes what it can and names what it could not."""
    user = agent_user()
    shared = Path(tempfile.mkdtemp(prefix="evalward-shared-"))
    shared.chmod(0o1777)
    try:
        _as_user(
            user.uid,
            f"""
import os
os.chdir({str(shared)!r})
os.mkdir("deep")
os.chdir("deep")
for _ in range(3000):
    os.mkdir("d")
    os.chdir("d")
""",
        )
        assert sweep([user.uid], [user.gid], [shared]).removed == 1
        assert list(shared.iterdir()) == []

        _as_user(user.uid, f"import os; os.makedirs({str(shared / 'many')!r} + '/' + 'x' * 9)")
        for index in range(20):
            _as_user(user.uid, f"open({str(shared / f'f{index}')!r}, 'w').close()")
        with pytest.raises(TreeError, match="more than 5 entries") as raised:
            sweep([user.uid], [user.gid], [shared], TreeBounds(entries=5))
        assert "(and " in str(raised.value)  # one message, however many were left
        assert 0 < len(list(shared.iterdir())) < 21
    finally:
        subprocess.run(["rm", "-rf", str(shared)], check=False)


@needs_root
def test_the_sweep_follows_no_link_swapped_in_on_a_place_s_path(tmp_path: Path) -> None:
    """A folder found as a place's parent (`tool`), replaced since by a link by whoever may
    write where it is: the sweep of `tool/shared` leads nowhere, and what the agent user owns
    where the link points stays."""
    user = agent_user()
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "shared").mkdir(parents=True)
    (elsewhere / "shared" / "mine.txt").write_text("the user's, elsewhere")
    os.chown(elsewhere / "shared" / "mine.txt", user.uid, user.gid)
    (tmp_path / "tool").symlink_to(elsewhere)

    swept = sweep([user.uid], [user.gid], [tmp_path / "tool" / "shared"])
    assert (elsewhere / "shared" / "mine.txt").exists()
    assert swept.removed == 0


@needs_root
def test_the_sweep_removes_the_user_s_shared_memory_segments() -> None:
    user = agent_user()
    libc = ctypes.CDLL(None, use_errno=True)
    key = 0x5EED0000 + os.getpid() % 0xFFFF
    _as_user(
        user.uid,
        f"import ctypes; assert ctypes.CDLL(None).shmget({key}, 4096, 0o1666) >= 0",
    )
    ident = libc.shmget(key, 0, 0)
    assert ident >= 0
    try:
        assert sweep([user.uid], [user.gid], []).removed >= 1
        assert libc.shmget(key, 0, 0) == -1  # gone
    finally:
        libc.shmctl(ident, 0, None)


@needs_root
def test_a_turn_sweeps_every_folder_any_user_may_write_found_on_the_machine() -> None:
    """Files the head's user left in /run/lock (which /var/lock names), in a folder every
    user may write that no list names, and its System V message queue and semaphore set go
    when a turn starts; root's file beside them stays."""
    user = agent_user()
    odd = Path(tempfile.mkdtemp(prefix="evalward-odd-", dir="/var/lib"))
    odd.chmod(0o755)
    (odd / "open").mkdir()
    (odd / "open").chmod(0o777)
    (odd / "root.txt").write_text("root's")
    token = f"evalward-{os.getpid()}-{time.monotonic_ns()}"
    planted = [Path("/run/lock") / token, odd / "open" / token]
    key = 0x5EEE0000 + os.getpid() % 0xFFFF
    libc = ctypes.CDLL(None, use_errno=True)
    sandbox = Sandbox(user)
    said: list[str] = []
    sandbox.keep_apart(said.append, turns=None)
    try:
        _as_user(
            user.uid,
            f"""
import ctypes
for path in {[str(p) for p in planted]!r}:
    open(path, "w").write("planted")
libc = ctypes.CDLL(None)
assert libc.msgget({key}, 0o1666) >= 0 and libc.semget({key + 1}, 1, 0o1666) >= 0
""",
        )
        assert all(path.exists() for path in planted)

        async def go() -> None:
            async with sandbox.turn("base", ""):
                pass

        asyncio.run(go())
        assert [path for path in planted if path.exists()] == []
        assert (libc.msgget(key, 0), libc.semget(key + 1, 0, 0)) == (-1, -1)
        assert (odd / "root.txt").read_text() == "root's"
        swept = next(line for line in said if "from every folder any user may write" in line)
        assert f"{odd / 'open'}" in swept and "/run/lock" in swept
    finally:
        sandbox.close()
        for path in planted:
            path.unlink(missing_ok=True)
        subprocess.run(["rm", "-rf", str(odd)], check=False)


@contextlib.contextmanager
def _tool_folder() -> Iterator[Path]:
    """A machine's `/tmp/tool/` (0755, root's) holding `shared/` (1777): a shared cache or a
    runner's scratch, which the sweep of `/tmp` does not enter; `shared`, removed after."""
    tool = Path(tempfile.mkdtemp(prefix="evalward-tool-", dir="/tmp"))
    tool.chmod(0o755)
    (tool / "shared").mkdir()
    (tool / "shared").chmod(0o1777)
    try:
        yield tool / "shared"
    finally:
        subprocess.run(["rm", "-rf", str(tool)], check=False)


@needs_root
def test_a_head_turn_sweeps_a_shared_folder_below_one_only_root_may_write_and_no_base_is_kept(
    tmp_path: Path,
) -> None:
    """What the head's user leaves in `/tmp/tool/shared/` (sticky) goes at its turn's end:
    a file, and links to a file and a folder of its own elsewhere, removed and never
    followed (their targets stay), beside root's and another user's files, which stay. A
    base run from then on is not kept in the result cache: a head user's files were where
    a later program could read them."""
    user = agent_user()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mine.txt").write_text("the head's, elsewhere")
    os.chown(outside / "mine.txt", user.uid, user.gid)
    sandbox = Sandbox(user)
    said: list[str] = []
    sandbox.keep_apart(said.append, turns=None)

    async def go() -> None:
        async with sandbox.turn("head", "0" * 40):
            _as_user(
                user.uid,
                f"""
import os
os.chdir({str(shared)!r})
open("planted.json", "w").write("{{}}")
os.symlink({str(outside / "mine.txt")!r}, "to-file")
os.symlink({str(outside)!r}, "to-folder")
""",
            )

    with _tool_folder() as shared:
        (shared / "root.txt").write_text("root's")
        (shared / "nobody.txt").write_text("another user's")
        os.chown(shared / "nobody.txt", 65534, 65534)
        try:
            asyncio.run(go())
            left = sorted(path.name for path in shared.iterdir())
        finally:
            sandbox.close()

    assert left == ["nobody.txt", "root.txt"]
    assert (outside / "mine.txt").read_text() == "the head's, elsewhere"
    swept = next(line for line in said if "from every folder any user may write" in line)
    assert str(shared) in swept, swept
    assert any(f"the head's agent user (uid {user.uid}) left files" in line for line in said)
    assert sandbox.head_alive("the base run after")


@needs_root
def test_another_job_s_head_user_s_file_in_a_shared_folder_keeps_no_base_run_in_the_cache() -> None:
    """A job killed outright left its head user's file in `/tmp/tool/shared/`: this job's
    sweep leaves it (it is not this job's), and a base run beside it is not kept."""
    user = agent_user()
    other = claim_pair({0, user.uid, user.uid + 1})  # another job's pair, held
    sandbox = Sandbox(user)
    said: list[str] = []
    sandbox.keep_apart(said.append, turns=None)

    async def go() -> None:
        async with sandbox.turn("base", ""):
            pass

    try:
        with _tool_folder() as shared:
            _as_user(other.user.uid, f"open({str(shared / 'planted')!r}, 'w').write('x')")
            asyncio.run(go())
            assert (shared / "planted").exists()
        line = next(line for line in said if "another job's head agent user" in line)
        assert "at a base turn" in line and "no base run from now on is kept" in line
        assert sandbox.head_alive("the base run")
    finally:
        sandbox.close()
        other.release()


@needs_root
def test_after_a_head_turn_a_walk_cut_short_at_its_bound_keeps_no_base_run(
    tmp_path: Path,
) -> None:
    """The walk for the folders any user may write stopped at its bound: a head program could
    have written where no sweep looks, so no base run after the head's turn is kept (one
    before it is)."""
    user = agent_user()
    mount = tmp_path / "mount"
    for index in range(5):
        (mount / f"d{index}").mkdir(parents=True)
    mount.chmod(0o755)
    info = tmp_path / "mountinfo"
    info.write_text(f"36 35 98:0 / {mount} rw - ext4 /dev/root rw\n")
    said: list[str] = []
    cut = "stopped at its bound, and the head has had a turn"

    async def go() -> tuple[bool, bool]:
        apart = Apart(Sessions(), (user, user.base_side()))
        apart.track(None, said.append)
        apart.places = shared_places.find(info, bound=3)  # as the first turn finds them
        try:
            apart.head_alive("the base run before")
            before = any(cut in line for line in said)
            async with apart.turn("head", "0" * 40):
                pass
            return before, apart.head_alive("the base run after")
        finally:
            apart.close()

    before, after = asyncio.run(go())
    assert not before and after
    assert any(cut in line for line in said)


def _held(folder: Path, name: str) -> bool:
    probe = os.open(folder / name, os.O_RDWR)
    try:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(probe)
    return False


@needs_root
def test_jobs_take_the_sides_turns_bases_together_a_head_with_its_own_commit_only(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "claims"
    said: list[str] = []
    turns = [Turns(folder, said.append) for _ in range(3)]

    async def go() -> list[str]:
        order: list[str] = []

        async def hold(turn: Turns, group: str, until: asyncio.Event | None) -> None:
            async with turn.taken(group):
                order.append(f"+{group}")
                if until is not None:
                    await until.wait()
                order.append(f"-{group}")

        bases_done = asyncio.Event()
        first = asyncio.create_task(hold(turns[0], "base", bases_done))
        second = asyncio.create_task(hold(turns[1], "base", None))  # beside the first
        await second
        head = asyncio.create_task(hold(turns[2], "head-abc", None))  # waits for the base
        await asyncio.sleep(0.5)
        assert not head.done()
        bases_done.set()
        await asyncio.gather(first, head)
        return order

    order = asyncio.run(go())
    assert order == ["+base", "+base", "-base", "-base", "+head-abc", "-head-abc"]
    assert said[0] == (
        "evalward: waiting for another job on this machine (base runs) before this job's "
        "head runs start"
    )
    assert said[1].startswith("evalward: this job's head runs start after ")
    assert said[1].endswith(" s waiting for other jobs' turns") and len(said) == 2
    assert not _held(folder, "turns")  # every lock let go with its turn
    assert not [e.name for e in folder.iterdir() if e.name.startswith("ticket-")]  # none left


@needs_root
def test_another_commit_s_base_turn_waits_as_a_head_s_does(tmp_path: Path) -> None:
    """Job 1 holds the base turn of a branch's commit; job 2's base is the same commit, so it
    goes beside job 1 at once; job 3's base is another commit of another branch (one anyone
    who can push made, its pull request's base: code no more trusted than a head's), so it
    waits for both to end."""
    assert group_of("base", "AbC1") == "base-abc1" != group_of("base", "def2")
    assert group_of("head", "abc1") == "head-abc1" == group_of("head", "abc1", True)
    # the default branch's bases, the repository's own reviewed code, go together
    assert group_of("base", "abc1", True) == "base" == group_of("base", "def2", True)
    folder = tmp_path / "claims"
    waiting: list[str] = []
    turns = [Turns(folder), Turns(folder), Turns(folder, waiting.append)]

    async def go() -> list[str]:
        order: list[str] = []

        async def hold(turn: Turns, group: str, name: str, until: asyncio.Event) -> None:
            async with turn.taken(group):
                order.append(f"+{name}")
                await until.wait()
                order.append(f"-{name}")

        mains_done, free = asyncio.Event(), asyncio.Event()
        free.set()
        main = group_of("base", "abc1")
        first = asyncio.create_task(hold(turns[0], main, "main1", mains_done))
        same = asyncio.create_task(hold(turns[1], main, "main2", mains_done))
        while len(order) < 2:
            await asyncio.sleep(0.01)  # both hold main's base turn
        other = asyncio.create_task(hold(turns[2], group_of("base", "def2"), "other3", free))
        while not waiting and "+other3" not in order:
            await asyncio.sleep(0.01)  # it has asked, found main's base turn held, and waits
        assert order == ["+main1", "+main2"], order  # not beside them
        mains_done.set()
        await asyncio.gather(first, same, other)
        return order

    order = asyncio.run(go())
    assert order[-2:] == ["+other3", "-other3"], order
    assert waiting[0] == (
        "evalward: waiting for another job on this machine (base runs) before this job's "
        "base runs start"
    )


@needs_root
def test_turns_go_first_come_first_served_a_later_base_waits_behind_a_waiting_head(
    tmp_path: Path,
) -> None:
    """Job 1 holds a base turn; job 2 then asks for its head's; job 3 then asks for a base
    turn. Job 3 goes after job 2's head, not beside job 1's base: turns that keep coming
    never overtake one that waits."""
    folder = tmp_path / "claims"
    waiting: list[str] = []
    turns = [Turns(folder), Turns(folder, waiting.append), Turns(folder)]

    async def go() -> list[str]:
        order: list[str] = []

        async def hold(turn: Turns, group: str, name: str, until: asyncio.Event) -> None:
            async with turn.taken(group):
                order.append(f"+{name}")
                await until.wait()
                order.append(f"-{name}")

        first_done, free = asyncio.Event(), asyncio.Event()
        free.set()
        first = asyncio.create_task(hold(turns[0], "base", "base1", first_done))
        while not order:
            await asyncio.sleep(0.01)
        head = asyncio.create_task(hold(turns[1], "head-abc", "head2", free))
        while not waiting:
            await asyncio.sleep(0.01)  # it has asked, found the base's turn held, and waits
        later = asyncio.create_task(hold(turns[2], "base", "base3", free))
        await asyncio.sleep(0.5)
        assert order == ["+base1"], order  # neither goes while the first base holds its turn
        first_done.set()
        await asyncio.gather(first, head, later)
        return order

    assert asyncio.run(go()) == ["+base1", "-base1", "+head2", "-head2", "+base3", "-base3"]


@needs_root
def test_a_head_s_turn_in_progress_is_joined_by_its_own_commit_past_a_waiting_base(
    tmp_path: Path,
) -> None:
    """Job 1 holds the head turn of commit abc; job 2 then waits for a base turn; job 3, a
    push of commit abc, joins job 1's turn at once (the runs of one commit are one turn), and
    job 2 goes once both have ended. Were job 3 queued behind job 2, a job 1 that waits for
    job 3 (a push it gates beside) would never end."""
    folder = tmp_path / "claims"
    waiting: list[str] = []
    turns = [Turns(folder), Turns(folder, waiting.append), Turns(folder)]

    async def go() -> list[str]:
        order: list[str] = []

        async def hold(turn: Turns, group: str, name: str, until: asyncio.Event) -> None:
            async with turn.taken(group):
                order.append(f"+{name}")
                await until.wait()
                order.append(f"-{name}")

        joined, free = asyncio.Event(), asyncio.Event()
        free.set()
        first = asyncio.create_task(hold(turns[0], "head-abc", "head1", joined))
        while not order:
            await asyncio.sleep(0.01)
        base = asyncio.create_task(hold(turns[1], "base", "base2", free))
        while not waiting:
            await asyncio.sleep(0.01)  # it has asked, found the head's turn held, and waits
        push = asyncio.create_task(hold(turns[2], "head-abc", "head3", free))
        done, _ = await asyncio.wait([push], timeout=60)  # queued behind the base: never
        joined.set()
        assert done, "the push waited behind the base for a turn its own commit holds"
        await asyncio.gather(first, base)
        return order

    assert asyncio.run(go()) == ["+head1", "+head3", "-head3", "-head1", "+base2", "-base2"]


@needs_root
def test_a_job_that_ends_mid_turn_lets_go_of_it(tmp_path: Path) -> None:
    """A job killed in its head's turn holds nothing: the kernel lets go of its lock."""
    folder = tmp_path / "claims"
    Turns(folder)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, sys, time\n"
            "from evalward.runtime.isolation.side_turns import Turns\n"
            "async def go():\n"
            f"    async with Turns(__import__('pathlib').Path({str(folder)!r})).taken('head-1'):\n"
            "        print('held', flush=True); time.sleep(600)\n"
            "asyncio.run(go())\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    assert _held(folder, "turn-head-1")
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()

    async def base() -> bool:
        async with Turns(folder).taken("base"):
            return True

    assert asyncio.run(base())


def test_the_job_s_cgroup_is_made_where_it_can_be_or_it_says_why() -> None:
    made = RunGroups.make()
    if isinstance(made, str):
        assert made  # a reason, for the log
        return
    try:
        group = made.new()
        assert group is not None and group.folder.parent == made.folder
    finally:
        made.close()
    assert not made.folder.exists()


@needs_root
def test_a_socket_the_head_handed_to_another_user_s_process_is_named_and_no_base_run_is_kept() -> (
    None
):
    """The head's user binds an abstract socket and hands it over (SCM_RIGHTS) to a process of
    another user (here the test's own, as root), then ends: the sweep cannot end it. The turn's
    end names it and who holds it, and a base run from then on is not kept in the cache."""
    user = agent_user()
    token = f"evalward-held-{os.getpid()}-{time.monotonic_ns()}"
    keeper = socket.socket(socket.AF_UNIX)
    keeper.bind(f"\0{token}-keeper".encode())
    keeper.listen()
    sandbox = Sandbox(user)
    said: list[str] = []
    sandbox.keep_apart(said.append, turns=None)
    handed: list[int] = []
    try:
        _as_user(
            user.uid,
            f"""
import socket
listener = socket.socket(socket.AF_UNIX)
listener.bind(b"\\0{token}")
listener.listen()
to = socket.socket(socket.AF_UNIX)
to.connect(b"\\0{token}-keeper")
socket.send_fds(to, [b"x"], [listener.fileno()])
""",
        )
        connection, _ = keeper.accept()
        with connection:
            _, handed, _, _ = socket.recv_fds(connection, 8, 4)
        assert os.fstat(handed[0]).st_uid == user.uid  # the head's socket, held by root

        async def go() -> None:
            async with sandbox.turn("head", "0" * 40):
                pass

        asyncio.run(go())
        line = next(line for line in said if "outlived its processes" in line)
        assert f"@{token}, made by uid {user.uid}, held by pid {os.getpid()} (uid 0)" in line
        assert sandbox.head_alive("the base run after")  # whatever else runs beside it
        assert [(held.name, held.holders) for held in held_sockets.held({user.uid})] == [
            (f"@{token}", (os.getpid(),))
        ]
    finally:
        for descriptor in handed:
            os.close(descriptor)
        keeper.close()
        sandbox.close()


@needs_root
@pytest.mark.skipif(message_queues.mounted(), reason="an mqueue file system is mounted here")
def test_a_posix_message_queue_goes_at_a_turn_where_no_mqueue_file_system_is_mounted() -> None:
    """No /dev/mqueue: the queue a head's user made is a name only. evalward mounts an mqueue
    file system of its own, sweeps it with the shared folders, and lets go of it at the end."""
    user = agent_user()
    name = f"/evalward-{os.getpid()}-{time.monotonic_ns()}".encode()
    libc = ctypes.CDLL(None, use_errno=True)
    sandbox = Sandbox(user)
    said: list[str] = []
    sandbox.keep_apart(said.append, turns=None)
    try:
        _as_user(
            user.uid,
            f"import ctypes, os; assert ctypes.CDLL(None).mq_open({name!r}, os.O_CREAT | "
            "os.O_RDWR, 0o666, None) >= 0",
        )
        assert libc.mq_open(name, os.O_RDONLY) >= 0  # there, under its name alone

        async def go() -> None:
            async with sandbox.turn("base", ""):
                pass

        asyncio.run(go())
        assert libc.mq_open(name, os.O_RDONLY) == -1 and ctypes.get_errno() == errno.ENOENT
        line = next(line for line in said if "POSIX message queues" in line)
        own = Path(line.split(" mounted at ")[1].split(" (")[0])
        assert own.is_dir() and own in message_queues.points()
    finally:
        sandbox.close()
        libc.mq_unlink(name)
    assert not own.exists() and own not in message_queues.points()  # let go of at the end


@needs_root
@pytest.mark.skipif(message_queues.mounted(), reason="an mqueue file system is mounted here")
def test_the_mqueue_file_system_another_job_mounted_for_itself_is_not_this_job_s() -> None:
    """Another job on the machine has mounted an mqueue file system of its own (in a folder of
    its own, which no sweep enters) and ends mid-way through this job's turns. This job
    mounts its own all the same: its head's queues go at every turn, before and after."""
    user = agent_user()
    libc = ctypes.CDLL(None, use_errno=True)
    other = message_queues.mount_own()
    if isinstance(other, str):
        pytest.skip(f"no mqueue file system can be mounted here: {other}")
    sandbox = Sandbox(user)
    said: list[str] = []
    sandbox.keep_apart(said.append, turns=None)
    names = [f"/evalward-{os.getpid()}-{time.monotonic_ns()}-{turn}".encode() for turn in "ab"]
    try:
        for name in names:
            _as_user(
                user.uid,
                f"import ctypes, os; assert ctypes.CDLL(None).mq_open({name!r}, os.O_CREAT | "
                "os.O_RDWR, 0o666, None) >= 0",
            )

            async def go() -> None:
                async with sandbox.turn("base", ""):
                    pass

            asyncio.run(go())
            assert libc.mq_open(name, os.O_RDONLY) == -1 and ctypes.get_errno() == errno.ENOENT
            if other in message_queues.points():
                message_queues.unmount(other)  # the other job ends after this job's first turn
        line = next(line for line in said if "POSIX message queues" in line)
        own = Path(line.split(" mounted at ")[1].split(" (")[0])
        assert own != other and own in message_queues.points()
    finally:
        sandbox.close()
        message_queues.unmount(other)
        for name in names:
            libc.mq_unlink(name)


@needs_root
@pytest.mark.skipif(message_queues.mounted(), reason="an mqueue file system is mounted here")
def test_where_no_mqueue_file_system_can_be_mounted_the_log_says_queues_cannot_be_listed() -> None:
    """Without CAP_SYS_ADMIN (a Docker action's root), the first turn says so."""
    code = (
        "import asyncio\n"
        "from evalward.runtime.isolation.sandbox import Sandbox\n"
        "from support.agentuser import agent_user\n"
        "sandbox = Sandbox(agent_user())\n"
        "sandbox.keep_apart(print, turns=None)\n"
        "async def go():\n"
        "    async with sandbox.turn('base', ''):\n"
        "        pass\n"
        "asyncio.run(go())\n"
        "sandbox.close()\n"
    )
    done = subprocess.run(
        [
            "setpriv",
            "--inh-caps=-sys_admin",
            "--bounding-set=-sys_admin",
            sys.executable,
            "-c",
            code,
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    assert (
        "POSIX message queues cannot be listed here: no mqueue file system is mounted, and "
        "mounting one failed (Operation not permitted)"
    ) in done.stdout
