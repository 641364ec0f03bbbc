"""Whether a state criterion's path is one a playground's state can hold, as far as its seeds
tell.

The state (docs/playgrounds.md) is one document: `files`, `db` and `service`, each there when
the playground has that part. Its seeds tell some of its shape; the rest — rows and their keys,
values, the files the agent writes — is the run's to make. So a path the seeds do not have is a
warning that names the nearest one, never an error (docs/playgrounds.md says which, and what
`validate --playgrounds` adds: the state the playground was made in, walked by
`held_warnings`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalward.errors import YamlSyntaxError
from evalward.resources.checks.assertions import Assertion
from evalward.resources.checks.state_assertions import (
    FileStateAssertion,
    StateSnapshotAssertion,
    StateUnchangedAssertion,
    StateValueAssertion,
)
from evalward.resources.reading.problems import did_you_mean
from evalward.resources.reading.yamlsource import PathKey
from evalward.runtime.playground.sqlite_seed import parse_yaml
from evalward.text.counts import first_few
from evalward.text.cuts import cap_chars

LISTED_NAMES = 8
"""Names listed when none is close to the one a path gives."""

_NO_PART = "the playground's state has no "
_NO_FILES = "the playground has no files folder to hold "
_NEAR = "(did you mean "


@dataclass
class StateShape:
    """What the seeds of one playground tell of its state (None: nothing)."""

    parts: frozenset[str]
    """Which of `files`, `db` and `service` the state has."""
    tables: dict[str, list[str]] | None = None
    """Each table the SQLite seed makes, with its columns."""
    files: frozenset[str] | None = None
    """Each file of the files seed, by its path in the playground's folder."""
    service: frozenset[str] | None = None
    """The top-level keys of the service's state."""
    told_by: dict[str, str] = field(default_factory=dict)
    """For each part, what told its shape ("the seed 'shop/seed.sql'")."""


def path_warnings(assertion: Assertion, shape: StateShape) -> list[tuple[PathKey, str]]:
    """For each path of a state criterion that the shape does not hold: its field, and why."""
    found: list[tuple[PathKey, str | None]] = []
    if isinstance(assertion, StateValueAssertion) and assertion.file is not None:
        found.append((("file",), _asked_of(assertion.exists, _file(assertion.file, shape))))
    elif isinstance(assertion, StateValueAssertion):
        found.append((("at",), _asked_of(assertion.exists, why_not(assertion.at, shape))))
    elif isinstance(assertion, FileStateAssertion):
        found.append((("path",), _asked_of(assertion.exists, _file(assertion.path, shape))))
    elif isinstance(assertion, StateUnchangedAssertion | StateSnapshotAssertion):
        found.append((("at",), why_not(assertion.at, shape)))
        found += [(("except", i), why_not(p, shape)) for i, p in enumerate(assertion.excepted)]
    return [(at, why) for at, why in found if why is not None]


def _asked_of(exists: bool | None, why: str | None) -> str | None:
    """Why a path asked to exist may not, or one asked to be absent always is. Absence is
    the point of `exists: false`, so a name the run could make is no warning there; a part
    the playground lacks, or a name close to the seed's (a typo), is: the criterion then
    holds whatever the agent does."""
    if exists is not False or why is None:
        return why
    if why.startswith((_NO_PART, _NO_FILES)) or _NEAR in why:
        return f"{why}; so it is never there and `exists: false` always holds"
    return None


def held_warnings(assertion: Assertion, state: Mapping[str, Any]) -> list[tuple[PathKey, str]]:
    """For each path of a state criterion that the state a playground was provisioned in
    does not hold, as far as it tells (see the module's docstring): its field, and why."""
    found: list[tuple[PathKey, str | None]] = []
    if isinstance(assertion, StateValueAssertion) and assertion.exists is not False:
        if assertion.file is None:
            found.append((("at",), _held(assertion.at, state)))
        elif assertion.at:
            found.append((("at",), _held_in_file(assertion.file, assertion.at, state)))
    elif isinstance(assertion, StateUnchangedAssertion | StateSnapshotAssertion):
        found.append((("at",), _held(assertion.at, state)))
        found += [(("except", i), _held(p, state)) for i, p in enumerate(assertion.excepted)]
    return [(at, why) for at, why in found if why is not None]


