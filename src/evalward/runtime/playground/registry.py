"""Which module makes each part of a playground: one line per kind of part, keyed by the
field of `Playground` that defines it (`PartKind`)."""

from __future__ import annotations

from typing import Any

from evalward.resources.playground import PartKind, Playground
from evalward.runtime.playground.base import PlaygroundPart
from evalward.runtime.playground.files import FilesRun
from evalward.runtime.playground.service import ServiceRun
from evalward.runtime.playground.sqlite import SqliteRun

PARTS: dict[PartKind, type[PlaygroundPart[Any]]] = {
    "files": FilesRun,
    "sqlite": SqliteRun,
    "service": ServiceRun,
}


def parts_of(spec: Playground) -> list[PlaygroundPart[Any]]:
    """A new run's parts of a playground, in the order they are provisioned."""
    return [PARTS[kind](settings) for kind, settings in spec.parts().items()]
