"""Run a bring-your-own agent process (`runtime.command`) for one fixture.

The request goes to stdin as one JSON object; the trace comes back as JSON lines on stdout,
applied as they arrive so a timeout keeps what the agent did. stderr is kept (tail) for the
report. On timeout the whole process group is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalward import jsontext
from evalward.errors import AgentRunError
from evalward.resources.agent import CommandRuntime
from evalward.runtime.process import (
    DEFAULT_KILL_GRACE,
    STREAM_LIMIT,
    kill_group,
    limited_env,
    read_tail,
    spawn,
    tail,
)
from evalward.runtime.protocol import ProtocolError, apply_event
from evalward.runtime.sandbox import Sandbox
from evalward.trace import StepType, Trace

MAX_TRACE_BYTES = 32 * 1024 * 1024
"""Most trace events one run may write: an agent that floods stdout is stopped, not stored."""


DRAIN_IDLE_SECONDS = 0.5
"""After the agent's process group is gone, how long its stdout may stay silent before
evalward stops reading: what it wrote before it ended is already in the pipe."""


def _group_gone(process: asyncio.subprocess.Process) -> bool:
    """Whether the agent and every process of its group have ended (a worker it started in
    its own group may still be writing after the agent itself exited)."""
    if process.returncode is None:
        return False
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # a member runs as another user
    return False


def _close_pipes(process: asyncio.subprocess.Process) -> None:
    """Stop reading what a process left behind still writes into the agent's pipes."""
    transport = getattr(process, "_transport", None)
    if process.returncode is not None and transport is not None:
        transport.close()


async def run_command_agent(
    runtime: CommandRuntime,
    request: Mapping[str, Any],
    trace: Trace,
    *,
    root: Path,
    env: Mapping[str, str],
    timeout_seconds: float,
    kill_grace: float = DEFAULT_KILL_GRACE,
    extra_env: Mapping[str, str] | None = None,
    sandbox: Sandbox | None = None,
) -> None:
    """`extra_env` (the model proxy's variables) is set whatever the allow-list says."""
    timeout = runtime.timeout_seconds or timeout_seconds
    extra = {**(extra_env or {}), "EVALWARD_PROTOCOL": "1"}
    try:
        process = await spawn(
            runtime.run,
            cwd=root,
            env=limited_env(env, runtime.env, extra, sandbox=sandbox),
            sandbox=sandbox,
        )
    except AgentRunError as exc:
        trace.add(StepType.error, content=f"the agent could not start: {exc}")
        return
    stderr_task = asyncio.create_task(read_tail(process.stderr))
    problem: list[str] = []
    number = received = 0  # stdout lines and bytes taken so far

    async def feed() -> None:
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            process.stdin.write(json.dumps(request, ensure_ascii=False).encode() + b"\n")
            await process.stdin.drain()
            process.stdin.close()

    def take(line: bytes) -> None:
        """One line of stdout: a trace event, or the problem that ends the run."""
        nonlocal number, received
        number += 1
        received += len(line)
        if received > MAX_TRACE_BYTES:
            problem.append(
                f"the agent wrote more than {MAX_TRACE_BYTES} bytes of trace events; "
                "the run was stopped there"
            )
        elif line.strip():
            try:
                apply_event(trace, jsontext.loads(line))
            except (ValueError, ProtocolError) as exc:
                shown = line.decode("utf-8", errors="replace").strip()[:120]
                problem.append(
                    f"stdout line {number} is not a trace event ({exc}): {shown!r}. "
                    "Write one JSON event per line to stdout and logs to stderr."
                )

    async def read_events() -> None:
        assert process.stdout is not None
        while not problem:
            try:
                line = await process.stdout.readline()
            except ValueError:  # a line longer than the stream's limit
                problem.append(
                    f"stdout line {number + 1} is not a trace event: it is longer than "
                    f"{STREAM_LIMIT} bytes. Write one JSON event per line to stdout."
                )
                break
            if not line:
                return
            take(line)
        # The protocol is broken: nothing more it writes counts, so stop it now.
        await kill_group(process, kill_grace)

    async def take_unfinished_line() -> None:
        """What the agent wrote last without a newline, already in the pipe."""
        assert process.stdout is not None
        with contextlib.suppress(TimeoutError):
            rest = await asyncio.wait_for(process.stdout.read(STREAM_LIMIT), 0.05)
            if rest and not problem:
                take(rest)

    async def until_exit() -> None:
        """Feed the request and read events until the agent has exited and what it wrote is
        read. A process it left behind outside its group can hold stdout (and asyncio's
        `wait`, which waits for the pipes too) open long after: once the agent's process
        group is gone and stdout has stayed quiet since, nothing more counts."""
        reader = asyncio.create_task(read_events())
        waiter = asyncio.create_task(process.wait())
        try:
            await feed()
            while not reader.done():
                # Stop only after a whole quiet window that began with the group gone: what
                # the agent wrote before it ended was in the pipe all that time.
                ended, before = _group_gone(process), number
                await asyncio.wait({reader}, timeout=DRAIN_IDLE_SECONDS)
                if ended and number == before:
                    reader.cancel()
                    await asyncio.gather(reader, return_exceptions=True)
                    await take_unfinished_line()
                    break
            if reader.done() and not reader.cancelled() and reader.exception() is not None:
                return  # raised below, without waiting for the agent to end
            while process.returncode is None:  # stdout closed; the process may still run
                await asyncio.wait({waiter}, timeout=DRAIN_IDLE_SECONDS)
        finally:
            for task in (reader, waiter):
                if not task.done():
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
        if not reader.cancelled():
            reader.result()  # a failure while reading is not hidden

    timed_out = False
    try:
        await asyncio.wait_for(until_exit(), timeout)
    except TimeoutError:
        timed_out = True
    finally:
        await kill_group(process, kill_grace, sandbox=sandbox)
        try:
            trace.stderr = tail(await asyncio.wait_for(stderr_task, kill_grace + 1))
        except TimeoutError:
            trace.stderr = "(stderr still held open by a process that left the group)"
        _close_pipes(process)
    if problem:
        trace.add(StepType.error, content=problem[0])
    elif timed_out:
        trace.time_out(
            f"the agent did not finish within {timeout:g} s; its process group was killed"
        )
    elif process.returncode != 0:
        last = trace.stderr.strip().splitlines()[-1:] or [""]
        trace.add(
            StepType.error,
            content=f"the agent exited with code {process.returncode}"
            + (f": {last[0]}" if last[0] else ""),
        )
    elif not any(s.type in (StepType.final, StepType.error) for s in trace.steps):
        trace.add(StepType.error, content="the agent exited without a `final` event")
