"""A bring-your-own agent's `runtime`: the settings of each kind, and what the definitions
alone say of it.

Each kind's settings answer, below every stage that asks, what the agent's definition alone
decides: the program it starts (`program()`, an `AgentProgram`) and what preflight refuses
(`system_refusal()`). How a run of each kind is carried out is its module's in
runtime/agents/kinds/, which `RuntimeKind` names. See docs/agent-protocols.md.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evalward.resources.common import Model, error_at
from evalward.resources.reading.yamlsource import PathKey

ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"

RuntimeKind = Literal["declarative", "command", "repl", "http"]
"""What runs an agent: evalward's tool loop or its `runtime`; the key of its module in
runtime/agents/kinds/registry.py."""


@dataclass(frozen=True)
class AgentProgram:
    """A program an agent names — its runtime's, a command tool's, a stdio MCP server's: what
    it is (`the command tool 'refund'`), where its argv is set, the argv, the variables it
    asks for by name, and whether a run may start it (a disabled tool never starts). The one
    list change detection, the sandbox's variables, the file checks and preflight all read."""

    what: str
    at: PathKey
    argv: list[str]
    env: list[str]
    starts: bool = True
    runtime: bool = False


def argv_shorthand(value: Any) -> Any:
    """`command: [python3, tool.py]` is short for `command: { run: [python3, tool.py] }`."""
    return {"run": value} if isinstance(value, list) else value


def check_env_names(names: list[str]) -> list[str]:
    """`names`, each checked to be an environment variable's."""
    for name in names:
        if not re.match(ENV_NAME, name):
            raise ValueError(f"{name!r} is not an environment variable name")
    return names


class ReplSettings(Model):
    """A command agent kept running through a conversation, one user turn per stdin line."""

    prompt: str = Field(
        min_length=1,
        description=(
            'What the program prints when it waits for the next line (`input("> ")`): '
            "seeing it again ends the reply."
        ),
    )


