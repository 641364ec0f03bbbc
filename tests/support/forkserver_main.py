"""The fork server (`forkserver.py`): imports evalward, then forks a child per request, which
returns from `serve` and runs the module as `-m evalward` does. Run by path, it imports
nothing of the tests: `argv` is its socket's path and `cli` or `action`."""

from __future__ import annotations

import gc
import importlib
import io
import json
import os
import pkgutil
import selectors
import signal
import socket
import sys
from typing import Any

ON_USE = ("github", "jsonschema", "orjson", "aiohttp.web")
"""What runs import from other packages as they go, beside evalward's own modules (`_on_use`):
PyGithub where an action run makes its GitHub client (0.2 s of each run's CPU), a schema's
check, a trace's JSON, the model proxy's server."""


def serve(address: str) -> tuple[dict[str, Any], list[int]]:
    """Serve until this server's parent ends; returns only in a child, with its request."""
    _on_use()
    _built_models()
    _built_tables()
    gc.freeze()  # what every child shares: its collections need not walk it again
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)
    os.write(1, b"ready\n")
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(0, selectors.EVENT_READ)  # the lifeline: EOF once the parent is gone
    # a child's end wakes the loop at once (its status is sent as soon as it is known)
    ended, wake = os.pipe()
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector.register(ended, selectors.EVENT_READ)
    running: dict[int, socket.socket] = {}
    while True:
        for key, _ in selector.select():
            if key.fileobj == 0:
                if not os.read(0, 4096):
                    sys.exit(0)
                continue
            if key.fileobj == ended:
                os.read(ended, 4096)
                continue
            conn, _ = listener.accept()
            head, fds, _, _ = socket.recv_fds(conn, 16, 3)
            size = int(head)
            body = b""
            while len(body) < size:
                body += conn.recv(size - len(body))
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.close(ended)
                os.close(wake)
                selector.close()
                listener.close()
                for other in [conn, *running.values()]:
                    other.close()
                return json.loads(body), fds
            for fd in fds:
                os.close(fd)
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            running[pid] = conn
        while running:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = running.pop(pid)
            conn.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
            conn.close()


def _on_use() -> None:
    """Import every module of evalward and what its runs import when they first need it,
    the way they import it (aiohttp through `evalward.http.aio`: its CA store left unloaded).
    Imported on use, they are most of a short run's CPU: about 0.1 s with aiohttp, 0.5 s
    more with the MCP SDK. Not `evalward.__main__`: `-m` runs it as `__main__`, with no copy
    imported before."""
    import evalward
    from evalward.http.aio import load

    load()
    for module in pkgutil.walk_packages(evalward.__path__, "evalward."):
        if module.name != "evalward.__main__":
            importlib.import_module(module.name)
    for name in ON_USE:
        importlib.import_module(name)


def _built_models() -> None:
    """Build the schemas of evalward's pydantic models that defer it to their first use
    (`defer_build`, and models whose annotations name what is defined later): what a run
    would build, once, instead of in every child. The schemas are the ones a run builds."""
    from pydantic import BaseModel

    for name, module in list(sys.modules.items()):
        if not name.startswith("evalward"):
            continue
        for value in list(vars(module).values()):
            if (
                isinstance(value, type)
                and issubclass(value, BaseModel)
                and value.__module__ == name
                and not value.__pydantic_complete__
            ):
                value.model_rebuild()


def _built_tables() -> None:
    """Build the tables evalward builds at its first use of them in a run, once, instead of
    in every child: the combining marks' (`escaping.reveal_marks`, 14 ms), which any comment
    with a character past ASCII needs."""
    from evalward.text.escaping import reveal_marks

    reveal_marks("e" + "\u0301" * 5)


def become(request: dict[str, Any], fds: list[int], cli: bool) -> None:
    """Take the run's streams, directory, environment and arguments."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    coerced = os.environ.get("LC_CTYPE")  # the locale coercion this interpreter started with
    os.environ.clear()
    os.environ.update(request["env"])
    if coerced is not None and not {"LC_ALL", "LC_CTYPE", "LANG"} & set(os.environ):
        os.environ["LC_CTYPE"] = coerced
    if cli and "" in sys.path:  # `-m` puts the working directory first, as a path
        sys.path[sys.path.index("")] = os.getcwd()
    sys.argv = ["-c", *request["args"]]
    _new_stdio()


def _new_stdio() -> None:
    """Standard streams made afresh over the new descriptors, as the interpreter makes them
    as it starts (its encoding, error handlers and buffering): the old ones know the server's
    descriptors (a file they could seek in, where the run's is a pipe)."""
    streams = []
    for fd, old in enumerate((sys.stdin, sys.stdout, sys.stderr)):
        reading = fd == 0
        unbuffered = not reading and bool(getattr(old, "write_through", False))
        binary = open(  # noqa: SIM115
            # the stream lives as long as the run
            fd,
            "rb" if reading else "wb",
            buffering=0 if unbuffered else -1,
            closefd=False,
        )
        streams.append(
            io.TextIOWrapper(
                binary,
                encoding=old.encoding,
                errors=old.errors,
                newline=None if reading else "\n",
                line_buffering=not reading and os.isatty(fd),
                write_through=unbuffered,
            )
        )
    sys.stdin, sys.stdout, sys.stderr = streams
    for name, stream in zip(("__stdin__", "__stdout__", "__stderr__"), streams, strict=True):
        setattr(sys, name, stream)


def finish(code: object) -> None:
    """End the run as the interpreter ends a `-m evalward` process that raised `SystemExit`
    (`code`): its threads joined, its `atexit` functions run and its standard streams
    flushed, in that order, then the exit, without the teardown of every module and object
    that follows. In a fork that teardown touches the heap the child shares with the server,
    and copying each page it writes was most of a child's end (55 of 60 ms, for each of the
    suite's 1,700 starts), where a fresh interpreter frees pages of its own. Where a stream
    cannot be flushed, the interpreter's own end says so (exit 120)."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # the interpreter prints any other object it was given, and exits 1
        print(code, file=sys.stderr)
        status = 1
    import atexit
    import threading

    threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter's end joins
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # the interpreter's own end reports it
        sys.exit(code)
    os._exit(status & 0xFF)


if __name__ == "__main__":
    address, kind = sys.argv[1], sys.argv[2]
    request, fds = serve(address)
    become(request, fds, kind == "cli")
    import runpy

    try:
        runpy.run_module("evalward", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        finish(exc.code)
    finish(None)
