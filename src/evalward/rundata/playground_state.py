"""A playground's state: what the runtime reads of it and scoring checks, and the bounded
record of it a fixture result keeps.

The state is one JSON document with up to three parts: `files` (each file of the folder by
its path: its text, or its size and hash), `db` (each table, its rows by primary key) and
`service` (what the service's state endpoint answered). What state criteria need beyond it is
read at the same time, from evalward's own copy: each query's rows, each snapshot file.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from evalward.rundata.record_model import RecordModel
from evalward.text import line_diff
from evalward.text.cuts import cap_chars, hidden

FILE_TEXT_LIMIT = 256 * 1024
"""A file of the `files` part larger than this is recorded by its size and hash, not its
text (runtime/playground/files.py)."""
FILE_HASH_LIMIT = 64 * 1024 * 1024
"""A file of the `files` part larger than this is recorded by its size alone (not read)."""
RECORD_LIMIT = 16 * 1024
"""Characters of the final state a run record keeps, like the agent's output."""
CHANGE_LINES = 300
"""Lines of the diff from the initial state to the final one a run record keeps."""
CHANGE_LINE_LIMIT = 240
"""Characters of each of those lines."""
DIFF_CHARS = 4 * 1024 * 1024
"""Characters of canonical text a run's changes are diffed from at most (the changed
records' own, before and after): past it, the rest is named, not compared line by line."""


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
    compared: KeptPairs | None = None
    """The job's record of which of its kept documents' records were found alike."""

    def record(self) -> PlaygroundRecord:
        final, cut = bounded_json(self.final.document, kept=self.compared)
        changes = state_changes(self.initial.document, self.final.document)
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


def state_changes(before: dict[str, Any], after: dict[str, Any]) -> list[list[str]]:
    """What changed from `before` to `after`, record by record: the objects are walked
    together and whatever is alike (`alike`: C-speed equality first) is passed over, so a
    state of a thousand records with one changed costs about one comparison, not two texts
    of the whole state and a diff of them. Each object where something other than a nested
    object changed gives a hunk: a `@` line naming its path, then a unified diff of the
    changed keys' canonical text, indented as in the whole state's."""
    lines: list[list[str]] = []
    _compare(before, after, (), lines, [DIFF_CHARS])
    return lines


def _compare(
    before: dict[str, Any],
    after: dict[str, Any],
    at: tuple[str, ...],
    lines: list[list[str]],
    budget: list[int],
) -> None:
    direct: list[str] = []
    nested: list[str] = []
    keys = differing_keys(before, after)
    for key in sorted(before.keys() | after.keys(), key=str) if keys is None else keys:
        if key in before and key in after:
            old, new = before[key], after[key]
            if alike(old, new):
                continue
            if isinstance(old, dict) and isinstance(new, dict) and len(at) < COMPARED_DEPTH:
                nested.append(key)
                continue
        direct.append(key)
    if direct:
        _hunk(
            at,
            {key: before[key] for key in direct if key in before},
            {key: after[key] for key in direct if key in after},
            lines,
            budget,
        )
    for key in nested:
        _compare(before[key], after[key], (*at, str(key)), lines, budget)


def _hunk(
    at: tuple[str, ...],
    before: dict[str, Any],
    after: dict[str, Any],
    lines: list[list[str]],
    budget: list[int],
) -> None:
    """One object's changed keys, before and after, as diff lines under a line naming it."""
    if budget[0] <= 0:  # the hunk that spent it said the rest is not compared
        return
    where = ".".join(at) or "(the whole state)"
    # each made only until it is past the budget, which then leaves it not compared
    old, new = _made_past(_chunks(before), budget[0])[0], _made_past(_chunks(after), budget[0])[0]
    if len(old) + len(new) > budget[0]:
        budget[0] = 0
        lines.append(["@", f"@@ {where} and after: not compared (past {DIFF_CHARS:,} characters)"])
        return
    budget[0] -= len(old) + len(new)
    lines.append(["@", f"@@ {where}"])
    indent = " " * len(at)
    was, now = _inner(old), _inner(new)
    for number, group in enumerate(line_diff.grouped(was, now, context=2, autojunk=True)):
        if number:
            lines.append(["@", "…"])
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                said = [(" ", line) for line in was[i1:i2]]
            else:
                said = [("-", line) for line in was[i1:i2]] + [("+", line) for line in now[j1:j2]]
            for op, line in said:
                text = indent + line
                lines.append([op, cap_chars(text, CHANGE_LINE_LIMIT + 1)])


