"""What a run would find before its first model call that the definitions and the repository
show: asked by `evalward validate` and by a run's preflight (preflight.py), of each
(Eval, fixture) they check.

- A SQLite playground's seed is loaded into an in-memory database, within the bounds a run's
  playground loads it in (runtime/playground/sqlite_seed.py), and every `sql` criterion of the
  fixtures that use it is prepared there (EXPLAIN: compiled, not run), read-only as a run's
  query is: its syntax, its tables and its columns, with the nearest name.
- Each code scorer compiles (scorer_checks.py), and each state criterion's path is one the
  seeds' state can hold (state_paths.py).

A seed the repository does not have, or that leads outside it, is the preflight's own
refusal (`missing_seeds`), not checked again here.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalward.errors import NotCommitted, Problem, SeedError, YamlSyntaxError
from evalward.files.committed import RepoFiles
from evalward.plan.plan import Checkout, PlannedRun
from evalward.plan.playgrounds import source_of
from evalward.plan.preflight.scorer_checks import ScorerChecks
from evalward.plan.preflight.state_paths import StateShape, held_warnings, path_warnings
from evalward.resources.checks.assertions import Assertion
from evalward.resources.checks.state_assertions import (
    STATE_TYPES,
    SqlAssertion,
    StateSnapshotAssertion,
)
from evalward.resources.models import EvalFixture
from evalward.resources.playground import Playground
from evalward.resources.reading.locate import Locator
from evalward.resources.reading.problems import did_you_mean
from evalward.resources.reading.yamlsource import PathKey
from evalward.resources.resource_set import Located
from evalward.runtime.playground.base import SEED_LIMIT, PlaygroundSource
from evalward.runtime.playground.sqlite import seed_refusal
from evalward.runtime.playground.sqlite_read import (
    READ_ACTIONS,
    first_labelled_twice,
    labelled_twice,
)
from evalward.runtime.playground.sqlite_seed import load_seed, parse_yaml, where_written
from evalward.runtime.playground.state import SnapshotUnloadable, snapshot_data

PlaygroundKey = tuple[str, str]
"""A playground as provisioned: the tree it is made from, and its definition."""
LISTED_FILES = 20_000
"""Files of a seed folder listed at most; past it, its files are not checked against."""
_KEYWORDS = frozenset(
    """SELECT FROM WHERE GROUP ORDER BY HAVING LIMIT OFFSET JOIN LEFT INNER CROSS OUTER ON AS AND
    OR NOT NULL IS IN LIKE GLOB BETWEEN EXISTS DISTINCT UNION ALL EXCEPT INTERSECT WITH RECURSIVE
    CASE WHEN THEN ELSE END ASC DESC COUNT VALUES USING NATURAL""".split()  # noqa: SIM905
)
"""The words a misspelled one in a criterion's query is compared with."""
_NO_SUCH = re.compile(r"no such (table|column): (\S+)")
_NEAR = re.compile(r'near "([A-Za-z_]+)": syntax error')


def playground_key(source: PlaygroundSource) -> PlaygroundKey:
    definition = source.spec.model_dump(mode="json", by_alias=True)
    return str(source.world), json.dumps(definition, sort_keys=True)


@dataclass
class _Use:
    """A playground, what defines it, and the fixtures that run in it."""

    source: PlaygroundSource
    owner: Located[Any]
    fixtures: dict[tuple[str, str], Located[EvalFixture]] = field(default_factory=dict)


