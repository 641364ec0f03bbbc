"""Executing a declarative agent's tool calls during an eval run.

Order of precedence for a call: the fixture's `toolReplay` (recorded outputs), the fixture's
`shadowTools` (never executed, a stub result), the tool's `mock` output, its `command`, or
its MCP server (runtime/tools/mcp_tools.py). A `sideEffects: true` command tool, or an MCP server's
tool its `sideEffects` lists, that a fixture neither shadows nor replays is refused before
the run starts (preflight.py).

A command tool's stdout is its result, read as it arrives: past `MAX_OUTPUT_BYTES` in one call
the tool is stopped and the run ends there, an error naming the tool and the bound (as for an
MCP server's reply over its bound). Its stderr is kept only as a tail, for the error of a
tool that exits non-zero.

A fixture names an agent's own tool by its name; an MCP server's tool by its name or its
qualified name (`orders__lookup_order`, `orders.lookup_order`), as assertions do
(text/tool_names.py). A bare name two tools end in is replayed for neither, and shadows
both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalward.errors import AgentRunError
from evalward.providers.base import ToolCall, ToolSpec
from evalward.resources.agents.agent import Tool, ToolCommand
from evalward.resources.models import ToolReplay
from evalward.rundata.trace import NO_SUCH_TOOL
from evalward.runtime.agents.process import (
    Launch,
    kill_group,
    limited_env,
    read_bounded,
    read_tail,
    spawn,
    tail,
)
from evalward.runtime.tools.mcp_tools import McpTool, McpToolbox
from evalward.runtime.tools.mock_templates import render_mock
from evalward.text import tool_names

MAX_OUTPUT_BYTES = 4 * 1024 * 1024
"""Most a command tool may print on stdout for one call: an MCP server's bound for one reply
(runtime/tools/mcp_wire.py), a million tokens or so, already more than a model reads."""
PIPE_HELD = 64 * 1024
"""Half of what evalward holds of a command tool's stdout or stderr that it has not read yet."""


def _contains(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _contains(actual[k], v) for k, v in expected.items()
        )
    return bool(actual == expected)


@dataclass
class FixtureTools:
    """A fixture's replayed and shadowed tools (its `toolReplay` and `shadowTools`)."""

    replay: Sequence[ToolReplay] = ()
    shadow: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ToolResult:
    output: str
    is_error: bool
    source: str
    failure: str | None = None
    """Why the run ends at this call (its error step), when it does: a tool past a bound."""


