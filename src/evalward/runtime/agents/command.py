"""Run a bring-your-own agent process (`runtime.command`) for one fixture.

The fixture's input goes in as the program asks (`stdin: json` — the run's request as one
JSON object — or `text`, and `{input}` in its argv); trace events come back as JSON lines,
on stdout and on a pipe of their own whose path is `$EVALWARD_EVENTS`, applied as they
arrive so a timeout keeps what the agent did. Any other stdout text is the agent's answer
when it gives no `final` event (`stdout: auto`, the default), so a plain program needs no
adapter and a framework's own printing breaks nothing; so is a line that looks like an event
but is one a model reply of the run held (a program printing its model's answer). A line
whose `type` is an event's spelt otherwise (`toolCall`) and that carries the event's fields
is an error of the run (`stdout_event`).
stderr is kept (tail) for the report. On timeout the whole process group is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalward.errors import AgentRunError, ProtocolError
from evalward.resources.agents.agent_runtime import CommandRuntime
from evalward.rundata.trace import MEASURED_ORIGIN, Step, StepType, Trace
from evalward.runtime.agents.process import (
    STREAM_LIMIT,
    Launch,
    kill_group,
    limited_env,
    read_tail,
    spawn,
    tail,
)
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.runtime.proxy import past_proxy
from evalward.runtime.telemetry.protocol import EVENT_TYPES, apply_event, misspelt_event
from evalward.text import jsontext
from evalward.text.cuts import cap_chars

MAX_TRACE_BYTES = 32 * 1024 * 1024
"""Most an agent may write in one run (events and text): one that floods is stopped."""

DRAIN_IDLE_SECONDS = 0.5
"""After the agent's process group is gone, how long its output may stay silent before
evalward stops reading: what it wrote before it ended is already in the pipe."""

EXIT_POLL_SECONDS = 0.1
"""How often a run looks whether the agent's own process has exited (asyncio's `wait` also
waits for its pipes, which a process it started may hold)."""

INPUT_PLACEHOLDER = "{input}"
TEXTS = (StepType.assistant, StepType.final)
WHERE = {"stdout": "stdout", "events": "$EVALWARD_EVENTS"}


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


@dataclass
class CommandOutput:
    """What the agent writes, as it arrives: events into the trace, other stdout text kept
    as its answer, and the first problem that ends the run."""

    trace: Trace
    stdout: str
    problem: list[str] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=lambda: {"stdout": 0, "events": 0})
    received: int = 0
    text: bytearray = field(default_factory=bytearray)
    model_words: ModelWords = field(init=False)

    def __post_init__(self) -> None:
        self.model_words = ModelWords(self.trace)

    @property
    def taken(self) -> int:
        return sum(self.lines.values())

    def take(self, line: bytes, channel: str) -> None:
        """One line of stdout or of the events pipe."""
        self.lines[channel] += 1
        self.received += len(line)
        if self.received > MAX_TRACE_BYTES:
            self.problem.append(
                f"the agent wrote more than {MAX_TRACE_BYTES} bytes of trace events; "
                "the run was stopped there"
            )
            return
        if channel == "stdout" and self.stdout == "text":
            self.text += line
            return
        if not line.strip():
            return
        event: object
        if channel == "events" or self.stdout == "events":
            try:
                event = jsontext.loads(line, max_depth=jsontext.AGENT_DEPTH)
            except ValueError as exc:
                self._broken(line, channel, exc)
                return
        else:
            event = stdout_event(line)
            if event is None or self.model_words.said(line):  # the model's words: not events
                self.text += line
                return
        try:
            apply_event(self.trace, event)
        except ProtocolError as exc:
            self._broken(line, channel, exc)

    def _broken(self, line: bytes, channel: str, exc: Exception) -> None:
        self.problem.append(f"{WHERE[channel]} line {self.lines[channel]} {no_event(line, exc)}")

    def answer(self) -> str:
        return self.text.decode("utf-8", errors="replace").strip()


def stdout_event(line: bytes) -> dict[str, Any] | None:
    """A stdout line meant as a trace event: a JSON object whose `type` is an event's, or is
    one's spelt otherwise with that event's fields (`misspelt_event`), which `apply_event`
    refuses naming the event, so a misspelt tool call is not text no guard sees. None for
    text: no JSON object, or one shaped like no event (an agent may print JSON of its own,
    or its framework's stream parts). A byte order mark may come before it."""
    try:
        event = jsontext.loads(line, max_depth=jsontext.AGENT_DEPTH)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    return event if event.get("type") in EVENT_TYPES or misspelt_event(event) else None


def no_event(line: bytes, exc: Exception) -> str:
    """Why `line`, meant as a trace event, is none, shown cut (the rest of a sentence that
    names where the line is)."""
    shown = cap_chars(line.decode("utf-8", errors="replace").strip(), 120)
    return (
        f"is not a trace event ({exc}): {shown!r}. Write one JSON event per line, and logs "
        "to stderr."
    )


class _EventsPipe:
    """The pipe the agent writes events to, at `$EVALWARD_EVENTS` (`/dev/fd/N`). Its write
    end is the agent's user's, so the path opens as that user in a sandbox too."""

    def __init__(self, sandbox: Sandbox | None) -> None:
        self.read_fd, self.write_fd = os.pipe()
        user = sandbox.user if sandbox is not None else None
        if user is not None:
            os.fchown(self.write_fd, user.uid, user.gid)
        self._transport: asyncio.BaseTransport | None = None

    @property
    def env(self) -> dict[str, str]:
        return {
            "EVALWARD_EVENTS": f"/dev/fd/{self.write_fd}",
            "EVALWARD_EVENTS_FD": str(self.write_fd),
        }

    async def open(self) -> asyncio.StreamReader:
        """Close evalward's write end (the agent holds its own) and read the other."""
        os.close(self.write_fd)
        self.write_fd = -1
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=STREAM_LIMIT)
        pipe = os.fdopen(self.read_fd, "rb", buffering=0)
        self.read_fd = -1
        self._transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe
        )
        return reader

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.read_fd = self.write_fd = -1


