"""The Agent kind: a declarative agent run by evalward's tool loop, or bring-your-own.

Declarative (seed 003): `models` (ordered fallbacks), `system` / `systemFile`, `tools`.
Bring-your-own: `runtime` (resources/agents/agent_runtime.py: a command, a REPL or an http server
from the PR head). See docs/agent-protocols.md.
An agent whose programs need packages names its `environment`, which the action builds.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evalward.files.inside import WILDCARD
from evalward.resources.agents.agent_runtime import (
    AgentProgram,
    AgentRuntime,
    RuntimeKind,
    argv_shorthand,
    check_env_names,
)
from evalward.resources.agents.mcp import McpServer, check_server_names
from evalward.resources.agents.tool_shapes import agent_tool, tool_choice
from evalward.resources.common import (
    Metadata,
    Model,
    RepoPath,
    error_at,
    repeated,
    valid_json_schema,
)
from evalward.resources.reading.problems import did_you_mean


class ToolMock(Model):
    """A canned tool result: the tool is never executed.

    String values are Jinja templates over the call's arguments (`"Order {{ order_id }}"`).
    """

    output: str | dict[str, Any] | list[Any]

    @field_validator("output")
    @classmethod
    def _templates_parse(cls, output: Any) -> Any:
        """A template that does not parse failed at every call, the model told so in the
        tool's reply and nobody else: it is refused where it is written."""
        for text in templated_strings(output):
            # lazy: jinja2 costs about 10 ms of start-up, paid only where a mock templates
            import jinja2
            from jinja2.sandbox import SandboxedEnvironment

            try:  # compiled as `render_mock` compiles it: a filter it lacks is refused too
                SandboxedEnvironment(autoescape=False).from_string(text)
            except jinja2.TemplateSyntaxError as exc:
                shown = text if len(text) <= 80 else text[:77] + "..."
                raise ValueError(
                    f"the template {shown!r} does not parse: {(exc.message or '').rstrip('.')} "
                    f"(at its line "
                    f"{exc.lineno}); write a value as `{{{{ order_id }}}}`, a brace meant "
                    "as itself as `{{ '{{' }}`"
                ) from None
        return output


def _free_form(schema: dict[str, Any]) -> bool:
    """Whether a tool's arguments may be named beside its `properties`: by a schema of
    additional ones, patterns, or parts the schema combines (a template may name those)."""
    extra = schema.get("additionalProperties")
    combined = ("patternProperties", "allOf", "anyOf", "oneOf", "$ref")
    return (extra is not None and extra is not False) or any(k in schema for k in combined)


def templated_strings(value: Any) -> Iterator[str]:
    """Every string of a mock output that is a template (`{{` or `{%` in it), as
    `render_mock` renders them; the others are the output as written."""
    if isinstance(value, str):
        if "{{" in value or "{%" in value:
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from templated_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from templated_strings(item)


class ToolCommand(Model):
    """A program from the checkout: arguments as JSON on stdin, the result on stdout."""

    run: list[str] = Field(
        min_length=1,
        description="argv, no shell; relative paths are relative to the repository root (the cwd).",
    )
    timeout_seconds: float = Field(default=30.0, gt=0)
    env: list[str] = Field(
        default_factory=list,
        description=(
            "Names of environment variables passed through; nothing else but PATH, HOME, LANG."
        ),
    )

    _env_names = field_validator("env")(check_env_names)


class NamedToolChoice(Model):
    """The one tool the model must call."""

    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")