@dataclass
class ToolExecutor:
    """Executes the tool calls of one run; replay entries are consumed in order."""

    tools: Mapping[str, Tool]
    fixture: FixtureTools
    launch: Launch
    mcp: McpToolbox | None = None
    """The run's MCP servers, when its agent names any."""
    _used: set[int] = field(default_factory=set)

    def offered(self) -> tuple[ToolSpec, ...]:
        """Every tool the model is offered: the agent's own, then its MCP servers'."""
        own = [ToolSpec(name, t.description, t.parameters) for name, t in self.tools.items()]
        served = [ToolSpec(t.offered, t.description, t.parameters) for t in self._served()]
        return (*own, *served)

    def offered_names(self) -> list[str]:
        """Every tool offered, by the name the trace records a call of it by (an MCP tool's
        qualified): what a base fixture's guard of a renamed tool reads (`Trace.offered_tools`)."""
        return [*self.tools, *(t.qualified for t in self._served())]

    def recorded(self, name: str) -> tuple[str, str | None]:
        """The name the trace records for a call of `name`, and the MCP server it goes to."""
        tool = self._mcp_tool(name)
        return (tool.qualified, tool.server) if tool is not None else (name, None)

    def _served(self) -> Sequence[McpTool]:
        return self.mcp.tools if self.mcp is not None else ()

    def _mcp_tool(self, offered: str) -> McpTool | None:
        if offered in self.tools:
            return None
        return next((t for t in self._served() if t.offered == offered), None)

    def _means(self, written: str, name: str, *, ambiguous: bool) -> bool:
        """Whether a fixture's `written` name stands for the tool the trace records as
        `name`, as assertions and the checks before a run read names (`tool_names`): an own
        tool named `pay__refund_order` is what `shadowTools: [refund_order]` stands in for,
        as `toolCalled: refund_order` counts its calls, or renaming it so would run it for
        real under a fixture that shadows it."""
        if written == name:
            return True
        known = [*self.tools, *(t.qualified for t in self._served())]
        return name in tool_names.resolve(written, known, ambiguous=ambiguous)

    async def execute(self, call: ToolCall) -> ToolResult:
        """The call's result; McpFailure when its MCP server broke the protocol or a bound."""
        tool = self.tools.get(call.name)
        served = self._mcp_tool(call.name)
        if tool is None and served is None:
            missing = f"error: no tool named {call.name!r} is available"
            return ToolResult(missing, True, NO_SUCH_TOOL)
        name = served.qualified if served is not None else call.name
        if any(self._means(e.tool, name, ambiguous=False) for e in self.fixture.replay):
            return self._replay(call, name)
        twin = next(
            (e.tool for e in self.fixture.replay if self._means(e.tool, name, ambiguous=True)), None
        )
        if twin is not None:
            # the fixture replays a tool this one could be, as could another of the agent's
            # (a twin a second server lists): which it meant is not known, so it is neither
            # replayed nor run, where running it would do what the replay stands in for
            said = (
                f"error: toolReplay names {twin}, which could be {name} or another of the "
                "agent's tools; it ran neither: name the tool qualified by its server"
            )
            return ToolResult(said, True, "replay")
        if any(self._means(s, name, ambiguous=True) for s in self.fixture.shadow):
            stub = {"shadowed": True, "tool": name, "note": "not executed during evals"}
            return ToolResult(json.dumps(stub), False, "shadow")
        if served is not None:
            assert self.mcp is not None
            answer = await self.mcp.call(served, call.arguments)
            return ToolResult(answer.text, answer.is_error, "mcp")
        assert tool is not None
        if tool.mock is not None:
            output = render_mock(tool.mock.output, call.arguments)
            return ToolResult(tool_text(output), False, "mock")
        if tool.command is not None:
            return await self._command(tool.command, call)
        return ToolResult(
            f"error: tool {call.name!r} has no implementation (give it `mock` or `command`)",
            True,
            "evalward",
        )

    def _replay(self, call: ToolCall, name: str) -> ToolResult:
        for index, entry in enumerate(self.fixture.replay):
            if (
                index not in self._used
                and self._means(entry.tool, name, ambiguous=False)
                and (entry.arguments is None or _contains(call.arguments, entry.arguments))
            ):
                self._used.add(index)
                return ToolResult(tool_text(entry.output), entry.is_error, "replay")
        return ToolResult(
            f"error: no recorded output left in toolReplay for {name} with arguments "
            f"{json.dumps(call.arguments, sort_keys=True)}",
            True,
            "replay",
        )

    async def _command(self, command: ToolCommand, call: ToolCall) -> ToolResult:
        env = limited_env(
            self.launch.env,
            command.env,
            {**self.launch.extra_env, "EVALWARD_TOOL": call.name},
            sandbox=self.launch.sandbox,
        )
        try:
            process = await spawn(
                command.run,
                cwd=self.launch.root,
                env=env,
                sandbox=self.launch.sandbox,
                stream_limit=PIPE_HELD,
            )
        except AgentRunError as exc:
            return ToolResult(f"error: {exc}", True, "command")
        feeding = asyncio.create_task(_feed(process, json.dumps(call.arguments).encode()))
        errors = asyncio.create_task(read_tail(process.stderr))
        try:
            async with asyncio.timeout(command.timeout_seconds):
                stdout = await read_bounded(process.stdout, MAX_OUTPUT_BYTES)
                if stdout is None:
                    return _flooded(call.name)
                await process.wait()
                stderr = await errors
        except TimeoutError:
            return ToolResult(
                f"error: the tool command timed out after {command.timeout_seconds:g} s",
                True,
                "command",
            )
        finally:
            left = await kill_group(process, self.launch.kill_grace, sandbox=self.launch.sandbox)
            if left:
                self.launch.left_behind.append(left)
            for task in (feeding, errors):
                task.cancel()
            await asyncio.gather(feeding, errors, return_exceptions=True)
        output = stdout.decode("utf-8", errors="replace").rstrip("\n")
        if process.returncode != 0:
            detail = tail(stderr, 1000).strip()
            return ToolResult(
                f"error: the tool command exited with {process.returncode}"
                + (f": {detail}" if detail else ""),
                True,
                "command",
            )
        return ToolResult(output, False, "command")


async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
    """The call's arguments on the tool's stdin, then end of file; a tool that does not read
    them (and exits) is no fault."""
    stdin = process.stdin
    assert stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    stdin.close()


def _flooded(tool: str) -> ToolResult:
    """A command tool that printed past the bound: stopped, its output not the model's."""
    bound = f"{MAX_OUTPUT_BYTES // (1024 * 1024)} MiB"
    return ToolResult(
        f"error: the tool command printed more than {bound} on stdout and was stopped",
        True,
        "command",
        failure=(
            f"tool {tool!r}: its command printed more than {bound} on stdout for one call "
            f"(evalward's bound, {MAX_OUTPUT_BYTES} bytes); it was stopped and its output "
            "not given to the model"
        ),
    )


def tool_text(output: Any) -> str:
    """A mocked or replayed output as the agent reads it (and the estimate sizes it)."""
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
