"""A playground: the world a fixture's agent acts on, provisioned fresh for every run
(docs/playgrounds.md): a folder (`files`), a SQLite database (`sqlite`) and a program serving
an API (`service`). Every path is relative to the repository root of the gate's side (the base
commit under `gate-config: base`), never to the pull request's.

Each part's settings answer what the definition alone decides of it (`PartSettings`). How a
run's part is seeded, provisioned, read and torn down is its module's in runtime/playground/,
which `PartKind` names.
"""

from __future__ import annotations

import posixpath
from typing import Annotated, ClassVar, Literal, get_args

from pydantic import Field, field_validator, model_validator

from evalward.resources.agents.agent import AgentEnvironment, watch_globs
from evalward.resources.common import NAME_PATTERN, Model, RepoPath

PartKind = Literal["files", "sqlite", "service"]
"""The parts a playground may have, in the order a run provisions them: each a field of
`Playground` and the key of its module in runtime/playground/registry.py."""
PART_KINDS: tuple[PartKind, ...] = get_args(PartKind)


def _repository_path(path: str) -> str:
    """A path of the repository: relative, without `..`."""
    normal = posixpath.normpath(path.lstrip("/"))
    if normal == ".." or normal.startswith("../") or "\0" in path:
        raise ValueError(f"{path!r} leaves the repository; give a path inside it")
    return normal


RepositoryPath = Annotated[RepoPath, Field(min_length=1)]


class PartSettings(Model):
    """What every part's settings answer, from the definition alone."""

    runs_program: ClassVar[bool] = False
    """It starts a program of the repository."""

    @property
    def reads_everything(self) -> bool:
        """It starts a program that declares no `watch` of what it reads: that program may
        read any file of its tree, which is then copied whole for it and keyed whole."""
        return False

    def watched(self) -> list[str]:
        """The globs (from the root) of what its program reads besides `paths`."""
        return []

    def seeds(self) -> list[str]:
        """The repository files (or folders) it must find on the gate's side."""
        return []

    def paths(self) -> list[str]:
        """Every repository path it is made from: what a run's cache key hashes, and what the
        gate reads of the base branch."""
        return self.seeds()

    def state_part(self) -> str | None:
        """Its key in the playground's state document (None: its state is not read)."""
        return None


class FilesPart(PartSettings):
    """A folder the agent and its tools work in, a copy of `seed` (a folder or a file)."""

    seed: RepositoryPath = Field(description="A folder (or file) of the repository to copy.")

    _inside = field_validator("seed")(_repository_path)

    def seeds(self) -> list[str]:
        return [self.seed]

    def state_part(self) -> str:
        return "files"


class SqlitePart(PartSettings):
    """A SQLite database, made from an SQL script (`.sql`) or a fixtures file (`.json`,
    `.yaml`: `{table: [{column: value}]}`, the tables created from the columns)."""

    seed: RepositoryPath = Field(description="The .sql script or .json/.yaml fixtures file.")

    _inside = field_validator("seed")(_repository_path)

    @field_validator("seed")
    @classmethod
    def _known_format(cls, seed: str) -> str:
        if not seed.endswith((".sql", ".json", ".yaml", ".yml")):
            raise ValueError(f"{seed!r}: a seed is a .sql script or a .json/.yaml fixtures file")
        return seed

    def seeds(self) -> list[str]:
        return [self.seed]

    def state_part(self) -> str:
        return "db"


def _service_path(path: str) -> str:
    if not path.startswith("/") or "//" in path or any(c in path for c in "\r\n "):
        raise ValueError(f"{path!r}: give a path on the service, starting with `/`")
    return path


class McpReady(Model):
    """A service that speaks MCP (streamable HTTP) is ready once it answers an MCP
    `initialize` at this path: what an SDK server answers without a route of its own."""

    mcp: str = Field(description="The path of its MCP endpoint (`/mcp`).")

    _a_path = field_validator("mcp")(_service_path)


