"""Executing a declarative agent's tool calls during an eval run.

Order of precedence for a call: the fixture's `toolReplay` (recorded outputs), the fixture's
`shadowTools` (never executed, a stub result), the tool's `mock` output, its `command`.
A `sideEffects: true` command tool that a fixture neither shadows nor replays is refused
before the run starts (preflight.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from evalward.errors import AgentRunError, ConfigError
from evalward.providers.base import ToolCall
from evalward.resources.agent import Tool, ToolCommand
from evalward.runtime.process import Launch, kill_group, limited_env, spawn, tail

_TEMPLATES = SandboxedEnvironment(undefined=jinja2.ChainableUndefined, autoescape=False)


class ReplayEntry(BaseModel):
    """One recorded tool output of a fixture's `toolReplay`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel)

    tool: str
    arguments: dict[str, Any] | None = None
    """When given, a partial match: every key here must equal the call's."""
    output: str | dict[str, Any] | list[Any]
    is_error: bool = False

    def matches(self, call: ToolCall) -> bool:
        return call.name == self.tool and (
            self.arguments is None or _contains(call.arguments, self.arguments)
        )


def _contains(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _contains(actual[k], v) for k, v in expected.items()
        )
    return bool(actual == expected)


@dataclass
class FixtureTools:
    """A fixture's replayed and shadowed tools, as read from its spec."""

    replay: list[ReplayEntry] = field(default_factory=list)
    shadow: frozenset[str] = frozenset()

    @classmethod
    def parse(
        cls,
        fixture: str,
        tool_replay: Sequence[Mapping[str, Any] | BaseModel] | None,
        shadow_tools: Sequence[str] | None,
    ) -> FixtureTools:
        entries: list[ReplayEntry] = []
        for index, raw in enumerate(tool_replay or []):
            data = raw.model_dump(by_alias=True) if isinstance(raw, BaseModel) else dict(raw)
            try:
                entries.append(ReplayEntry.model_validate(data))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ConfigError(
                    f"fixture {fixture!r}: spec.toolReplay[{index}].{where}: {first['msg']}"
                ) from None
        return cls(entries, frozenset(shadow_tools or []))

    @property
    def replayed_tools(self) -> frozenset[str]:
        return frozenset(e.tool for e in self.replay)


@dataclass(frozen=True)
class ToolResult:
    output: str
    is_error: bool
    source: str


@dataclass
class ToolExecutor:
    """Executes the tool calls of one run; replay entries are consumed in order."""

    tools: Mapping[str, Tool]
    fixture: FixtureTools
    launch: Launch
    _used: set[int] = field(default_factory=set)

    async def execute(self, call: ToolCall) -> ToolResult:
        tool = self.tools.get(call.name)
        if tool is None:
            return ToolResult(f"error: no tool named {call.name!r} is available", True, "evalward")
        if call.name in self.fixture.replayed_tools:
            return self._replay(call)
        if call.name in self.fixture.shadow:
            stub = {"shadowed": True, "tool": call.name, "note": "not executed during evals"}
            return ToolResult(json.dumps(stub), False, "shadow")
        if tool.mock is not None:
            output = render_mock(tool.mock.output, call.arguments)
            return ToolResult(_as_text(output), False, "mock")
        if tool.command is not None:
            return await self._command(tool.command, call)
        return ToolResult(
            f"error: tool {call.name!r} has no implementation (give it `mock` or `command`)",
            True,
            "evalward",
        )

    def _replay(self, call: ToolCall) -> ToolResult:
        for index, entry in enumerate(self.fixture.replay):
            if index not in self._used and entry.matches(call):
                self._used.add(index)
                return ToolResult(_as_text(entry.output), entry.is_error, "replay")
        return ToolResult(
            f"error: no recorded output left in toolReplay for {call.name} with arguments "
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
                command.run, cwd=self.launch.root, env=env, sandbox=self.launch.sandbox
            )
        except AgentRunError as exc:
            return ToolResult(f"error: {exc}", True, "command")
        try:
            async with asyncio.timeout(command.timeout_seconds):
                stdout, stderr = await process.communicate(json.dumps(call.arguments).encode())
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


def render_mock(output: Any, arguments: Mapping[str, Any]) -> Any:
    """Render every string of a mock output as a template over the call's arguments."""
    if isinstance(output, str):
        if "{{" not in output and "{%" not in output:
            return output
        try:
            return _TEMPLATES.from_string(output).render(**arguments)
        except jinja2.TemplateError as exc:
            return f"error: the mock output template failed: {exc}"
    if isinstance(output, dict):
        return {k: render_mock(v, arguments) for k, v in output.items()}
    if isinstance(output, list):
        return [render_mock(v, arguments) for v in output]
    return output


def _as_text(output: Any) -> str:
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
