"""Child processes from the PR head: no shell, a limited environment, own process group.

Every program evalward starts from a checkout (command tools, bring-your-own agents) runs in
a new session so that a timeout can kill the whole group, grandchildren included, and a
process that ignores SIGTERM still dies (SIGKILL after a grace period).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

from evalward.errors import AgentRunError
from evalward.resources.paths import OutsideRepository, program_path

BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT")
"""Always passed through. Anything else (API keys included) only when listed in `env`."""

DEFAULT_KILL_GRACE = 2.0
STREAM_LIMIT = 16 * 1024 * 1024
"""Longest stdout line accepted (a trace event with a large tool output)."""


def limited_env(
    env: Mapping[str, str], allow: Sequence[str], extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    out = {name: env[name] for name in (*BASE_ENV, *allow) if name in env}
    out.update(extra or {})
    return out


async def spawn(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: bool = True,
) -> asyncio.subprocess.Process:
    """Start `argv` in its own session (process group) with pipes for stdio.

    A program given as a path must resolve (symlinks followed) inside `cwd`, the checkout.
    """
    try:
        program_path(cwd, argv[0])
    except OutsideRepository:
        raise AgentRunError(
            f"cannot start {argv[0]!r}: the program leaves the repository; run a program "
            "inside it, or one on PATH by its name"
        ) from None
    try:
        return await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            limit=STREAM_LIMIT,
        )
    except FileNotFoundError:
        raise AgentRunError(
            f"cannot start {argv[0]!r}: no such program (paths are relative to the "
            "repository root, and there is no shell)"
        ) from None
    except PermissionError:
        raise AgentRunError(f"cannot start {argv[0]!r}: it is not executable") from None


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def kill_group(
    process: asyncio.subprocess.Process, grace: float = DEFAULT_KILL_GRACE
) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left after `grace` seconds."""
    if process.returncode is None:
        _signal_group(process.pid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), timeout=grace)
    # Children that outlived the leader, or a leader that ignored SIGTERM.
    _signal_group(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        await process.wait()


def tail(data: bytes, limit: int = 4000) -> str:
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= limit else "…" + text[-limit:]


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
