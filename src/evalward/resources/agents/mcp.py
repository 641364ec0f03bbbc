"""An Agent's MCP servers (`mcpServers`): where a declarative agent's tools come from when a
Model Context Protocol server lists them: a program of the repository (`command`), a server
already listening (`url`) or the run's playground service (`service`). docs/mcp.md describes
how they are named, filtered and bounded.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from evalward.resources.agents.agent_runtime import argv_shorthand, check_env_names
from evalward.resources.common import Model, repeated

SERVER_NAME = r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*\Z"
"""A server's name: letters, digits, `-` and single `_` (`__` joins it to a tool's name)."""
QUALIFIER = "__"
"""Between a server's name and its tool's: `orders__lookup_order`."""


class McpCommand(Model):
    """A stdio server: a program of the repository, started for every run."""

    run: list[str] = Field(
        min_length=1,
        description="argv, no shell; relative paths are relative to the repository root (the cwd).",
    )
    env: list[str] = Field(
        default_factory=list,
        description=(
            "Names of environment variables passed through, as for a command tool; the "
            "playground's variables (EVALWARD_SQLITE_PATH, ...) are always given."
        ),
    )

    _env_names = field_validator("env")(check_env_names)


class McpToolFilter(Model):
    """Which of the server's tools the model is offered, by the names the server gives them."""

    allow: list[str] | None = Field(
        default=None, description="Only these tools (default: every tool the server lists)."
    )
    deny: list[str] = Field(default_factory=list, description="Never these tools.")

    @field_validator("allow", "deny")
    @classmethod
    def _once(cls, names: list[str] | None) -> list[str] | None:
        if names is not None and (twice := repeated(names)):
            raise ValueError(f"names listed twice: {twice}")
        return names

    def admits(self, name: str) -> bool:
        return (self.allow is None or name in self.allow) and name not in self.deny


class McpServer(Model):
    """One MCP server of a declarative agent: exactly one of `command`, `url`, `service`."""

    command: McpCommand | None = None
    url: str | None = Field(
        default=None,
        pattern=r"^https?://[^\s]+$",
        description="A streamable-HTTP server already running, reached from evalward's process.",
    )
    service: str | None = Field(
        default=None,
        description="A path on the run's playground service, which speaks MCP there (`/mcp`).",
    )
    tools: McpToolFilter = Field(default_factory=McpToolFilter)
    timeout_seconds: float = Field(
        default=30.0, gt=0, le=3600, description="Longest one tool call may take."
    )
    connect_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=600,
        description="Longest the server may take to start, answer `initialize` and list its tools.",
    )
    side_effects: list[str] = Field(
        default_factory=list,
        description=(
            "Its tools that change the world: a fixture must shadow or replay each "
            "(`shadowTools`, `toolReplay`), as a `sideEffects: true` command tool."
        ),
    )

    _command_shorthand = field_validator("command", mode="before")(argv_shorthand)

    @field_validator("service")
    @classmethod
    def _a_path(cls, path: str | None) -> str | None:
        if path is not None and (
            not path.startswith("/") or "//" in path or any(c in path for c in "\r\n \t?#")
        ):
            raise ValueError(f"{path!r}: give a path on the service, starting with `/` (`/mcp`)")
        return path

    @model_validator(mode="after")
    def _one_kind(self) -> McpServer:
        kinds = [k for k in ("command", "url", "service") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(
                "an MCP server is exactly one of `command` (a program speaking MCP on "
                "stdin/stdout), `url` (a streamable-HTTP server) or `service` (a path on the "
                f"run's playground service); this one gives {' and '.join(kinds) or 'none'}"
            )
        return self

    @property
    def kind(self) -> str:
        return "command" if self.command else "url" if self.url else "service"


def check_server_names(servers: dict[str, McpServer]) -> None:
    """Every key of `mcpServers` is a name a tool's qualified name can carry."""
    for name in servers:
        if not re.match(SERVER_NAME, name) or len(name) > 40:
            raise ValueError(
                f"the MCP server name {name!r} must be letters, digits, `-` and single `_` "
                "(at most 40): it qualifies its tools' names as `<server>__<tool>`"
            )