class StaticChecks:
    """The checks of the runs added (`add`), made once each (`check`): what they find is in
    `problems` (a run refuses them) and `warnings`."""

    def __init__(
        self,
        locator: Locator,
        env: Mapping[str, str],
        served: Mapping[PlaygroundKey, Mapping[str, Any]] | None = None,
    ) -> None:
        self.locator = locator
        self.served = served or {}
        """The states playgrounds served when provisioned (`validate --playgrounds`)."""
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self._scorers = ScorerChecks(locator, env)
        self._fixtures: dict[tuple[str, str], Located[EvalFixture]] = {}
        self._uses: dict[PlaygroundKey, _Use] = {}
        self._keys: dict[tuple[Path, int], tuple[Playground, PlaygroundKey]] = {}
        self._snapshot_problems: dict[tuple[int, str], str | None] = {}
        """Why each snapshot file of a tree does not load (None: it does), by its door."""

    def add(
        self, checkout: Checkout, run: PlannedRun
    ) -> tuple[PlaygroundSource, Located[Any]] | None:
        """The run's playground and what defines it (its fixture, else its Eval), if any."""
        resources = checkout.resources
        fixture = resources.fixtures[run.fixture]
        self._fixtures[(fixture.file, run.fixture)] = fixture
        source = source_of(checkout, run)
        if source is None:
            return None
        owner: Located[Any] = fixture
        if fixture.resource.spec.playground is None:
            owner = resources.evals[run.eval]
        use = self._uses.setdefault(self._key(source), _Use(source, owner))
        use.fixtures[(fixture.file, run.fixture)] = fixture
        return source, owner

    def _key(self, source: PlaygroundSource) -> PlaygroundKey:
        """`playground_key`, made once per definition and tree: the runs of an Eval share
        one (by identity: the loaded definition lives as long as the checks, kept here)."""
        at = (source.world, id(source.spec))
        known = self._keys.get(at)
        if known is None or known[0] is not source.spec:
            known = self._keys[at] = (source.spec, playground_key(source))
        return known[1]

    def check(self) -> None:
        for fixture in self._fixtures.values():
            self._scorers.add(fixture)
        self.problems += self._scorers.problems()
        for key, use in self._uses.items():
            shape = _parts(use.source)
            if use.source.spec.sqlite is not None:
                shape.tables = self._database(use)
            files = use.source.spec.files
            if files is not None:
                shape.files = _seed_files(use.source.door, files.seed)
                shape.told_by["files"] = f"the files seed {files.seed!r}"
            if "service" in shape.parts:
                self._service(use, shape, self.served.get(key))
            for fixture in use.fixtures.values():
                self._paths(use, fixture, shape, self.served.get(key))
                self._snapshots(use, fixture)

    def _database(self, use: _Use) -> dict[str, list[str]] | None:
        """The tables the SQLite seed makes, with their columns, once the fixtures' queries
        are prepared against them (None: the seed does not load)."""
        part = use.source.spec.sqlite
        assert part is not None
        text = self._seed_text(use, part.seed)
        if text is None:
            return None
        seeded = sqlite3.connect(":memory:")
        try:
            load_seed(seeded, part.seed, text)
            temporary = _temporary_tables(seeded)
            connection = _saved(seeded)
        except SeedError as exc:
            self._owner_problem(use, seed_refusal(exc))
            return None
        finally:
            seeded.close()
        try:
            virtual = _virtual_tables(connection)
            if virtual:
                self._owner_problem(
                    use,
                    f"the seed {part.seed!r} makes the virtual table {virtual!r}, which a "
                    "run's state, read with nothing but reading allowed, cannot read; make it "
                    "an ordinary table (CREATE TABLE)",
                )
                return None
            tables, views = _schema(connection)
            twice = _labelled_twice(connection, part.seed, text, tables)
            if twice:
                self._owner_problem(use, twice)
                return None
            told = f"the seed {part.seed!r} of playground {use.source.name!r}"
            for fixture in use.fixtures.values():
                for at, criterion in _criteria(fixture.resource):
                    if not isinstance(criterion, SqlAssertion):
                        continue
                    why = _prepare(connection, criterion.query, {**views, **tables})
                    missing = _NO_SUCH.search(why or "")
                    name = missing[2].rstrip(";").rsplit(".", 1)[-1] if missing else ""
                    if missing and missing[1] == "table" and name in temporary:
                        why = (
                            f"no such table: {name} (the seed makes it a TEMP table, gone "
                            "once the seed is loaded: make it with CREATE TABLE)"
                        )
                    if why is not None:
                        problem = self.locator.problem(
                            fixture, (*at, "query"), f"the query fails on {told}: {why}"
                        )
                        self.problems.append(problem)
            return tables
        finally:
            connection.close()

    def _seed_text(self, use: _Use, seed: str) -> str | None:
        """The seed's text, or None once it is refused: a folder here (a run could not read
        it), one the side does not have by the preflight (`missing_seeds`)."""
        door = use.source.door
        try:
            return door.text(seed, SEED_LIMIT)
        except NotCommitted as exc:
            try:
                _, folder = door.place(seed)
            except NotCommitted:
                return None  # the preflight's refusal: `missing_seeds`
            fix = "; name the .sql script or .json/.yaml fixtures file in it" if folder else ""
            self._owner_problem(use, f"cannot read the seed {seed!r}: it {exc.reason}{fix}")
            return None

    def _snapshots(self, use: _Use, fixture: Located[EvalFixture]) -> None:
        """Each `stateSnapshot` file, read and parsed as a run reads it from the tree the
        playground is made from: one that is not there or does not load would make each run
        of the criterion an error, found only once its model calls are made."""
        door = use.source.door
        for at, criterion in _criteria(fixture.resource):
            if not isinstance(criterion, StateSnapshotAssertion) or criterion.snapshot is None:
                continue
            key = (id(door), criterion.snapshot)  # a file many fixtures compare with: once
            if key not in self._snapshot_problems:
                self._snapshot_problems[key] = _unloadable(door, criterion.snapshot)
            why = self._snapshot_problems[key]
            if why is not None:
                self.problems.append(self.locator.problem(fixture, (*at, "snapshot"), why))

    def _owner_problem(self, use: _Use, message: str) -> None:
        at = ("spec", "playground", "sqlite", "seed")
        full = f"playground {use.source.name!r}: {message}"
        self.problems.append(self.locator.problem(use.owner, at, full))

    def _service(self, use: _Use, shape: StateShape, served: Mapping[str, Any] | None) -> None:
        part = use.source.spec.service
        assert part is not None
        if served is not None:
            state = served.get("service")
            told = "the state its service served"
        elif part.seed is not None and part.seed.endswith((".json", ".yaml", ".yml")):
            state = _parsed(use.source.door, part.seed)
            told = f"the service's seed {part.seed!r}"
        else:
            return
        if isinstance(state, dict):
            shape.service = frozenset(str(key) for key in state)
            shape.told_by["service"] = told

    def _paths(
        self,
        use: _Use,
        fixture: Located[EvalFixture],
        shape: StateShape,
        served: Mapping[str, Any] | None,
    ) -> None:
        """Each path the seeds do not have, and (once provisioned) each the state the
        playground was made in shows it cannot have: a warning at its field."""
        for at, criterion in _criteria(fixture.resource):
            found = dict(path_warnings(criterion, shape))
            if served is not None:
                for field_at, why in held_warnings(criterion, served):
                    found.setdefault(field_at, why)
            for field_at, why in found.items():
                message = f"`{criterion.type}` in playground {use.source.name!r}: {why}"
                self.warnings.append(self.locator.problem(fixture, (*at, *field_at), message))