@dataclass
class ModelWords:
    """The model replies of a run, as the model proxy saw them, gathered as their steps
    arrive: a program that prints its model's answer prints whatever the model wrote, and a
    model's words are not the program's trace (`said`). Each line is checked against these
    replies alone, not against every step of the trace again: a run whose program printed
    9,000 events took 4.9 s so, 1.3 s now (bench/speed.py, `--only events`)."""

    trace: Trace
    _seen: int = 0
    _replies: list[Step] = field(default_factory=list)

    def said(self, line: bytes) -> bool:
        """Whether `line` is one a model reply of this run held."""
        steps = self.trace.steps
        for index in range(self._seen, len(steps)):
            step = steps[index]  # a step's origin and whether it is text never change
            if step.via == MEASURED_ORIGIN and step.type in TEXTS:
                self._replies.append(step)
        self._seen = len(steps)
        if not self._replies:
            return False
        words = line.decode("utf-8", errors="replace").strip()
        return any(words in step.content for step in self._replies)


def command_argv(runtime: CommandRuntime, input_text: str) -> list[str]:
    """`run` with `{input}` replaced by the fixture's input text."""
    if not any(INPUT_PLACEHOLDER in arg for arg in runtime.run):
        return list(runtime.run)
    if "\0" in input_text:
        raise AgentRunError(
            "the fixture's input holds a NUL character, which a command line cannot carry: "
            "read it from stdin (`stdin: text` or `json`) instead of `{input}`"
        )
    return [arg.replace(INPUT_PLACEHOLDER, input_text) for arg in runtime.run]


def stdin_bytes(runtime: CommandRuntime, request: Mapping[str, Any], input_text: str) -> bytes:
    if runtime.stdin == "json":
        return json.dumps(request, ensure_ascii=False).encode() + b"\n"
    if runtime.stdin == "text":
        return (input_text if input_text.endswith("\n") else input_text + "\n").encode()
    return b""


