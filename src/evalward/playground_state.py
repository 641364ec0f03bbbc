"""A playground's state: what the runtime reads of it and scoring checks, and the bounded
record of it a fixture result keeps.

The state is one JSON document with up to three parts: `files` (each file of the folder by
its path: its text, or its size and hash), `db` (each table, its rows by primary key) and
`service` (what the service's state endpoint answered). What state criteria need beyond it is
read at the same time, from evalward's own copy: each query's rows, each snapshot file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

RECORD_LIMIT = 64 * 1024
"""Characters of each state (initial, final) a run record keeps, like the agent's output."""


@dataclass(frozen=True)
class QueryAnswer:
    """What a read-only query returned: its columns and rows, or why it could not run."""

    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    error: str = ""


@dataclass
class PlaygroundState:
    """A playground's state at one moment, with what state criteria asked of it."""

    name: str
    document: dict[str, Any] = field(default_factory=dict)
    queries: dict[str, QueryAnswer] = field(default_factory=dict)
    snapshots: dict[str, Any] = field(default_factory=dict)
    """Each snapshot file a criterion names, parsed (a `SnapshotMissing` when unreadable)."""


@dataclass(frozen=True)
class SnapshotMissing:
    why: str


@dataclass
class PlaygroundRun:
    """A run's playground: its state before the agent ran and after."""

    initial: PlaygroundState
    final: PlaygroundState

    def record(self) -> PlaygroundRecord:
        initial, cut_initial = bounded_json(self.initial.document)
        final, cut_final = bounded_json(self.final.document)
        return PlaygroundRecord(
            name=self.final.name, initial=initial, final=final, truncated=cut_initial or cut_final
        )


class PlaygroundRecord(BaseModel):
    """What a fixture result keeps of its playground: the state before and after the run
    as canonical JSON text, each cut at RECORD_LIMIT characters (`truncated`)."""

    name: str
    initial: str = ""
    final: str = ""
    truncated: bool = False


def canonical(value: Any) -> str:
    """Indented JSON with sorted keys: the text a diff compares line by line."""
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False, default=str)


def bounded_json(value: Any, limit: int = RECORD_LIMIT) -> tuple[str, bool]:
    text = canonical(value)
    if len(text) <= limit:
        return text, False
    return text[:limit] + "\n…", True