def _parts(source: PlaygroundSource) -> StateShape:
    """What the state of the playground has: a part for each it is made of (a service's
    only when its state is read)."""
    spec = source.spec
    parts = (part.state_part() for part in spec.parts().values())
    shape = StateShape(frozenset(name for name in parts if name is not None))
    if spec.sqlite is not None:
        shape.told_by["db"] = f"the seed {spec.sqlite.seed!r}"
    return shape


def _criteria(fixture: EvalFixture) -> list[tuple[PathKey, Assertion]]:
    """The fixture's state criteria, its scripted turns' too, and where each stands."""
    spec = fixture.spec
    found: list[tuple[PathKey, Assertion]] = [
        (("spec", "assertions", i), a) for i, a in enumerate(spec.assertions)
    ]
    turns = spec.conversation.turns if spec.conversation is not None else None
    for number, turn in enumerate(turns or []):
        at: PathKey = ("spec", "conversation", "turns", number, "assertions")
        found += [((*at, i), a) for i, a in enumerate(turn.assertions)]
    return [(at, a) for at, a in found if isinstance(a, STATE_TYPES)]


def _temporary_tables(connection: sqlite3.Connection) -> frozenset[str]:
    """The TEMP tables the seed made: they are gone once it is loaded, so a run's database
    never holds them, and a criterion that reads one would fail every run."""
    listed = connection.execute("SELECT name FROM temp.sqlite_master WHERE type = 'table'")
    return frozenset(str(name) for (name,) in listed.fetchall())


def _saved(connection: sqlite3.Connection) -> sqlite3.Connection:
    """The seeded database as a run's file holds it: its main schema alone, in a connection
    of its own (no TEMP table, view or trigger of the seed's)."""
    saved = sqlite3.connect(":memory:")
    (pages,) = connection.execute("PRAGMA main.page_count").fetchone()
    if pages:  # none: nothing made in it, an empty database (which SQLite cannot serialize)
        saved.deserialize(connection.serialize())
    return saved


def _virtual_tables(connection: sqlite3.Connection) -> str | None:
    """The first virtual table the seed made (`CREATE VIRTUAL TABLE f USING fts5(x)`), or
    None: a run's state reads every table with reading alone allowed, which a virtual
    table's module does not keep to, so each run of the playground would be an error."""
    found = connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' "
        "AND sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY rowid LIMIT 1"
    ).fetchone()
    return None if found is None else str(found[0])