async def run_command_agent(
    runtime: CommandRuntime,
    request: Mapping[str, Any],
    trace: Trace,
    launch: Launch,
    *,
    timeout_seconds: float,
    input_text: str = "",
    setting: str = "spec.execution.timeoutSeconds",
) -> str:
    """Run the agent into `trace` within `timeout_seconds` (the kind's choice: a turn gets
    no more than what is left of its conversation, `setting` says where it is set); return
    the text it wrote on stdout that was no event (its answer, when it gives no `final`
    event)."""
    sandbox, kill_grace = launch.sandbox, launch.kill_grace
    events = _EventsPipe(sandbox)
    extra = {**launch.extra_env, "EVALWARD_PROTOCOL": "1", **events.env}
    try:
        process = await spawn(
            command_argv(runtime, input_text),
            cwd=launch.root,
            env=limited_env(launch.env, runtime.env, extra, sandbox=sandbox),
            stdin=runtime.stdin != "none",
            sandbox=sandbox,
            pass_fds=(events.write_fd,),
        )
    except AgentRunError as exc:
        events.close()
        trace.add(StepType.error, content=f"the agent could not start: {exc}")
        return ""
    output = CommandOutput(trace, runtime.stdout)
    run = _Run(process, output, kill_grace, await events.open())
    stderr_task = asyncio.create_task(read_tail(process.stderr))
    timed_out: str | None = None
    try:
        async with asyncio.timeout(timeout_seconds):
            await run.until_exit(stdin_bytes(runtime, request, input_text))
    except TimeoutError:
        timed_out = run.why_not_done(timeout_seconds, setting)
    finally:
        await stop_agent(process, stderr_task, launch, trace)
        # stop reading what a process left behind still writes into the agent's pipes
        transport = getattr(process, "_transport", None)
        if process.returncode is not None and transport is not None:
            transport.close()
        events.close()
    _end(trace, output, process.returncode, timed_out)
    return output.answer()


async def stop_agent(
    process: asyncio.subprocess.Process, stderr: asyncio.Task[bytes], launch: Launch, trace: Trace
) -> None:
    """Stop the agent's process group (what it left in its home goes to `launch.left_behind`)
    and keep the tail of its stderr, unless a process that left the group holds it open."""
    if left := await kill_group(process, launch.kill_grace, sandbox=launch.sandbox):
        launch.left_behind.append(left)
    try:
        async with asyncio.timeout(launch.kill_grace + 1):
            trace.stderr = tail(await stderr)
    except TimeoutError:
        trace.stderr = "(stderr still held open by a process that left the group)"


def _end(
    trace: Trace, output: CommandOutput, returncode: int | None, timed_out: str | None
) -> None:
    """Why the run failed, if it did (`timed_out`: why it did not end in time)."""
    past = past_proxy.from_stderr(trace.stderr) if trace.error is None else None
    if output.problem:
        trace.add(StepType.error, content=output.problem[0])
    elif timed_out is not None:
        trace.time_out(timed_out)
    elif past is not None:
        trace.add(StepType.error, content=past)
    elif returncode != 0:
        last = trace.stderr.strip().splitlines()[-1:] or [""]
        trace.add(
            StepType.error,
            content=f"the agent exited with code {returncode}"
            + (f": {last[0]}" if last[0] else "")
            + trace.proxy_failure_note(),
        )


