"""A command agent kept running for a whole conversation (`runtime.command.repl`): the REPL
shape of most quickstarts, a loop that reads a line and answers it.

evalward starts the program once per conversation and writes each user turn to its stdin as
one line (`stdin: text`: the message, its line breaks as spaces; `stdin: json`: the turn's
request as one JSON object). The reply to a turn is complete when the program writes a
`final` trace event on stdout, or prints `repl.prompt` again — the text it shows before it
reads the next line, as `input("> ")` does — and the text before the prompt is the reply.
evalward waits for the first prompt before the first turn (a banner printed before it is
not a reply). Nothing is guessed from silence. When the conversation ends, stdin is closed
and the process group is stopped.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from evalward.errors import AgentRunError, ProtocolError
from evalward.resources.agents.agent_runtime import CommandRuntime
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.command import (
    MAX_TRACE_BYTES,
    ModelWords,
    command_argv,
    no_event,
    stdout_event,
    stop_agent,
)
from evalward.runtime.agents.process import Launch, limited_env, read_tail, spawn
from evalward.runtime.telemetry.protocol import apply_event


class ReplSession:
    """One running REPL agent and what it has printed since the last turn began."""

    def __init__(self, runtime: CommandRuntime, launch: Launch, trace: Trace) -> None:
        assert runtime.repl is not None, "a REPL session needs `repl`"
        self.runtime = runtime
        self.prompt = runtime.repl.prompt.encode()
        self.launch = launch
        self.trace = trace
        self.model_words = ModelWords(trace)
        self.process: asyncio.subprocess.Process | None = None
        self.pending = bytearray()
        """What the agent printed since the turn began that is no event: the reply's text
        lines, then the line it is still writing."""
        self.read_to = 0
        """Where in `pending` the lines not yet read begin (the text before it is read)."""
        self.received = 0
        self.lines = 0
        """The lines of stdout read so far, the session's (a line's number in errors)."""
        self._stderr: asyncio.Task[bytes] | None = None

    async def start(self, timeout: float) -> str:
        """Start the program and wait for its first prompt; "" when it is ready, else why not."""
        extra = {**self.launch.extra_env, "EVALWARD_PROTOCOL": "1"}
        try:
            self.process = await spawn(
                command_argv(self.runtime, ""),
                cwd=self.launch.root,
                env=limited_env(
                    self.launch.env, self.runtime.env, extra, sandbox=self.launch.sandbox
                ),
                sandbox=self.launch.sandbox,
            )
        except AgentRunError as exc:
            return f"the agent could not start: {exc}"
        self._stderr = asyncio.create_task(read_tail(self.process.stderr))
        waited = await self._until_reply(timeout)
        if waited is None:
            return ""
        shown = self.prompt.decode(errors="replace")
        if waited.startswith("within"):
            return f"the agent showed no prompt {shown!r} {waited} (`repl.prompt`)"
        return f"the agent showed no prompt {shown!r} (`repl.prompt`): it {waited}"

    async def turn(self, line: str, request: Mapping[str, Any], timeout: float) -> str:
        """Send one user turn; the reply's text ("" when a problem ended the run: the trace
        then holds it as an error)."""
        process = self.process
        assert process is not None and process.stdin is not None, "started"
        data = (
            json.dumps(request, ensure_ascii=False)
            if self.runtime.stdin == "json"
            else " ".join(line.splitlines())
        )
        try:
            process.stdin.write(data.encode() + b"\n")
            await process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            self.trace.add(StepType.error, content="the agent stopped reading its input")
            return ""
        self.pending.clear()
        self.read_to = 0
        before = len(self.trace.steps)
        problem = await self._until_reply(timeout)
        if problem is not None:
            if problem.startswith("within"):
                self.trace.time_out(f"the agent gave no reply {problem}")
            else:
                self.trace.add(StepType.error, content=f"the agent {problem}")
            return ""
        finals = [s for s in self.trace.steps[before:] if s.type is StepType.final]
        return finals[-1].content if finals else self.pending.decode("utf-8", "replace").strip()

    async def _until_reply(self, timeout: float) -> str | None:
        """Read until the prompt or a `final` event; None when one came, else the problem."""
        process = self.process
        assert process is not None and process.stdout is not None
        steps_before = len(self.trace.steps)
        try:
            async with asyncio.timeout(timeout):
                while True:
                    chunk = await process.stdout.read(65536)
                    if not chunk:
                        await process.wait()
                        return f"ended (exit status {process.returncode})"
                    self.received += len(chunk)
                    if self.received > MAX_TRACE_BYTES:
                        return f"wrote more than {MAX_TRACE_BYTES} bytes; it was stopped there"
                    self.pending.extend(chunk)
                    if self._events(steps_before) or self.pending.endswith(self.prompt):
                        if self.pending.endswith(self.prompt):
                            del self.pending[-len(self.prompt) :]
                        return None
        except TimeoutError:
            return f"within {timeout:g} s"
        except ProtocolError as exc:
            return str(exc)

    def _events(self, steps_before: int) -> bool:
        """Apply the lines of `pending` completed since the last look that are trace events
        (the rest is the reply's text); whether a `final` event came. Each line is read
        once: the reply's text lines were read again with every 64 KiB that came, the
        square of the reply's length on the event loop."""
        end = self.pending.rfind(b"\n", self.read_to) + 1
        if end == 0:
            return False
        text = bytearray()
        applied = False
        for line in bytes(self.pending[self.read_to : end]).split(b"\n")[:-1]:
            self.lines += 1
            event = stdout_event(line)  # read as a one-shot command agent's line is
            if event is None or self.model_words.said(line):
                text += line + b"\n"
                continue
            try:
                apply_event(self.trace, event)
            except ProtocolError as exc:
                where = f"wrote stdout line {self.lines}, which"
                raise ProtocolError(f"{where} {no_event(line, exc)}") from None
            applied = True
        self.pending[self.read_to : end] = text
        self.read_to += len(text)
        return applied and any(s.type is StepType.final for s in self.trace.steps[steps_before:])

    async def close(self) -> None:
        process = self.process
        if process is None:
            return
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()
        assert self._stderr is not None, "read from the start"
        await stop_agent(process, self._stderr, self.launch, self.trace)
