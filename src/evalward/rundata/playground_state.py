"""A playground's state: what the runtime reads of it and scoring checks, and the bounded
record of it a fixture result keeps.

The state is one JSON document with up to three parts: `files` (each file of the folder by
its path: its text, or its size and hash), `db` (each table, its rows by primary key) and
`service` (what the service's state endpoint answered). What state criteria need beyond it is
read at the same time, from evalward's own copy: each query's rows, each snapshot file.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from evalward.rundata.record_model import RecordModel

RECORD_LIMIT = 16 * 1024
"""Characters of the final state a run record keeps, like the agent's output."""
CHANGE_LINES = 300
"""Lines of the diff from the initial state to the final one a run record keeps."""
CHANGE_LINE_LIMIT = 240
"""Characters of each of those lines."""
DIFF_CHARS = 4 * 1024 * 1024
"""States larger than this (as canonical JSON) are not compared line by line: a diff of two
such texts takes memory and time out of proportion to the 300 lines it keeps."""


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
    _text: tuple[str | None] | None = field(default=None, init=False, repr=False, compare=False)

    def canonical_text(self) -> str | None:
        """`canonical(document)`, or None when it is longer than DIFF_CHARS; made once (a
        state shared by the runs of a template is compared by each of them)."""
        if self._text is None:
            self._text = (canonical_within(self.document, DIFF_CHARS),)
        return self._text[0]

    def share_text(self, other: PlaygroundState) -> None:
        """Take `other`'s canonical text when each part of both documents is the same object
        (a part read as one its agent left as it found it): the same text, not made again."""
        mine, theirs = self.document, other.document
        same = mine.keys() == theirs.keys() and all(mine[key] is theirs[key] for key in mine)
        if same and other._text is not None:
            self._text = other._text


@dataclass(frozen=True)
class SnapshotMissing:
    why: str


@dataclass
class PlaygroundRun:
    """A run's playground: its state before the agent ran and after."""

    initial: PlaygroundState
    final: PlaygroundState

    def record(self) -> PlaygroundRecord:
        before, after = self.initial.canonical_text(), self.final.canonical_text()
        if after is None:
            final, cut = bounded_json(self.final.document)
        else:
            final, cut = _cut(after, RECORD_LIMIT)
        if before is None or after is None:
            changes = [["@", f"(not compared: a state larger than {DIFF_CHARS:,} characters)"]]
        else:
            changes = [] if before == after else state_changes(before, after)
        return PlaygroundRecord(
            name=self.final.name,
            final=final,
            truncated=cut,
            changes=changes[:CHANGE_LINES],
            changes_left_out=max(0, len(changes) - CHANGE_LINES),
        )


class PlaygroundRecord(RecordModel):
    """What a fixture result keeps of its playground: the state after the run as canonical
    JSON text, cut at RECORD_LIMIT characters (`truncated`), and what the run changed, as
    the lines of a diff from the state before it (`[op, line]`, op `-`, `+`, ` ` or `@`)."""

    name: str
    final: str = ""
    truncated: bool = False
    changes: list[list[str]] = Field(default_factory=list)
    changes_left_out: int = 0


def state_changes(before: str, after: str) -> list[list[str]]:
    """A unified diff of two states' canonical texts, two lines of context."""
    lines: list[list[str]] = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        op, text = ("@", line) if line.startswith("@@") else (line[:1], line[1:])
        if len(text) > CHANGE_LINE_LIMIT:
            text = text[:CHANGE_LINE_LIMIT] + "…"
        lines.append([op, text])
    return lines


def canonical(value: Any) -> str:
    """Indented JSON with sorted keys: the text a diff compares line by line."""
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False, default=str)


def _chunks(value: Any) -> Iterator[str]:
    """`canonical(value)` piece by piece, never whole."""
    encoder = json.JSONEncoder(indent=1, sort_keys=True, ensure_ascii=False, default=str)
    return encoder.iterencode(value)


def canonical_size(value: Any, limit: int) -> int:
    """The length of `canonical(value)`, counted without making it; counting stops past
    `limit` (then the count is more than `limit`, not the length)."""
    size = 0
    for chunk in _chunks(value):
        size += len(chunk)
        if size > limit:
            break
    return size


def canonical_within(value: Any, limit: int) -> str | None:
    """`canonical(value)`, or None when it is longer than `limit` (made only that far)."""
    text, over = _made_past(value, limit)
    return None if over else text


def _made_past(value: Any, limit: int) -> tuple[str, bool]:
    """`canonical(value)` made until it is longer than `limit` (then True), no further."""
    kept: list[str] = []
    size = 0
    for chunk in _chunks(value):
        kept.append(chunk)
        size += len(chunk)
        if size > limit:
            return "".join(kept), True
    return "".join(kept), False


def _cut(text: str, limit: int) -> tuple[str, bool]:
    """`bounded_json`'s cut of a text already made."""
    return (text[:limit] + "\n…", True) if len(text) > limit else (text, False)


def bounded_json(value: Any, limit: int = RECORD_LIMIT) -> tuple[str, bool]:
    """`canonical(value)` cut at `limit` characters (and whether it was), made only that far."""
    text, over = _made_past(value, limit)
    return _cut(text, limit) if over else (text, False)