def _held(path: str, state: Any, told: str = "the provisioned state") -> str | None:
    """Why the dotted `path` is not one of `state` where the state shows it cannot be: a
    key missing beside a close one, or a path through a value that holds no keys."""
    parts = path.split(".") if path else []
    node: Any = state
    walked: list[str] = []
    while parts:
        if parts[0] == "*":
            return None
        if isinstance(node, dict):
            key = _longest(parts, (str(k) for k in node))
            if key is None:
                close = did_you_mean(parts[0], [str(k) for k in node])
                if not close:
                    return None  # the run's to add
                where = f" at {'.'.join(walked)!r}" if walked else ""
                return f"{told} has no key {parts[0]!r}{where}{close}"
            node, walked, parts = node[key], [*walked, key], parts[len(key.split(".")) :]
        elif isinstance(node, list):
            if not parts[0].isdigit() or int(parts[0]) >= len(node):
                return None  # an item the run may add, or the run's own shape
            node, walked, parts = node[int(parts[0])], [*walked, parts[0]], parts[1:]
        elif node is None:
            return None
        else:
            shown = json.dumps(node, ensure_ascii=False, default=str)
            shown = cap_chars(shown, 40)
            return f"{told} holds {shown} at {'.'.join(walked)!r}, which has no key {parts[0]!r}"
    return None


def _held_in_file(file: str, at: str, state: Mapping[str, Any]) -> str | None:
    """Why `at` is not a path of the seed's JSON or YAML `file`, as the playground was
    provisioned with it (nothing said of a file the run writes, or one that is not data)."""
    files = state.get("files")
    text = files.get(file.strip("/")) if isinstance(files, dict) else None
    if not isinstance(text, str) or not file.endswith((".json", ".yaml", ".yml")):
        return None
    # lazy: PyYAML costs about 10 ms of start-up, and only a YAML file needs it
    import yaml

    try:
        data = json.loads(text) if file.endswith(".json") else parse_yaml(text)
    except (ValueError, RecursionError, YamlSyntaxError, yaml.YAMLError):
        return None
    return _held(at, data, f"the file {file!r} as the playground was provisioned")


def why_not(path: str, shape: StateShape) -> str | None:
    """Why the dotted `path` (`*` standing for any key) is not one of the shape, or None when
    it may be."""
    parts = path.split(".") if path else []
    if not parts or parts[0] == "*":
        return None
    top, rest = parts[0], parts[1:]
    if top not in shape.parts:
        held = ", ".join(sorted(shape.parts))
        close = did_you_mean(top, shape.parts)
        return f"{_NO_PART}{top!r}{close}: it holds {held}"
    if not rest or rest[0] == "*":
        return None
    if top == "db" and shape.tables is not None:
        return _table_path(rest, shape.tables, shape.told_by.get("db", "the seed"))
    if top == "service" and shape.service is not None and _longest(rest, shape.service) is None:
        told = shape.told_by.get("service", "the service's seed")
        return f"{told} has no key {rest[0]!r}{_nearest(rest[0], shape.service)}"
    if top == "files":
        return _file(".".join(rest), shape)
    return None


def _table_path(rest: list[str], tables: dict[str, list[str]], told: str) -> str | None:
    """`db.TABLE.ROW.COLUMN`: the table and the column must be the seed's; the row is data."""
    table = _longest(rest, tables)
    if table is None:
        return f"{told} makes no table {rest[0]!r}{_nearest(rest[0], tables)}"
    after = rest[len(table.split(".")) :]
    if len(after) < 2:
        return None  # the table, or one of its rows
    columns = tables[table]
    for start in range(1, len(after)):
        if after[start] == "*" or ".".join(after[start:]) in columns:
            return None
    column = ".".join(after[1:])
    return f"table {table!r} of {told} has no column {column!r}{_nearest(column, columns)}"


def _file(path: str, shape: StateShape) -> str | None:
    """A file of the files folder: named only when the seed has one close to it."""
    if "files" not in shape.parts:
        return f"{_NO_FILES}{path!r}"
    if shape.files is None:
        return None
    path = path.strip("/")
    parts = path.split(".")
    if any(".".join(parts[:end]) in shape.files for end in range(1, len(parts) + 1)):
        return None
    close = difflib.get_close_matches(path, list(shape.files), n=1, cutoff=0.8)
    if not close:
        return None  # the agent's to write
    told = shape.told_by.get("files", "the files seed")
    return f"{told} holds no file {path!r} (did you mean {close[0]!r}?)"


def _longest(parts: list[str], names: Iterable[str]) -> str | None:
    """The name the path's first parts make, the longest first (a name may hold dots)."""
    known = set(names)
    longest_first = (".".join(parts[:end]) for end in range(len(parts), 0, -1))
    return next((name for name in longest_first if name in known), None)


def _nearest(word: str, names: Iterable[str]) -> str:
    listed = sorted(names)
    close = did_you_mean(word, listed)
    if close or not listed:
        return close
    return f"; it has {first_few([repr(n) for n in listed], LISTED_NAMES)}"