_PLACEHOLDER = re.compile(r"(?:--?[\w-]+=)?\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""An argument that is a placeholder alone (`{prompt}`, `--question={prompt}`): braces
inside a program's own text (`-c "print(f'{text}')"`, `${message}`) are its own."""
_MEANT_AS_INPUT = frozenset(
    {"prompt", "question", "query", "message", "text", "user_input", "input_text", "request"}
)
"""Names a placeholder of the fixture's input is written as by mistake (`{input}` is it)."""
_REPLACED_ELSEWHERE = {
    "{port}": "; `{port}` is an http runtime's (`runtime.http`), which evalward starts on a "
    "free port",
    "{seed}": "; `{seed}` is a playground service's (`playground.service.start`)",
    "{data}": "; `{data}` is a playground service's (`playground.service.start`)",
}
"""Placeholders evalward replaces in other programs' arguments, and where."""


class CommandRuntime(Model):
    """A bring-your-own agent process, started once per fixture run."""

    run: list[str] = Field(
        min_length=1,
        description=(
            "argv, no shell; relative paths are relative to the repository root (the cwd). "
            "`{input}` in an argument is replaced by the fixture's input text."
        ),
    )
    stdin: Literal["json", "text", "none"] = Field(
        default="json",
        description=(
            "What the program reads on stdin: `json`, the run's request as one JSON object; "
            "`text`, the fixture's input text; `none`, nothing."
        ),
    )
    stdout: Literal["auto", "events", "text"] = Field(
        default="auto",
        description=(
            "What the program writes on stdout: `auto`, trace events and any other text, "
            "which is the final answer when no `final` event comes; `events`, trace events "
            "only (any other line is an error); `text`, the answer only (events go to "
            "$EVALWARD_EVENTS)."
        ),
    )
    env: list[str] = Field(default_factory=list)
    timeout_seconds: float | None = Field(
        default=None, gt=0, description="Defaults to the Eval's `execution.timeoutSeconds`."
    )
    repl: ReplSettings | None = Field(
        default=None,
        description=(
            "In a conversation, start the program once and give it one user turn per stdin "
            "line (docs/agent-protocols.md#conversations); default: once per turn."
        ),
    )

    _env_names = field_validator("env")(check_env_names)

    @model_validator(mode="after")
    def _input_placeholder_spelt(self) -> CommandRuntime:
        """`{prompt}` (or `{question}`, `{inputs}`) for `{input}` is passed to the program as
        written: it never gets the fixture's input, and answers something else. So is
        `{port}`, `{seed}` or `{data}` alone, which evalward replaces for an http runtime or
        a playground's service, not here: the program waits on a value never given. Another
        name in braces is the program's own (jq's `{name}`, xargs' `-I {file}`)."""
        for index, argument in enumerate(self.run):
            whole = _PLACEHOLDER.fullmatch(argument)
            name = whole[1] if whole else "input"  # braces in the program's own text: its own
            if name != "input" and (
                name in _MEANT_AS_INPUT
                or difflib.get_close_matches(name, ["input"], 1, 0.8)
                or argument in _REPLACED_ELSEWHERE
            ):
                port = _REPLACED_ELSEWHERE.get(argument, "")
                raise error_at(
                    ("run", index),
                    f"`{{{name}}}` is no placeholder evalward replaces: the program would get "
                    "it as written; `{input}` is the fixture's input text (or read it from "
                    f"stdin){port}",
                )
        return self

    @model_validator(mode="after")
    def _repl_reads_stdin(self) -> CommandRuntime:
        if self.repl is not None and self.stdin == "none":
            raise ValueError("a `repl` agent reads its turns on stdin: set `stdin: text` or `json`")
        if self.repl is not None and any("{input}" in arg for arg in self.run):
            raise ValueError(
                "a `repl` agent is started once, before any turn: its turns come on stdin, "
                "not in `{input}`"
            )
        return self

    def program(self) -> AgentProgram:
        at = ("spec", "runtime", "command", "run")
        return AgentProgram("its runtime", at, self.run, self.env, runtime=True)

    def system_refusal(self) -> str | None:
        """Why it cannot be given a conversation's `system` instructions (None: it can)."""
        if self.repl is None:
            return None
        return (
            "runs as a REPL, which reads only what the user types: it cannot be given the "
            "conversation's `system` instructions; put them in its program, or drop `repl` so "
            "it is started each turn with the messages"
        )


class HttpRuntime(Model):
    """A bring-your-own agent server. `{port}` in start, ready and url is a free port."""

    start: list[str] = Field(min_length=1)
    ready: str = Field(pattern=r"^https?://")
    url: str = Field(pattern=r"^https?://")
    ready_timeout_seconds: float = Field(default=30.0, gt=0)
    timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        description="Per POST; defaults to the Eval's `execution.timeoutSeconds`.",
    )
    env: list[str] = Field(default_factory=list)

    _env_names = field_validator("env")(check_env_names)

    def program(self) -> AgentProgram:
        at = ("spec", "runtime", "http", "start")
        return AgentProgram("its runtime", at, self.start, self.env, runtime=True)

    def system_refusal(self) -> str | None:
        """None: each request carries the conversation's messages, its `system` ones too."""
        return None


class AgentRuntime(Model):
    command: CommandRuntime | None = None
    http: HttpRuntime | None = None

    _command_shorthand = field_validator("command", mode="before")(argv_shorthand)

    @model_validator(mode="after")
    def _exactly_one(self) -> AgentRuntime:
        if (self.command is None) == (self.http is None):
            raise ValueError("set exactly one of `runtime.command` and `runtime.http`")
        return self

    @property
    def settings(self) -> CommandRuntime | HttpRuntime:
        """The settings of the one kind it names."""
        settings = self.command if self.command is not None else self.http
        assert settings is not None, "exactly one is set (`_exactly_one`)"
        return settings

    @property
    def kind(self) -> RuntimeKind:
        if self.command is not None:
            return "repl" if self.command.repl is not None else "command"
        return "http"
