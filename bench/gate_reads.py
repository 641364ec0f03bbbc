"""Reads a gate repeats: an agent's YAML read for attribution (`read_agent_yaml`, on
examples/refund-desk's agent, once per side of each variant), the owner of an http agent's
or a service's port (`port_owner.owned_host`, before each request in the action), with a
listener of this process's on 127.0.0.1 and another on ::1, and the socket of a connection
to the model proxy (`socket_holders.socket_inode`, for each call that presents a run's key in
the action), a loopback connection of this process; and a base side's worktree of one file,
made and removed (`Git.worktree`, a tenth as many times). Each is timed in a fresh process of
this tree's evalward and each `--before` tree's, alternated, over `--calls` calls (no import);
the median per call over the rounds, and the fastest.

    python bench/gate_reads.py [--rounds 7] [--calls 200] [--before NAME=SRC ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from common import before_and_this

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "examples" / "refund-desk" / "agents" / "refund-desk.yaml"
READS = """\
import os, socket, subprocess, sys, tempfile, time
from pathlib import Path
from evalward.git import Git
from evalward.attribution.fields import read_agent_yaml
from evalward.runtime.processes.port_owner import owned_host
from evalward.runtime.processes.socket_holders import socket_inode
text, calls = open(sys.argv[1]).read(), int(sys.argv[2])
started = time.perf_counter()
for _ in range(calls):
    assert read_agent_yaml(text, "refund-desk") is not None
yaml = (time.perf_counter() - started) / calls
held = []
for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.bind((host, held[0].getsockname()[1] if held else 0))
    sock.listen()
    held.append(sock)
port = held[0].getsockname()[1]
started = time.perf_counter()
for _ in range(calls):
    assert owned_host(port, os.getuid()) == "127.0.0.1"
owner = (time.perf_counter() - started) / calls
client = socket.create_connection(("127.0.0.1", port))
accepted, _ = held[0].accept()
ends = client.getsockname(), accepted.getsockname()
started = time.perf_counter()
for _ in range(calls):
    assert socket_inode(*ends) == os.fstat(client.fileno()).st_ino
inode = (time.perf_counter() - started) / calls
with tempfile.TemporaryDirectory() as folder:
    Path(folder, "prompt.md").write_text("Answer.")
    me = ["-c", "user.name=b", "-c", "user.email=b@example.com"]
    for args in (["init", "-q"], ["add", "-A"], [*me, "commit", "-qm", "one"]):
        subprocess.run(["git", "-C", folder, *args], check=True)
    git = Git(Path(folder))
    commit = git.run("rev-parse", "HEAD").strip()
    started = time.perf_counter()
    for _ in range(calls // 10):
        with git.worktree(commit, ["prompt.md"]) as tree:
            assert (tree / "prompt.md").is_file()
    worktree = (time.perf_counter() - started) / (calls // 10)
print(yaml, owner, inode, worktree)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--before", action="append", default=[], metavar="NAME=SRC")
    args = parser.parse_args()
    trees = before_and_this(args.before)
    yaml: dict[str, list[float]] = {}
    port: dict[str, list[float]] = {}
    inode: dict[str, list[float]] = {}
    worktrees: dict[str, list[float]] = {}
    for round_ in range(args.rounds + 1):  # the first round compiles bytecode: not counted
        for name, src in trees.items():
            done = subprocess.run(
                [sys.executable, "-c", READS, str(AGENT), str(args.calls)],
                env={**os.environ, "PYTHONPATH": src}, check=True, text=True,
                capture_output=True,
            )  # fmt: skip
            if round_:
                read, owner, found, tree = done.stdout.split()
                worktrees.setdefault(name, []).append(float(tree))
                yaml.setdefault(name, []).append(float(read))
                port.setdefault(name, []).append(float(owner))
                inode.setdefault(name, []).append(float(found))
    with_sockets = Path("/proc/net/tcp").read_text().count("\n") - 1
    for name in trees:
        print(
            f"{name}: the agent's YAML read in {statistics.median(yaml[name]) * 1000:.2f} ms "
            f"median (fastest {min(yaml[name]) * 1000:.2f} ms), the port's owner in "
            f"{statistics.median(port[name]) * 1000:.3f} ms (fastest "
            f"{min(port[name]) * 1000:.3f} ms), a connection's socket in "
            f"{statistics.median(inode[name]) * 1000:.3f} ms (fastest "
            f"{min(inode[name]) * 1000:.3f} ms), {args.calls} calls each, a worktree in "
            f"{statistics.median(worktrees[name]) * 1000:.1f} ms (fastest "
            f"{min(worktrees[name]) * 1000:.1f} ms), {args.calls // 10} of them, over "
            f"{args.rounds} alternated rounds ({with_sockets} IPv4 sockets on the machine at "
            "the end)"
        )


if __name__ == "__main__":
    main()
