"""A playground: the world a fixture's agent acts on, provisioned fresh for every run.

An EvalFixture (or an Eval, for all its fixtures) names one under `playground`, as a test
names a pytest fixture; up to three parts, each real: a folder seeded from the repository
(`files`), a SQLite database seeded from SQL or a fixtures file (`sqlite`) and a program
serving an API on a port evalward picks (`service`). Every path is relative to the
repository root of the gate's side (the base commit under `gate-config: base`), never to the
pull request's. docs/playgrounds.md describes it all.
"""

from __future__ import annotations

import posixpath
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from evalward.resources.common import NAME_PATTERN, Model

PLACEHOLDERS = ("{port}", "{seed}", "{data}")


def _repository_path(path: str) -> str:
    """A path of the repository: relative, without `..`."""
    normal = posixpath.normpath(path.lstrip("/"))
    if normal == ".." or normal.startswith("../") or "\0" in path:
        raise ValueError(f"{path!r} leaves the repository; give a path inside it")
    return normal


RepositoryPath = Annotated[str, Field(min_length=1)]


class FilesPart(Model):
    """A folder the agent and its tools work in, a copy of `seed` (a folder or a file)."""

    seed: RepositoryPath = Field(description="A folder (or file) of the repository to copy.")

    _inside = field_validator("seed")(_repository_path)


class SqlitePart(Model):
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


class ServicePart(Model):
    """A program of the repository that serves an API on `{port}`: started per run, ready
    when `ready` answers, its state read from `state` when the run ends."""

    start: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1,
        description="The command (no shell); {port}, {seed} and {data} are replaced.",
    )
    ready: str = Field(
        default="/", description="A path GET until it answers below 400 (the readiness check)."
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

    _inside = field_validator("seed")(lambda v: None if v is None else _repository_path(v))

    @model_validator(mode="after")
    def _one_way_to_read_state(self) -> ServicePart:
        if self.dump is not None and "state" in self.model_fields_set:
            raise ValueError("give `state` (an endpoint) or `dump` (a command), not both")
        return self

    @field_validator("ready", "state")
    @classmethod
    def _a_path(cls, path: str | None) -> str | None:
        if path is None:
            return None
        if not path.startswith("/") or "//" in path or any(c in path for c in "\r\n "):
            raise ValueError(f"{path!r}: give a path on the service, starting with `/`")
        return path


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
        if self.files is None and self.sqlite is None and self.service is None:
            raise ValueError("a playground needs `files`, `sqlite`, `service` or several")
        return self

    def paths(self) -> list[str]:
        """Every repository path it is made from (what its cache key hashes)."""
        found = [part.seed for part in (self.files, self.sqlite) if part is not None]
        if self.service is not None:
            found += [self.service.seed] if self.service.seed else []
            commands = [*self.service.start, *(self.service.dump or [])]
            found += [a for a in commands if "/" in a and not a.startswith("-")]
        return found