def _inner(text: str) -> list[str]:
    """An object's canonical lines without its braces: `{}` has none."""
    return text.splitlines()[1:-1] if text.startswith("{\n") else []


COMPARED_DEPTH = 16
"""Objects nested deeper than this are compared as one value, their text diffed whole."""


def alike(before: Any, after: Any) -> bool:
    """JSON equality (`same`), at C speed where it can be: the same object, or equal by
    `==` and written by orjson as the same bytes (which tell `true` from `1` and `1` from
    `1.0`; a value written as `null` is `None`, as `==` said: NaN is unequal to itself and
    an infinity to `None`). Writing each record that way took a sixth of the time that
    marshalling it did. Equal by `==` with other bytes (keys in another order, `1`
    against `1.0`), or a value orjson does not write (bytes, an integer past 64 bits), is
    decided value by value."""
    if before is after:
        return True
    if before != after:
        return False
    return _same_bytes(before, after, sort_keys=False) or same(before, after)


def _same_bytes(one: Any, other: Any, *, sort_keys: bool) -> bool:
    """Whether orjson writes both as the same bytes (False when it cannot write one)."""
    # lazy: importing it takes about 20 ms; it is loaded already where a state was read
    import orjson

    option = orjson.OPT_SORT_KEYS if sort_keys else None
    try:
        return bool(orjson.dumps(one, option=option) == orjson.dumps(other, option=option))
    except orjson.JSONEncodeError:
        return False


KEPT_DEPTH = 4
"""Levels of a kept document whose containers are registered: the document, its parts or
tables, their records and what those hold (a state's `service`, its `orders`, each order)."""
SPLIT_DEPTH = 2
"""Levels of a kept document compared key by key with a run's object (`split`): below them,
records are compared whole."""
KEPT_CONTAINERS = 1 << 18
"""Containers a job registers at most: past it, documents are compared as before."""