@dataclass
class _Run:
    """Feeding the agent and reading what it writes until it is done."""

    process: asyncio.subprocess.Process
    output: CommandOutput
    kill_grace: float
    events: asyncio.StreamReader
    started: float = field(default_factory=time.monotonic)
    exited_at: float | None = None
    """When the agent's own process was seen to have exited."""
    wrote_at: float = 0.0
    """When the last line of its output was read."""
    held: tuple[str, ...] = ()
    """The channels still open when reading stopped."""

    async def read(self, stream: asyncio.StreamReader, channel: str) -> None:
        while not self.output.problem:
            try:
                line = await stream.readline()
            except ValueError:  # a line longer than the stream's limit
                self.output.problem.append(
                    f"{WHERE[channel]} line {self.output.lines[channel] + 1} is not a trace event: "
                    f"it is longer than {STREAM_LIMIT} bytes. Write one JSON event per line."
                )
                break
            if not line:
                return
            self.output.take(line, channel)
            self.wrote_at = time.monotonic()
        # The agent's output is broken: nothing more it writes counts, so stop it now.
        await kill_group(self.process, self.kill_grace)

    async def watch_exit(self) -> None:
        """Note when the agent's own process has exited (`exited_at`)."""
        while self.process.returncode is None:
            await asyncio.sleep(EXIT_POLL_SECONDS)
        self.exited_at = time.monotonic()

    def why_not_done(self, seconds: float, setting: str) -> str:
        """Why the run did not end within `seconds`: the agent was still running; or its
        process had exited and a process it started held its output open, writing on (an
        agent that needed longer) or silent since (a leftover that no longer timeout helps:
        it is to be started otherwise)."""
        if self.process.returncode is None or not self.held:
            return (
                f"the agent did not finish within {seconds:g} s ({setting}); its process group "
                "was killed"
            )
        exited_at = self.exited_at if self.exited_at is not None else time.monotonic()
        after = exited_at - self.started
        exited = "in under a second" if after < 1 else f"{after:.0f} s in"
        held = " and ".join(WHERE[channel] for channel in self.held)
        if self.wrote_at > exited_at + DRAIN_IDLE_SECONDS:
            return (
                f"the agent did not finish within {seconds:g} s ({setting}): its process "
                f"exited {exited}, and a process it started went on writing to its {held}; "
                "its process group was killed"
            )
        if "events" not in self.held:
            fix = "redirect its stdout and stderr (`cmd >/dev/null 2>&1 &`)"
        elif "stdout" not in self.held:
            fix = "close $EVALWARD_EVENTS_FD in it (bash: `cmd {EVALWARD_EVENTS_FD}>&- &`)"
        else:
            fix = (
                "redirect its stdout and stderr and close $EVALWARD_EVENTS_FD "
                "(bash: `cmd >/dev/null 2>&1 {EVALWARD_EVENTS_FD}>&- &`)"
            )
        return (
            f"the agent's process exited {exited}, but a process it started kept its {held} "
            f"open until the timeout ({seconds:g} s); its process group was killed. A process "
            f"left running must not hold {'them' if len(self.held) > 1 else 'it'}: {fix}, "
            "or end it before the agent exits"
        )

    async def feed(self, data: bytes) -> None:
        stdin = self.process.stdin
        if stdin is None:
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.write(data)
            await stdin.drain()
            stdin.close()

    async def take_unfinished(self, stream: asyncio.StreamReader, channel: str) -> None:
        """What the agent wrote last without a newline, already in the pipe."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.05):
                rest = await stream.read(STREAM_LIMIT)
            if rest and not self.output.problem:
                self.output.take(rest, channel)

    async def until_exit(self, data: bytes) -> None:
        """Feed the input and read output until the agent has exited and what it wrote is
        read. A process it left behind outside its group can hold the pipes (and asyncio's
        `wait`, which waits for them too) open long after: once the agent's process group
        is gone and its output has stayed quiet since, nothing more counts."""
        assert self.process.stdout is not None
        streams = {"stdout": self.process.stdout, "events": self.events}
        readers = {
            asyncio.create_task(self.read(stream, channel)): channel
            for channel, stream in streams.items()
        }
        waiter = asyncio.create_task(self.process.wait())
        watcher = asyncio.create_task(self.watch_exit())
        try:
            await self.feed(data)
            while not all(reader.done() for reader in readers):
                # Stop only after a whole quiet window that began with the group gone: what
                # the agent wrote before it ended was in the pipes all that time.
                ended, before = _group_gone(self.process), self.output.taken
                pending = {reader for reader in readers if not reader.done()}
                await asyncio.wait(pending, timeout=DRAIN_IDLE_SECONDS)
                if ended and self.output.taken == before:
                    for reader in pending:
                        reader.cancel()
                    await asyncio.gather(*pending, return_exceptions=True)
                    for reader in pending:
                        await self.take_unfinished(streams[readers[reader]], readers[reader])
                    break
            for reader in readers:
                if reader.done() and not reader.cancelled() and reader.exception() is not None:
                    return  # raised below, without waiting for the agent to end
            while self.process.returncode is None:  # output closed; the process may still run
                await asyncio.wait({waiter}, timeout=DRAIN_IDLE_SECONDS)
        finally:
            self.held = tuple(channel for reader, channel in readers.items() if not reader.done())
            for task in (*readers, waiter, watcher):
                if not task.done():
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
        for reader in readers:
            if not reader.cancelled():
                reader.result()  # a failure while reading is not hidden