class Tool(Model):
    """A tool offered to a declarative agent's model (in OpenAI's or Anthropic's shape too).

    `type` is the short form (`{ type: bash, enabled: false }`); `name` wins when both are
    given.
    """

    name: str | None = Field(default=None, pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    type: str | None = None
    description: str = ""
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="The JSON Schema of its arguments; a `$ref` resolves within it (`#/$defs/x`).",
    )
    enabled: bool = True
    mock: ToolMock | None = None
    command: ToolCommand | None = None
    side_effects: bool = Field(
        default=False,
        description="True: the command changes the world, so evals must shadow or replay it.",
    )

    _command_shorthand = field_validator("command", mode="before")(argv_shorthand)
    _parameters_schema = field_validator("parameters")(valid_json_schema)
    """What the model is shown of the tool's arguments: one that is no JSON Schema (a text
    under `properties`, a type no schema has) is refused here, not by the provider's API
    at the first run."""

    @model_validator(mode="before")
    @classmethod
    def _vendor_shape(cls, value: Any) -> Any:
        return agent_tool(value)  # OpenAI's and Anthropic's tool shapes (tool_shapes.py)

    @model_validator(mode="after")
    def _has_a_name(self) -> Tool:
        if not self.name and not self.type:
            raise ValueError("a tool needs a `name` (or the short form `type`)")
        if self.mock is not None and self.command is not None:
            raise ValueError("give a tool either `mock` or `command`, not both")
        return self

    @model_validator(mode="after")
    def _templates_name_arguments(self) -> Tool:
        """A mock's template that names no argument of the tool (`{{ orderid }}` for
        `order_id`) renders it as nothing on every call: the model is told an empty value and
        the run passes. An optional argument the model leaves out is the call's to omit."""
        properties = self.parameters.get("properties")
        if self.mock is None or not isinstance(properties, dict) or _free_form(self.parameters):
            return self
        named = [str(name) for name in properties]
        for text in templated_strings(self.mock.output):
            # lazy: jinja2 costs about 10 ms of start-up, paid only where a mock templates
            from jinja2 import meta
            from jinja2.sandbox import SandboxedEnvironment

            asked = meta.find_undeclared_variables(SandboxedEnvironment().parse(text))
            unknown = sorted(asked - set(named))
            if unknown:
                listed = ", ".join(f"`{n}`" for n in named) or "none"
                raise error_at(
                    ("mock", "output"),
                    f"the template names {unknown[0]!r}, which is no argument of tool "
                    f"{self.tool_name!r}{did_you_mean(unknown[0], named)}: it would render as "
                    f"nothing on every call; its arguments are {listed}",
                )
        return self

    @property
    def tool_name(self) -> str:
        return self.name or self.type or ""

    @property
    def argument_names(self) -> frozenset[str] | None:
        """The names its arguments may have, as its schema lists them; None where the schema
        lists none or allows others beside them: a mock script's call is checked against it."""
        properties = self.parameters.get("properties")
        if not isinstance(properties, dict) or not properties or _free_form(self.parameters):
            return None
        return frozenset(str(name) for name in properties)


PYTHON_PROJECT = "pyproject.toml"
NODE_PACKAGE = "package.json"
LOCK_FILES = {
    PYTHON_PROJECT: ("uv.lock", ".python-version"),
    NODE_PACKAGE: ("package-lock.json", "npm-shrinkwrap.json"),
}
"""The files beside an environment's file that decide what it installs."""
READ_ABOVE = {
    "python": ("uv.toml", "pyproject.toml", "uv.lock", ".python-version"),
    "node": ("package.json", "package-lock.json", "npm-shrinkwrap.json", ".npmrc"),
}
"""What each installer reads in the folders above the one it runs in: uv the nearest
`uv.toml` or `pyproject.toml` (its settings: an index, `find-links`), a workspace's root
and lock, and a `.python-version`; npm a workspace's root, its lock and its `.npmrc`."""


class AgentEnvironment(Model):
    """The packages the agent's programs need, installed by evalward in the action before
    they start (docs/agent-protocols.md, "Dependencies"). Paths are from the repository root."""

    python: RepoPath | None = Field(
        default=None,
        description=(
            "A requirements file (`uv pip install -r`), or a `pyproject.toml` with its "
            "`uv.lock` beside it (`uv sync --locked`). Its programs run with the "
            "virtualenv's `bin` first on PATH and VIRTUAL_ENV set."
        ),
    )
    node: RepoPath | None = Field(
        default=None,
        description=(
            "A `package.json`: `npm ci` with the `package-lock.json` beside it, `npm install` "
            "without one. Its folder in the agent's working copy gets the `node_modules`."
        ),
    )
    timeout_seconds: float = Field(
        default=600.0,
        gt=0,
        description=(
            "Longest an install may take, per side (default: the action input "
            "`environment-timeout-seconds`). A pull request may lower the base branch's "
            "value for the agent, never raise it."
        ),
    )
    max_size_mb: float | None = Field(
        default=None,
        gt=0,
        alias="maxSizeMB",
        description=(
            "Most megabytes (MiB) the installed environment may take (default: the action "
            "input `environment-max-size-mb`); bounded by the base branch as `timeoutSeconds`."
        ),
    )
    max_files: int | None = Field(
        default=None,
        gt=0,
        description=(
            "Most files, folders and links the installed environment may hold (default: the "
            "action input `environment-max-files`); bounded by the base branch as "
            "`timeoutSeconds`."
        ),
    )

    @field_validator("python", "node")
    @classmethod
    def _inside(cls, path: str | None) -> str | None:
        if path is not None:
            parts = path.replace("\\", "/").lstrip("/").split("/")
            if not path.strip() or ".." in parts or parts[-1] in ("", "."):
                raise ValueError(
                    f"{path!r} is not a file path in the repository (from its root, no `..`)"
                )
        return path

    @field_validator("node")
    @classmethod
    def _package_json(cls, path: str | None) -> str | None:
        if path is not None and path.rstrip("/").rsplit("/", 1)[-1] != NODE_PACKAGE:
            raise ValueError(f"`node` names a {NODE_PACKAGE}, not {path!r}")
        return path

    @model_validator(mode="after")
    def _something(self) -> AgentEnvironment:
        if self.python is None and self.node is None:
            raise ValueError("name a `python` requirements file or project, or a `node` package")
        return self

    def named(self) -> dict[str, str]:
        """The file each installer it sets reads (`python`, `node`), as written."""
        return {kind: path for kind, path in (("python", self.python), ("node", self.node)) if path}

    def files(self) -> list[str]:
        """Repository paths the environment is built from, lock files included (they may
        not exist): what its fingerprint and its key hash."""
        paths: list[str] = []
        for named in self.named().values():
            path = posixpath.normpath(named.lstrip("/"))
            folder, name = posixpath.split(path)
            paths += [path, *(posixpath.join(folder, n) for n in LOCK_FILES.get(name, ()))]
        return paths

    def above(self) -> list[str]:
        """The files its installers may read in each folder above a named file's, up to the
        repository's root (they may not exist): a `uv.toml` there changes what is installed
        as the named file does, so the agent reads them too."""
        paths: list[str] = []
        for kind, named in self.named().items():
            folder = posixpath.dirname(posixpath.normpath(named.lstrip("/")))
            while folder:
                folder = posixpath.dirname(folder)
                paths += [posixpath.join(folder, name) for name in READ_ABOVE[kind]]
        return sorted(set(paths))

    def folders(self) -> list[str]:
        """The folders its installer reads, each named file's ("." for the root): it is
        given the folder whole, and reads more than the files named (a requirements file's
        `-r` and `-c` includes, a `.python-version` beside it, a project's sources), so the
        agent reads every file under them."""
        return sorted({posixpath.dirname(path) or "." for path in self.files()})


