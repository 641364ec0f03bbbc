"""Programs of one agent user, each in a Landlock domain of its own: none can open another's
memory or environment, or (ABI 6) signal it, while each still reaches the processes it
starts itself, and files still move between folders (a domain refuses that unless told)."""

from __future__ import annotations

import os
import subprocess
import tempfile

import pytest

from evalward.runtime.isolation import landlock
from support.agentenv import PYTHON, needs_root
from support.agentuser import agent_user

pytestmark = [needs_root, pytest.mark.hostile]

PROBE = """\
import os, subprocess, sys
other = int(sys.argv[1])
for what in ("mem", "environ"):
    try:
        open(f"/proc/{other}/{what}", "rb").close()
        print(what, "open")
    except PermissionError:
        print(what, "refused")
try:
    os.kill(other, 0)
    print("signal sent")
except PermissionError:
    print("signal refused")
child = subprocess.Popen(["sleep", "30"])
open(f"/proc/{child.pid}/mem", "rb").close()
print("own child's memory open")
child.kill()
os.makedirs(sys.argv[2] + "/a")
os.makedirs(sys.argv[2] + "/b")
open(sys.argv[2] + "/a/f", "w").close()
os.rename(sys.argv[2] + "/a/f", sys.argv[2] + "/b/f")
print("moved")
with open("/proc/self/status") as status:
    print([line.strip() for line in status if line.startswith("NoNewPrivs:")][0])
"""


def probe() -> list[str]:
    """What a confined program of the agent user reaches of another, also confined."""
    user = agent_user()
    with tempfile.TemporaryDirectory(prefix="evalward-test-landlock-") as folder:
        os.chown(folder, user.uid, user.gid)
        confine = landlock.confinement()
        other = subprocess.Popen(
            ["sleep", "30"], cwd="/", preexec_fn=confine, user=user.uid, group=user.gid
        )
        try:
            done = subprocess.run(
                [PYTHON, "-c", PROBE, str(other.pid), folder],
                capture_output=True,
                text=True,
                cwd="/",
                preexec_fn=confine,
                user=user.uid,
                group=user.gid,
                extra_groups=[],
            )
        finally:
            other.kill()
            other.wait()
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_confined_program_reaches_no_other_program_of_its_user() -> None:
    abi = landlock.available()
    if not abi:
        assert "no Landlock" in landlock.statement()
        pytest.skip("this kernel has no Landlock")
    signal = "signal refused" if abi >= 6 else "signal sent"
    said = probe()
    assert said == [
        "mem refused",
        "environ refused",
        signal,
        "own child's memory open",
        "moved",
        "NoNewPrivs:\t1",
    ]
    assert f"Landlock domain of its own (ABI {abi})" in landlock.statement()