class Derived(dict[Any, Any]):
    """A run's copy of a kept table (`base`) whose maker adds, replaces or removes a few of
    its keys, then names those that hold another object than the base's (`settle`):
    every other key holds the base's own object. Compared with its base, or with what its
    base was compared with (`KeptPairs.differing_keys`), it costs the keys that changed,
    not the table's thousand records. Never changed once settled."""

    __slots__ = ("__weakref__", "base", "changed")

    def __init__(self, base: dict[Any, Any]) -> None:
        super().__init__(base)
        self.base = base
        self.changed: frozenset[Any] = frozenset()

    def settle(self, keys: Iterable[Any]) -> None:
        """Name, of `keys` (every key its maker changed), those that no longer hold the
        base's own object."""
        self.changed = frozenset(
            key for key in keys if self.get(key, _ABSENT) is not self.base.get(key, _ABSENT)
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        """A plain dict: a deep copy shares nothing with the base (a JSON Patch's `copy`
        makes one), so it neither names it nor copies it too."""
        return {copy.deepcopy(key, memo): copy.deepcopy(value, memo) for key, value in self.items()}


def derived(table: Derived, keys: Iterable[Any]) -> dict[Any, Any]:
    """`table` settled with the `keys` its maker changed; its base itself when none of them
    holds another object."""
    table.settle(keys)
    return table if table.changed else table.base


def differing_keys(before: Any, after: Any) -> list[Any] | None:
    """The keys where `before` and `after` can differ when one is a `Derived` of the other:
    its changed keys, sorted (None: any key can)."""
    for one, other in ((after, before), (before, after)):
        if isinstance(one, Derived) and one.base is other:
            return sorted(one.changed, key=str)
    return None


class KeptPairs:
    """Which records of the documents a job keeps for all its runs were found alike.

    A service's fresh state (kept with its tag: each run's state after a delta shares every
    record the agent left alone with it) and a fixture's expected value are the same
    objects run after run, so comparing them record by record is done once a job: a run's
    comparison then costs the records its agent changed, not the whole state. Only
    containers of kept documents are registered, held here by their ids (so no id is
    given to another object while held), and a pair is remembered only when both of its
    objects are; nothing of one run's own is held past it."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[Any, int]] = {}
        """Each registered container by its id: it, and its level in its document."""
        self._alike: set[tuple[int, int]] = set()
        self._texts: dict[int, str] = {}
        """Each kept record's canonical text, by its id (held in `_kept`)."""
        self._unsettled_keys: dict[tuple[int, int], frozenset[Any]] = {}
        """The keys where two kept dicts differ, by their ids (`_unsettled`)."""
        self._keys: dict[int, list[str] | None] = {}
        """Each kept dict's keys, sorted, by its id (`_sorted_keys`)."""

    def keep(self, document: Any) -> None:
        """Register the containers of `document`'s first KEPT_DEPTH levels: a document the
        job holds, and never changes, for all its runs."""
        if id(document) in self._kept or not isinstance(document, dict | list):
            return
        level = [document]
        for depth in range(KEPT_DEPTH):
            if len(self._kept) + len(level) > KEPT_CONTAINERS:
                return
            self._kept.update((id(item), (item, depth)) for item in level)
            level = [
                child
                for item in level
                for child in (item.values() if isinstance(item, dict) else item)
                if isinstance(child, dict | list) and id(child) not in self._kept
            ]

    def alike(self, before: Any, after: Any) -> bool:
        """`alike`, remembered for a pair of kept containers."""
        if before is after:
            return True
        pair = (id(before), id(after))
        if pair in self._alike:
            return True
        found = alike(before, after)
        if found and pair[0] in self._kept and pair[1] in self._kept:
            self._alike.add(pair)
        return found

    def differing_keys(self, before: Any, after: Any) -> list[Any] | None:
        """The keys where dicts `before` and `after` can differ when one is a `Derived` of
        a kept table and the other is that table or another kept one: its changed keys and
        those where the two kept ones differ (found once a job). None: any key can."""
        found = differing_keys(before, after)
        if found is not None:
            return found
        for one, other in ((after, before), (before, after)):
            if isinstance(one, Derived) and id(other) in self._kept and id(one.base) in self._kept:
                return sorted(self._unsettled(other, one.base) | one.changed, key=str)
        return None

    def _unsettled(self, first: dict[Any, Any], second: dict[Any, Any]) -> frozenset[Any]:
        """The keys of two kept dicts where they differ (one lacks it, or its values are not
        alike), remembered for the job."""
        pair = (id(first), id(second))
        found = self._unsettled_keys.get(pair)
        if found is None:
            found = self._unsettled_keys[pair] = frozenset(
                key
                for key in first.keys() | second.keys()
                if key not in first or key not in second or not self.alike(first[key], second[key])
            )
        return found

    def known(self, before: Any, after: Any) -> bool:
        """Whether `before` and `after` are one object, or a pair found alike before."""
        return before is after or (id(before), id(after)) in self._alike

    def split(self, before: Any, after: Any) -> bool:
        """Whether to compare `before` and `after` key by key rather than whole: objects of
        which one is a kept document or one of its first SPLIT_DEPTH levels' and the other
        is not kept (a run's copy of a kept object, made on a delta's way). Whole, at C
        speed, they would be compared down to every record; key by key, each pair of kept
        records is a lookup."""
        if not (isinstance(before, dict) and isinstance(after, dict)):
            return False
        one, other = self._kept.get(id(before)), self._kept.get(id(after))
        if one is not None and other is not None:
            return False
        kept = one or other
        return kept is not None and kept[1] < SPLIT_DEPTH

    def made_past(self, value: Any, limit: int) -> tuple[str, bool]:
        """`canonical(value)` made until it is longer than `limit` (`_made_past`), the text
        of each kept record in it (a container at SPLIT_DEPTH of its document) made once a
        job and indented where it stands: a run's record then costs its state's first
        records' lookups, not their writing."""
        return _made_past(self._pieces(value, 0), limit)

    def _pieces(self, value: Any, level: int) -> Iterator[str]:
        """`canonical(value)`'s text as it stands `level` deep, piece by piece."""
        indent = "\n" + " " * level
        held = self._kept.get(id(value))
        if held is not None and held[1] >= SPLIT_DEPTH:
            text = self._texts.get(id(value))
            if text is None:
                text = self._texts[id(value)] = canonical(value)
            yield text.replace("\n", indent) if level else text
            return
        keys = self._sorted_keys(value) if isinstance(value, dict) and value else None
        if keys is None:  # the encoder's own text, made piece by piece
            yield from (piece.replace("\n", indent) for piece in _chunks(value))
            return
        inner = " " * (level + 1)
        yield "{"
        for index, key in enumerate(keys):
            yield (
                ("\n" if not index else ",\n") + inner + json.dumps(key, ensure_ascii=False) + ": "
            )
            yield from self._pieces(value[key], level + 1)
        yield indent + "}"

    def _sorted_keys(self, value: dict[Any, Any]) -> list[str] | None:
        """A dict's keys, sorted (None: not all are text), once a job for a kept dict and
        for a `Derived` of one whose keys are its base's."""
        same_keys = isinstance(value, Derived) and all(
            (key in value) == (key in value.base) for key in value.changed
        )
        source = value.base if isinstance(value, Derived) and same_keys else value
        held = id(source) in self._kept
        if held and id(source) in self._keys:
            return self._keys[id(source)]
        keys = sorted(source) if all(isinstance(key, str) for key in source) else None
        if held:
            self._keys[id(source)] = keys
        return keys

    def clear(self) -> None:
        self._kept.clear()
        self._alike.clear()
        self._texts.clear()
        self._unsettled_keys.clear()
        self._keys.clear()


SHARED_DEPTH = 2
"""Levels of a document above the records `shared_with` compares whole (a state, its
tables or collections, their records)."""


def shared_with(document: Any, kept: Any, depth: int = SHARED_DEPTH) -> Any:
    """`document` (a run's own, just read whole) with each object alike the kept
    document's at the same place, down to `depth` levels, replaced by the kept one: its
    state then shares every record its agent left alone, as one read by what changed does,
    and comparing it with the kept document (or with what was compared with it) costs the
    records that differ. A level whose every value is the kept one's is the kept object."""
    if document is kept:
        return kept
    if depth > 0 and isinstance(document, dict) and isinstance(kept, dict):
        for key, value in document.items():
            old = kept.get(key, _ABSENT)
            if old is not _ABSENT:
                document[key] = shared_with(value, old, depth - 1)
        if document.keys() == kept.keys() and all(
            value is kept[key] for key, value in document.items()
        ):
            return kept
        return document
    return kept if written_alike(kept, document) else document


def written_alike(kept: Any, value: Any) -> bool:
    """Whether `value` is written as `kept` is (keys sorted): `1.0` is not `1` here, as
    it is for `alike`, for the state read is shown as it was written."""
    if kept is value:
        return True
    return kept == value and _same_bytes(kept, value, sort_keys=True)


_ABSENT = object()


def same(expected: Any, actual: Any) -> bool:
    """JSON equality: 1 == 1.0, but True is not 1 and "1" is not 1."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(
            same(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            same(e, a) for e, a in zip(expected, actual, strict=True)
        )
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return expected == actual
    return type(expected) is type(actual) and bool(expected == actual)


def json_size(value: Any) -> int:
    """The length of `value` as compact JSON, by the C encoder: what bounds a whole state."""
    return len(json.dumps(value, ensure_ascii=False, default=str))


def canonical(value: Any) -> str:
    """Indented JSON with sorted keys: the text a diff compares line by line."""
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False, default=str)


def _chunks(value: Any) -> Iterator[str]:
    """`canonical(value)` piece by piece, never whole."""
    encoder = json.JSONEncoder(indent=1, sort_keys=True, ensure_ascii=False, default=str)
    return encoder.iterencode(value)


def _made_past(pieces: Iterable[str], limit: int) -> tuple[str, bool]:
    """`pieces` joined until they are longer than `limit` (then True), no further."""
    kept: list[str] = []
    size = 0
    for piece in pieces:
        kept.append(piece)
        size += len(piece)
        if size > limit:
            return "".join(kept), True
    return "".join(kept), False


def bounded_json(
    value: Any, limit: int = RECORD_LIMIT, kept: KeptPairs | None = None
) -> tuple[str, bool]:
    """`canonical(value)` cut at `limit` characters (and whether it was), made only that far;
    the text of a kept document's record, once made, is made again by no later run
    (`KeptPairs.made_past`)."""
    text, over = _made_past(_chunks(value), limit) if kept is None else kept.made_past(value, limit)
    return (hidden(text)[:limit] + "\n…", True) if over else (text, False)