class AgentSpec(Model):
    models: list[str] = Field(default_factory=list)
    system: str | None = None
    system_file: RepoPath | None = Field(
        default=None,
        description="A file holding the system prompt; its path is from the repository root.",
    )
    tools: list[Tool] = Field(default_factory=list)
    tool_choice: Literal["auto", "none", "required"] | NamedToolChoice | None = Field(
        default=None,
        description="Which tool the model must call: `auto` (the model chooses), `none`, "
        "`required` (some tool) or `{name: <tool>}`, one of its `tools` (OpenAI's and "
        "Anthropic's spellings are read too). A forced choice holds for the first call of a "
        "run (or of a user turn) alone, so the tool loop can end in an answer.",
    )
    mcp_servers: dict[str, McpServer] = Field(
        default_factory=dict,
        description="MCP servers whose tools the model is offered too, by name (docs/mcp.md).",
    )
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_turns: int = Field(default=10, ge=1, le=200)
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        description="The most a call may write. Under `max-cost-usd` each call holds its cost "
        "at its worst while in flight, this output included (128,000 tokens where none is "
        "set), and is not sent where the budget cannot hold it.",
    )
    runtime: AgentRuntime | None = None
    watch: list[str] = Field(
        default_factory=list,
        description="Globs of the other files the agent depends on, on paths from the root.",
    )
    environment: AgentEnvironment | None = Field(
        default=None,
        description="Packages its programs need (runtime, command tools), built by the action.",
    )

    @field_validator("watch")
    @classmethod
    def _from_the_root(cls, globs: list[str]) -> list[str]:
        """`./agent/**` and `/agent/**` as `agent/**`, and a folder (`agent/`, `agent`) as
        every file below it: paths are from the root and name files, so a glob written so
        matched no path, and change detection never saw the agent's code change."""
        return watch_globs(globs)

    @field_validator("tool_choice", mode="before")
    @classmethod
    def _vendor_choice(cls, value: Any) -> Any:
        return tool_choice(value)  # OpenAI's and Anthropic's spellings (tool_shapes.py)

    @field_validator("models")
    @classmethod
    def _model_ids(cls, models: list[str]) -> list[str]:
        for model in models:
            if "/" not in model:
                raise ValueError(
                    f"model id {model!r} must be `provider/model`, e.g. `openai/gpt-4.1-mini`"
                )
        return models

    @model_validator(mode="after")
    def _declarative(self) -> AgentSpec:
        check_server_names(self.mcp_servers)
        if self.environment is not None and not self.runs_programs:
            raise ValueError(
                "`environment` installs packages for the agent's programs, and this agent runs "
                "none: add `runtime`, a command tool or an MCP server `command`, or remove "
                "`environment`"
            )
        if self.runtime is not None:
            extra = [
                name
                for name, value in (
                    ("models", self.models),
                    ("system", self.system),
                    ("systemFile", self.system_file),
                    ("tools", self.tools),
                    ("mcpServers", self.mcp_servers),
                )
                if value
            ]
            if extra:
                raise ValueError(
                    f"a bring-your-own agent (`runtime`) runs its own model and tools; "
                    f"remove {', '.join(f'`{e}`' for e in extra)}"
                )
            return self
        if not self.models:
            raise ValueError(
                "a declarative agent needs `models: [provider/model, ...]` "
                "(or `runtime` for a bring-your-own agent)"
            )
        if self.system is not None and self.system_file is not None:
            raise ValueError("set either `system` or `systemFile`, not both")
        if dupes := repeated([t.tool_name for t in self.tools]):
            raise ValueError(f"duplicate tool names: {dupes}")
        self._chosen_tool_is_its_own()
        return self

    def _chosen_tool_is_its_own(self) -> None:
        """A `toolChoice` naming a tool the agent does not have forces a call no run can
        make (a provider refuses the request, or the model answers with no call); one of an
        MCP server's tools is known only as the server lists them."""
        chosen = self.tool_choice
        if not isinstance(chosen, NamedToolChoice) or self.mcp_servers:
            return
        names = [t.tool_name for t in self.tools]
        if chosen.name not in names:
            offered = ", ".join(names) if names else "none"
            raise ValueError(
                f"`toolChoice` names the tool {chosen.name!r}, which the agent does not have"
                f"{did_you_mean(chosen.name, names)}; its tools: {offered}"
            )

    @property
    def runtime_kind(self) -> RuntimeKind:
        """What runs this agent: evalward's tool loop, or its `runtime`'s kind."""
        return "declarative" if self.runtime is None else self.runtime.kind

    def system_refusal(self) -> str | None:
        """Why its runtime cannot be given a conversation's `system` instructions."""
        return self.runtime.settings.system_refusal() if self.runtime is not None else None

    @property
    def runs_programs(self) -> bool:
        """Whether a run starts a program of the repository: its `runtime`, a command tool
        or a stdio MCP server."""
        return self.runtime is not None or bool(self.programs())

    def programs(self) -> list[AgentProgram]:
        """Each program it names: its runtime's, then its command tools' (enabled or not) and
        its stdio MCP servers'."""
        found = [self.runtime.settings.program()] if self.runtime is not None else []
        found += [
            AgentProgram(
                f"the command tool {t.tool_name!r}",
                ("spec", "tools", index, "command"),
                t.command.run,
                t.command.env,
                t.enabled,
            )
            for index, t in enumerate(self.tools)
            if t.command is not None
        ]
        found += [
            AgentProgram(
                f"the MCP server {name!r}",
                ("spec", "mcpServers", name, "command"),
                server.command.run,
                server.command.env,
            )
            for name, server in self.mcp_servers.items()
            if server.command is not None
        ]
        return found