class ServicePart(PartSettings):
    """A program of the repository that serves an API on `{port}`: started per run, ready
    when `ready` answers, its state read from `state` when the run ends; its packages are its
    `environment`'s."""

    start: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1,
        description="The command (no shell); {port}, {seed} and {data} are replaced.",
    )
    ready: str | McpReady = Field(
        default="/",
        description="A path GET until it answers below 400 (the readiness check), or "
        "`{mcp: /mcp}`: until an MCP `initialize` there is answered.",
    )
    state: str | None = Field(
        default="/state",
        description="A path whose GET answers the service's state as JSON (null: it has none).",
    )
    dump: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None,
        description="Instead of `state`: a command (no shell) that prints the service's state "
        "as JSON on stdout; {port}, {seed} and {data} are replaced.",
    )
    seed: RepositoryPath | None = Field(
        default=None, description="A file of the repository the service loads ({seed})."
    )
    ready_timeout_seconds: float = Field(default=30, gt=0, le=600)
    environment: AgentEnvironment | None = Field(
        default=None,
        description="The packages its `start` and `dump` programs import, declared as an "
        "agent's `environment` is (`python`, `node`, bounds) and built in the action as the "
        "run side's agent user, sealed read-only, once per side (docs/playgrounds.md).",
    )
    watch: list[str] = Field(
        default_factory=list,
        exclude_if=lambda watch: not watch,  # a definition without one dumps as it always did
        description="Globs of the other files its programs read, on paths from the root, "
        "written as an agent's `watch`: its programs run in a copy holding only these and "
        "the files it names, and its runs are keyed on them. Empty: the whole tree.",
    )

    _inside = field_validator("seed")(lambda v: None if v is None else _repository_path(v))

    @field_validator("watch")
    @classmethod
    def _from_the_root(cls, globs: list[str]) -> list[str]:
        """As an agent's `watch` (`./shop/**` is `shop/**`, `shop/` every file below it)."""
        return watch_globs(globs)

    @model_validator(mode="after")
    def _one_way_to_read_state(self) -> ServicePart:
        if self.dump is not None and "state" in self.model_fields_set:
            raise ValueError("give `state` (an endpoint) or `dump` (a command), not both")
        return self

    @field_validator("ready", "state")
    @classmethod
    def _a_path(cls, path: str | McpReady | None) -> str | McpReady | None:
        return _service_path(path) if isinstance(path, str) else path

    @property
    def ready_path(self) -> str:
        """The path its readiness check asks."""
        return self.ready.mcp if isinstance(self.ready, McpReady) else self.ready

    runs_program: ClassVar[bool] = True

    @property
    def reads_everything(self) -> bool:
        """It names no `watch`, or its `environment`'s installer is given the root folder
        (whose every file it reads)."""
        environment = self.environment
        return not self.watch or (environment is not None and "." in environment.folders())

    def watched(self) -> list[str]:
        return list(self.watch)

    def seeds(self) -> list[str]:
        return [self.seed] if self.seed else []

    def named(self) -> list[str]:
        """What its programs read besides `watch`, where it names one, as repository paths:
        `paths`, each argument of its commands that names a file without a folder
        (`server.py`), and the folders its `environment`'s installer is given whole."""
        commands = [*self.start, *(self.dump or [])]
        plain = [
            a
            for a in commands
            if "." in a.strip(".") and not a.startswith(("-", ".")) and not set(a) & set("{:=")
        ]
        folders = self.environment.folders() if self.environment is not None else []
        found = {posixpath.normpath(p.lstrip("/").removeprefix("./")) for p in self.paths()}
        found |= {*plain, *folders}
        return sorted(p for p in found if p != ".." and not p.startswith("../"))

    def paths(self) -> list[str]:
        """Its seed, and each argument of its commands that looks like a path."""
        commands = [*self.start, *(self.dump or [])]
        environment = self.environment
        built = [*environment.files(), *environment.above()] if environment is not None else []
        return self.seeds() + [a for a in commands if "/" in a and not a.startswith("-")] + built

    def state_part(self) -> str | None:
        return "service" if self.state or self.dump else None


class Playground(Model):
    name: str | None = Field(
        default=None,
        pattern=NAME_PATTERN,
        description="Shown in errors and reports (default: the fixture's or Eval's name).",
    )
    files: FilesPart | None = None
    sqlite: SqlitePart | None = None
    service: ServicePart | None = None

    @model_validator(mode="after")
    def _something(self) -> Playground:
        if not self.parts():
            named = ", ".join(f"`{kind}`" for kind in PART_KINDS)
            raise ValueError(f"a playground needs {named} or several")
        return self

    def parts(self) -> dict[PartKind, PartSettings]:
        """Its parts' settings by kind, in the order a run provisions them."""
        return {kind: part for kind in PART_KINDS if (part := getattr(self, kind)) is not None}

    def seeds(self) -> list[str]:
        """The repository files its parts must find on the gate's side."""
        return [seed for part in self.parts().values() for seed in part.seeds()]

    def paths(self) -> list[str]:
        """Every repository path it is made from (what its cache key hashes)."""
        return [path for part in self.parts().values() for path in part.paths()]

    @property
    def runs_program(self) -> bool:
        """One of its parts starts a program of the repository."""
        return any(part.runs_program for part in self.parts().values())

    @property
    def reads_everything(self) -> bool:
        """One of its parts starts a program that names no `watch`: it reads the whole tree."""
        return any(part.reads_everything for part in self.parts().values())

    def watched(self) -> list[str]:
        """The `watch` globs of its parts' programs."""
        return [glob for part in self.parts().values() for glob in part.watched()]