def _labelled_twice(
    connection: sqlite3.Connection, seed: str, text: str, tables: dict[str, list[str]]
) -> str | None:
    """Why the seed's state could never be read, with the row of a fixtures seed: two rows
    of a table a run's state would call alike (`sqlite_read.row_label`)."""
    for name in tables:
        found = first_labelled_twice(connection, name)
        if found is None:
            continue
        place, label = found
        where = "" if seed.endswith(".sql") else where_written(seed, text, [(name, place)])
        return (
            f"the seed {seed!r}: its table {name!r} {labelled_twice(label)}; give each row a "
            "key of one type" + (f" ({where})" if where else "")
        )
    return None


def _schema(connection: sqlite3.Connection) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The tables the seed made and its views, each with its columns."""
    found: dict[str, dict[str, list[str]]] = {"table": {}, "view": {}}
    listed = connection.execute(
        "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') "
        "AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ).fetchall()
    for kind, name in listed:
        try:
            columns = connection.execute("SELECT name FROM pragma_table_info(?)", (name,))
            found[kind][str(name)] = [str(column) for (column,) in columns.fetchall()]
        except sqlite3.Error:  # a view over what is not there
            found[kind][str(name)] = []
    return found["table"], found["view"]


def _prepare(
    connection: sqlite3.Connection, query: str, tables: dict[str, list[str]]
) -> str | None:
    """Why the query does not prepare read-only against the seeded database, or None."""
    explained = query if re.match(r"\s*explain\b", query, re.IGNORECASE) else f"EXPLAIN {query}"
    connection.set_authorizer(_read_only)
    try:
        connection.execute(explained).close()
    except sqlite3.Warning:
        return "give one statement (a SELECT)"
    except sqlite3.Error as exc:
        said = str(exc)
        if "one statement" in said:
            return "give one statement (a SELECT)"
        if said == "not authorized":
            return "it would write; a criterion's query may only read (a SELECT)"
        return said + _suggestion(said, tables)
    finally:
        connection.set_authorizer(None)
    return None


def _read_only(action: int, *_: object) -> int:
    return sqlite3.SQLITE_OK if action in READ_ACTIONS else sqlite3.SQLITE_DENY


def _suggestion(said: str, tables: dict[str, list[str]]) -> str:
    """The nearest name to the one SQLite did not find, or keyword it could not read."""
    missing = _NO_SUCH.search(said)
    if missing is not None and missing[1] == "table":
        return did_you_mean(missing[2], tables) or f"; the seed makes {', '.join(sorted(tables))}"
    if missing is not None:
        columns = {column for names in tables.values() for column in names}
        return did_you_mean(missing[2].rsplit(".", 1)[-1], sorted(columns))
    near = _NEAR.search(said)
    if near is not None:
        return did_you_mean(near[1].upper(), _KEYWORDS)
    return ""


def _seed_files(door: RepoFiles, seed: str) -> frozenset[str] | None:
    """The files the files seed puts in the playground's folder (links as they are), as the
    side's door has them, or None when they cannot be listed whole."""
    try:
        real, folder = door.place(seed)
    except NotCommitted:
        return None
    if not folder:
        return frozenset({posixpath.basename(real)})
    if door.commit is not None and door.git is not None:
        listed = door.under(real)
        if len(listed) > LISTED_FILES:
            return None
        prefix = f"{real}/" if real else ""
        return frozenset(p.removeprefix(prefix) for p, e in listed.items() if not e.is_submodule)
    found: set[str] = set()
    folders = [(door.root.resolve() / real, "")]
    while folders:
        where, prefix = folders.pop()
        try:
            with os.scandir(where) as entries:
                for entry in entries:
                    if len(found) + len(folders) > LISTED_FILES:
                        return None
                    if entry.is_dir(follow_symlinks=False):
                        folders.append((Path(entry.path), f"{prefix}{entry.name}/"))
                    else:
                        found.add(prefix + entry.name)
        except OSError:
            return None
    return frozenset(found)


def _unloadable(door: RepoFiles, path: str) -> str | None:
    """Why the snapshot file `path` cannot be read or parsed as a run reads it, or None."""
    try:
        snapshot_data(path, door.text(path, SEED_LIMIT))
    except NotCommitted as exc:
        return f"the snapshot {path!r} {exc.reason}"
    except (SnapshotUnloadable, OSError, UnicodeDecodeError) as exc:
        return str(exc)
    return None


def _parsed(door: RepoFiles, seed: str) -> Any:
    """A JSON or YAML seed's data (None: it cannot be read, the service's to say)."""
    # lazy: PyYAML costs about 10 ms of start-up, and only a YAML seed needs it
    import yaml

    try:
        text = door.text(seed, SEED_LIMIT)
        return json.loads(text) if seed.endswith(".json") else parse_yaml(text)
    except (NotCommitted, ValueError, RecursionError, yaml.YAMLError, YamlSyntaxError):
        return None