class Agent(Model):
    api_version: str
    kind: Literal["Agent"]
    metadata: Metadata
    spec: AgentSpec


def watch_globs(globs: list[str]) -> list[str]:
    """A `watch` list as globs of the paths from the root it means (`from_root`), each once:
    an agent's and a playground service's are read alike."""
    for glob in globs:
        if ".." in glob.split("/"):
            # fnmatch matches no path of the tree through it: the files it meant to watch
            # were never hashed, and changing them ran no Eval
            inside = posixpath.normpath(glob.lstrip("/"))
            fix = (
                f"write it from the repository root: {inside!r}"
                if inside.split("/")[0] != ".."
                else "a file outside the repository is never copied or hashed: commit what "
                "it reads inside the repository and watch it from the root"
            )
            raise ValueError(
                f"{glob!r} goes up a folder (`..`), which no path from the root does, so it "
                f"matches no file; {fix}"
            )
    return list(dict.fromkeys(watched for glob in globs for watched in from_root(glob)))


def from_root(glob: str) -> list[str]:
    """A `watch` glob as globs of the paths from the root it means: its leading `/` and `./`
    and repeated `/` taken off (`./agent/**` is `agent/**`), the root itself (`.`, `/`) as
    `**`, a folder (`agent/`) as `agent/**`, and a name with no wildcard as that file and
    every file below it, for it may be a folder (`agent`: `agent` and `agent/**`)."""
    glob = re.sub("/{2,}", "/", glob)
    while glob.startswith(("/", "./")):
        glob = glob.removeprefix(".").lstrip("/")
    if glob in ("", "."):
        return ["**"]
    if glob.endswith("/"):
        return [f"{glob}**"]
    return [glob] if WILDCARD.search(glob) else [glob, f"{glob}/**"]
