"""Child processes from the PR head: no shell, a limited environment, own process group.

Every program evalward starts from a checkout (command tools, bring-your-own agents) runs in
a new session so that a timeout can kill the whole group, grandchildren included, and a
process that ignores SIGTERM still dies (SIGKILL after a grace period). In the action it also
runs in a `Sandbox` (runtime/isolation/sandbox.py): as an unprivileged user, in a read-only working
copy, with an environment built from scratch and a private temp dir.

Whoever starts such a program builds its environment with `limited_env` and starts it with
`spawn`, passing the same `sandbox`, and ends it with `kill_group`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import SubprocessError

from evalward.errors import AgentRunError, OutsideRepository
from evalward.files.inside import program_path
from evalward.runtime.isolation import landlock
from evalward.runtime.isolation.agent_users import AgentUser
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.security import logins, looks_secret, without_logins
from evalward.text.cuts import hidden

BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT")
"""Always passed through. Anything else (API keys included) only when listed in `env`."""

SCRATCH_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")
"""Passed through in a sandbox, which sets HOME and TMPDIR itself."""

RUNNER_PLUMBING = ("GITHUB_", "INPUT_", "ACTIONS_", "RUNNER_")
"""The runner's variables: file-command paths, the action's inputs (the token), its own tokens."""

PROXY_BYPASS = ("NO_PROXY", "no_proxy")
"""Hosts to reach without an HTTP(S) proxy: what evalward adds joins the agent's own list."""

_CREDENTIAL_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|COOKIE|(^|_)AUTH", re.IGNORECASE)
_MIN_SECRET_LENGTH = 6

DEFAULT_KILL_GRACE = 2.0
STREAM_LIMIT = 16 * 1024 * 1024
"""Longest stdout line accepted (a trace event with a large tool output)."""


@dataclass(frozen=True)
class Launch:
    """Where and how a program from the checkout starts: the directory it runs in, the
    environment its allow-list draws from, what is set whatever that list says (the model
    proxy's variables), the sandbox, and how long a stopped group has to exit; one run's."""

    root: Path
    env: Mapping[str, str]
    extra_env: Mapping[str, str] = field(default_factory=dict)
    sandbox: Sandbox | None = None
    kill_grace: float = DEFAULT_KILL_GRACE
    left_behind: list[str] = field(default_factory=list)
    """What its programs left in their homes that could not be removed (`kill_group`'s
    answer): each makes the run an error."""


def limited_env(
    env: Mapping[str, str],
    allow: Sequence[str],
    extra: Mapping[str, str] | None = None,
    *,
    sandbox: Sandbox | None = None,
) -> dict[str, str]:
    """The environment of a program from a checkout: the one place it is built.

    `env` is evalward's own environment, `allow` the names the agent's `env:` lists and `extra`
    what evalward injects (always passed, never filtered). Without a sandbox (the command
    line): `BASE_ENV` and the allowed names. In a sandbox (the action) the environment starts
    from scratch: `SCRATCH_ENV` and the allowed names, minus every name that is the runner's
    plumbing or looks like a credential and every value that contains a credential's value,
    and each URL without its login (`http://proxy:3128` of `http://user:password@proxy:3128`:
    `logins_withheld`); `spawn` adds HOME and TMPDIR. A real provider key never gets through,
    even when listed.
    """
    if sandbox is None:
        out = {name: env[name] for name in (*BASE_ENV, *allow) if name in env}
    else:
        secrets = [
            value
            for name, value in env.items()
            if credential_name(name) and len(value.strip()) >= _MIN_SECRET_LENGTH
        ]
        out = {
            name: without_logins(env[name], name)
            for name in (*SCRATCH_ENV, *allow)
            if name in env
            and not withheld_name(name)
            and not any(secret.strip() in env[name] for secret in secrets)
        }
    for name, value in (extra or {}).items():
        kept = out.get(name, "")
        if name in PROXY_BYPASS and kept:
            value = f"{kept},{value}"
        elif name == "PYTHONPATH" and kept:
            value = f"{value}{os.pathsep}{kept}"  # evalward's start-up guard first
        out[name] = value
    return out


def logins_withheld(
    env: Mapping[str, str], allow: Sequence[str], *, sandbox: Sandbox | None
) -> tuple[str, ...]:
    """The names of `limited_env`'s variables whose URLs it passes without their logins: a
    program of the pull request's never holds the workflow's password for a proxy or index."""
    if sandbox is None:
        return ()
    given = limited_env(env, allow, sandbox=sandbox)
    return tuple(name for name in allow if name in given and logins(env[name], name))


def withheld_name(name: str) -> bool:
    """A variable a sandboxed program never gets from evalward's environment."""
    return name.upper().startswith(RUNNER_PLUMBING) or credential_name(name)


def credential_name(name: str) -> bool:
    """A name that says its variable holds a credential (more names than get redacted)."""
    return looks_secret(name) or _CREDENTIAL_NAME.search(name) is not None


