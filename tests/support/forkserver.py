"""evalward started as a process of its own, as a user starts it, without paying its imports
at every start: per test process, a server imports evalward once with the interpreter flags
and path of the start it stands for, then forks a child per run. The child takes the run's
standard streams, working directory, environment and arguments, and runs the module exactly
as `-m evalward` does; its exit status is the run's. Half a second of imports is most of a
short gate's CPU, and the suite starts evalward about 1,700 times. A child ends as the
interpreter ends (threads joined, `atexit` run, streams flushed) without tearing down the
heap it shares with the server, whose every page written would be copied
(`forkserver_main.finish`).

A fork differs from a fresh interpreter only in what the interpreter reads as it starts: the
`PYTHON*` variables (`-I` ignores them), the locale's, the hash seed. A run whose environment
sets one of those, a start with other flags, and every run with `EVALWARD_TESTS_EXEC=1` is
started afresh (`subprocess.run`). The start-up's own behaviour is tested with fresh starts
(tests/toplevel/test_startup.py).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

SERVER = Path(__file__).with_name("forkserver_main.py")


class _Server:
    """One server: `flags` and `path` are the interpreter's, `cli` whether it runs as the
    command line (`-m evalward ARGS`) or as the action's entry point (no arguments)."""

    def __init__(self, flags: tuple[str, ...], path: tuple[str, ...], cli: bool) -> None:
        self.folder = tempfile.mkdtemp(prefix="evalward-forks-")
        self.address = os.path.join(self.folder, "socket")
        start = f"import sys; sys.path[:0] = {list(path)!r}; import runpy; "
        start += f"runpy.run_path({str(SERVER)!r}, run_name='__main__')"
        self.process = subprocess.Popen(
            [sys.executable, *flags, "-c", start, self.address, "cli" if cli else "action"],
            stdin=subprocess.PIPE,  # its lifeline: it ends when this process does
            stdout=subprocess.PIPE,
            env={"PATH": os.environ["PATH"]},
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        if ready != b"ready\n":
            raise RuntimeError(f"the fork server did not start: {ready!r}")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        self.process.wait()
        with contextlib.suppress(OSError):
            os.unlink(self.address)
            os.rmdir(self.folder)

    def run(
        self,
        argv: list[str],
        args: Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        timeout: float,
    ) -> subprocess.CompletedProcess[str]:
        """`argv` (what it stands for, for errors) run with `args`, as `subprocess.run` with
        `capture_output=True, text=True, timeout=timeout` would."""
        request = json.dumps({"args": list(args), "cwd": str(cwd), "env": dict(env)}).encode()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        stdin = os.open(os.devnull, os.O_RDONLY)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(self.address)
            try:
                socket.send_fds(conn, [b"%016d" % len(request)], [stdin, out_write, err_write])
            finally:
                for fd in (stdin, out_write, err_write):
                    os.close(fd)
            conn.sendall(request)
            return _collect(argv, conn, out_read, err_read, timeout)


def _collect(
    argv: list[str], conn: socket.socket, out: int, err: int, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Read the child's streams to their end and its status, as `communicate` does; past
    `timeout`, kill it and raise `TimeoutExpired`."""
    chunks: dict[int, list[bytes]] = {out: [], err: []}
    said = b""
    pid = status = None
    deadline = None if timeout is None else time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        for fd in (out, err):
            selector.register(fd, selectors.EVENT_READ)
        selector.register(conn, selectors.EVENT_READ)
        open_ends = 3
        while open_ends:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                if pid is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                for fd in (out, err):
                    os.close(fd)
                raise subprocess.TimeoutExpired(argv, timeout)
            for key, _ in selector.select(left):
                if key.fileobj is conn:
                    data = conn.recv(4096)
                    said += data
                    if not data:
                        selector.unregister(conn)
                        open_ends -= 1
                    continue
                fd = int(key.fd)
                data = os.read(fd, 65536)
                if data:
                    chunks[fd].append(data)
                else:
                    selector.unregister(fd)
                    open_ends -= 1
            lines = said.split(b"\n")
            pid = json.loads(lines[0])["pid"] if len(lines) > 1 else None
            status = json.loads(lines[1])["status"] if len(lines) > 2 else None
    for fd in (out, err):
        os.close(fd)
    if status is None:
        raise RuntimeError(f"the fork server gave no status for {argv}: {said!r}")
    return subprocess.CompletedProcess(
        argv, int(status), _text(b"".join(chunks[out])), _text(b"".join(chunks[err]))
    )


def _text(data: bytes) -> str:
    """As `text=True` decodes a stream: the locale's encoding (UTF-8 here), newlines
    translated."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _fresh(flags: Sequence[str], path: Sequence[str], env: Mapping[str, str]) -> bool:
    """Whether a run must start afresh: its environment sets what an interpreter reads as it
    starts (`-I` ignores `PYTHON*`; the command line's PYTHONPATH is the server's path)."""
    if os.environ.get("EVALWARD_TESTS_EXEC") == "1" or sys.platform != "linux":
        return True
    isolated = "-I" in flags
    for name in env:
        if name.startswith(("LC_", "LANG")):
            return True
        if name.startswith("PYTHON") and not isolated and name != "PYTHONPATH":
            return True
    return not isolated and env.get("PYTHONPATH") != os.pathsep.join(path)


_servers: dict[tuple[tuple[str, ...], tuple[str, ...], bool], _Server] = {}


@atexit.register
def _close_all() -> None:
    for server in _servers.values():
        server.close()
    _servers.clear()


def run(
    argv: list[str],
    *,
    flags: Sequence[str],
    path: Sequence[str],
    args: Sequence[str],
    cli: bool,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
    timeout=timeout)`, where `argv` is this interpreter with `flags`, `path` first on its
    path, running `-m evalward ARGS` (`cli`) or the action's entry point: from a fork of a
    server that imported evalward once, unless the run must start afresh (the module's
    docstring)."""
    if _fresh(flags, path, env):
        return subprocess.run(
            argv, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout
        )
    key = (tuple(flags), tuple(path), cli)
    server = _servers.get(key)
    if server is None or server.process.poll() is not None:
        server = _servers[key] = _Server(*key)
    return server.run(argv, args, cwd, env, timeout)
