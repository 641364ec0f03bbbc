"""`agent-user: auto`: each job takes a pair of agent uids nobody else holds, for its life.

Claims are held by processes (a `flock` each), so the tests claim from child processes the
way two jobs would, and from this one.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from evalward.errors import ConfigError
from evalward.runtime.isolation.agent_users import FIRST_UID, claim_pair, end_unclaimed
from support.agentenv import needs_root

pytestmark = pytest.mark.integration

_HOLD = """
import sys
from pathlib import Path
from evalward.runtime.isolation.agent_users import claim_pair
claim = claim_pair({0}, Path(sys.argv[1]))
print(claim.user.uid, flush=True)
sys.stdin.read()  # held until the test closes stdin: the process ends and the kernel lets go
"""


def _holder(folder: Path) -> tuple[subprocess.Popen[str], int]:
    """Another process, holding a claim, as another job would."""
    process = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline())


@needs_root
def test_jobs_holding_claims_get_pairs_of_their_own_until_they_end(tmp_path: Path) -> None:
    folder = tmp_path / "claims"
    first, first_uid = _holder(folder)
    second, second_uid = _holder(folder)
    try:
        assert first_uid != second_uid
        assert {first_uid, second_uid} <= set(range(FIRST_UID, FIRST_UID + 2000, 2))
        mine = claim_pair({0}, folder)
        assert mine.user.uid not in (first_uid, second_uid)
        mine.release()
    finally:
        for process in (first, second):
            process.communicate("")
    after = claim_pair({0}, folder)  # the holders have ended: their pairs are free again
    try:
        assert after.user.uid == min(first_uid, second_uid, after.user.uid)
    finally:
        after.release()


@needs_root
@pytest.mark.usefixtures("head_strays_made")  # agent uids' processes outside any side's turn
def test_a_pair_with_a_live_process_or_a_person_s_account_is_passed_over(tmp_path: Path) -> None:
    folder = tmp_path / "claims"
    free = claim_pair({0}, folder)
    free.release()
    stray = subprocess.Popen(["sleep", "600"], user=free.user.uid + 1, group=free.user.uid + 1)
    try:
        taken = claim_pair({0}, folder)  # the base uid of that pair runs a process
        assert taken.user.uid > free.user.uid
        taken.release()
    finally:
        stray.kill()
        stray.wait()
    again = claim_pair({0}, folder)
    assert again.user.uid == free.user.uid
    again.release()


@needs_root
@pytest.mark.usefixtures("head_strays_made")  # agent uids' processes outside any side's turn
def test_what_a_gone_job_left_of_its_pair_is_ended_a_held_pair_s_is_not(tmp_path: Path) -> None:
    """A pair claimed once and held by no job now: its users' processes are a gone job's
    leftovers and are ended (both users). A pair a job holds keeps its processes, and so
    does a uid never claimed here (a job may name its users)."""
    folder = tmp_path / "claims"
    held = claim_pair({0}, folder)
    gone = claim_pair({0}, folder)
    gone.release()  # the job ended without ending its processes
    never = gone.user.uid + 2  # a pair no job claimed here
    procs = {
        uid: subprocess.Popen(["sleep", "600"], user=uid, group=uid)
        for uid in (gone.user.uid, gone.user.uid + 1, held.user.uid, never)
    }
    ended: list[int] = []

    def end(uid: int) -> None:
        ended.append(uid)
        for process in procs.values():
            if process.pid and uid == _uid_of(process.pid):
                process.kill()

    try:
        assert end_unclaimed(set(procs), end, folder) == [gone.user.uid]
        assert ended == [gone.user.uid, gone.user.uid + 1]
        assert procs[held.user.uid].poll() is None and procs[never].poll() is None
    finally:
        held.release()
        for process in procs.values():
            process.kill()
            process.wait()


def _uid_of(pid: int) -> int | None:
    """The real uid of process `pid`; None once it is gone (reaped: it is no one's to end)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return None
    return int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])


@needs_root
def test_a_claims_folder_another_user_could_change_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "claims"
    folder.mkdir()
    os.chown(folder, 4242, 4242)
    with pytest.raises(ConfigError, match=r"agent-user.*not a folder of uid 0.*owner 4242"):
        claim_pair({0}, folder)
    os.chown(folder, 0, 0)
    folder.chmod(0o777)
    with pytest.raises(ConfigError, match="mode 777"):
        claim_pair({0}, folder)
    folder.rmdir()
    folder.symlink_to(tmp_path)
    with pytest.raises(ConfigError, match="not a folder"):
        claim_pair({0}, folder)


@needs_root
def test_only_the_claims_folder_s_owner_may_list_what_the_machine_s_jobs_gate(
    tmp_path: Path,
) -> None:
    """The turns' names hold the commits the jobs gate: an agent of another job must not
    list them. A folder an earlier evalward left open to reading is closed."""
    made = tmp_path / "made"
    claim_pair({0}, made).release()
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    left_open = tmp_path / "left-open"
    left_open.mkdir(mode=0o755)
    left_open.chmod(0o755)
    claim_pair({0}, left_open).release()
    assert stat.S_IMODE(left_open.stat().st_mode) == 0o700