async def spawn(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: bool = True,
    sandbox: Sandbox | None = None,
    pass_fds: tuple[int, ...] = (),
    stream_limit: int = STREAM_LIMIT,
) -> asyncio.subprocess.Process:
    """Start `argv` in its own session (process group) with pipes for stdio (and `pass_fds`
    kept open in it, under the same numbers). `stream_limit` is its output streams' longest
    line, and half of what each holds unread before it stops taking more from the pipe.

    A program given as a path must resolve (symlinks followed) inside `cwd`, the checkout.
    In a `sandbox` it runs in the sandbox's working copy of `cwd`, as its user, with a new
    private HOME/TMPDIR that `kill_group(..., sandbox=)` removes.
    """
    home: Path | None = None
    user = sandbox.user if sandbox is not None else None
    if sandbox is not None:
        if sandbox.unavailable:
            raise AgentRunError(sandbox.unavailable)
        cwd = sandbox.working_copy(cwd)
        home = sandbox.new_home()
        env = {**env, **sandbox.environment(home, env)}
    try:
        program_path(cwd, argv[0])
    except OutsideRepository:
        _forget(sandbox, home)
        raise AgentRunError(
            f"cannot start {argv[0]!r}: the program leaves the repository; run a program "
            "inside it, or one on PATH by its name"
        ) from None
    starting = sandbox.sessions.lock if sandbox is not None else contextlib.nullcontext()
    try:
        async with starting:  # its session is known before another user's strays are ended
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
                env=dict(env),
                stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                pass_fds=pass_fds,
                limit=stream_limit,
                # Popen's defaults when there is no user to switch to
                user=user.uid if user else None,
                group=user.gid if user else None,
                extra_groups=[] if user else None,
                umask=0o077 if user else -1,
                preexec_fn=landlock.confinement() if user else None,
            )
            if sandbox is not None and home is not None:
                sandbox.keep(process.pid, home)
    except (OSError, ValueError, SubprocessError) as exc:  # ValueError: a NUL in an argument
        _forget(sandbox, home)
        raise AgentRunError(_why_not_started(argv[0], exc, cwd, user)) from None
    return process


def _why_not_started(program: str, exc: Exception, cwd: Path, user: AgentUser | None) -> str:
    """Why `program` could not start, in a sentence that says what to change."""
    if isinstance(exc, FileNotFoundError):
        return (
            f"cannot start {program!r}: no such program (paths are relative to the repository "
            "root, and there is no shell)"
        )
    if isinstance(exc, SubprocessError):
        return f"cannot start {program!r}: {landlock.NOT_ENTERED}"
    if not isinstance(exc, PermissionError):
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return f"cannot start {program!r}: {detail}"
    if user is None:
        return f"cannot start {program!r}: it is not executable"
    if exc.filename == str(cwd):
        return f"cannot start {program!r}: the user {user.name} cannot enter {cwd}"
    return (
        f"cannot start {program!r}: the user {user.name} may not run it (it is not "
        "executable, or a directory on its path is closed to other users)"
    )


def _forget(sandbox: Sandbox | None, home: Path | None) -> None:
    if sandbox is not None and home is not None:
        sandbox.discard(home)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def kill_group(
    process: asyncio.subprocess.Process,
    grace: float = DEFAULT_KILL_GRACE,
    *,
    sandbox: Sandbox | None = None,
) -> str:
    """SIGTERM the process group, then SIGKILL whatever is left after `grace` seconds; then
    remove the process's sandbox home (off the event loop: it holds whatever the program
    left). What of the home could not be removed, or ""."""
    if process.returncode is None:
        _signal_group(process.pid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                await process.wait()
    # Children that outlived the leader, or a leader that ignored SIGTERM.
    _signal_group(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        await process.wait()
    home = sandbox.release(process.pid) if sandbox is not None else None
    if home is None:
        return ""
    left = await asyncio.to_thread(Sandbox.discard, home)
    return f"what the program left in its HOME/TMPDIR could not be removed: {left}" if left else ""


def tail(data: bytes, limit: int = 4000) -> str:
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= limit else "…" + hidden(text)[-limit:]


async def last_stderr_line(stderr: asyncio.Task[bytes], grace: float) -> str:
    """ ": " and the last line a program that ended wrote on stderr, for the sentence that says
    it ended; "" when it wrote none, or a process that left its group holds stderr open."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(grace + 1):
            lines = tail(await stderr, 500).strip().splitlines()
            return f": {lines[-1]}" if lines else ""
    return ""


async def read_bounded(stream: asyncio.StreamReader | None, limit: int) -> bytes | None:
    """Read a stream to its end: all it held, or None as soon as that is more than `limit`
    bytes (what was read is dropped then; more than `limit` and a chunk is never kept)."""
    if stream is None:
        return b""
    kept = bytearray()
    while chunk := await stream.read(65536):
        kept.extend(chunk)
        if len(kept) > limit:
            return None
    return bytes(kept)


async def read_tail(stream: asyncio.StreamReader | None, keep: int = 64 * 1024) -> bytes:
    """Drain a stream to its end, keeping only its last `keep` bytes."""
    if stream is None:
        return b""
    kept = bytearray()
    while chunk := await stream.read(65536):
        kept.extend(chunk)
        if len(kept) > keep:
            del kept[: len(kept) - keep]
    return bytes(kept)
