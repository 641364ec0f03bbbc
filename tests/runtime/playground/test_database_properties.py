"""Property-based: a playground database an agent shaped (tables and columns named anything,
keys of every type or none, rows without rowid, values of every SQLite type and size,
views and triggers) is read by the state capture into a document the run record can write,
or refused with the playground's own error: never another exception, which would end the
whole run; and the values the reading takes never pass its bounds."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalward.errors import PlaygroundError
from evalward.resources.playground import Playground
from evalward.rundata.playground_state import PlaygroundRun, PlaygroundState
from evalward.runtime.playground import state as playground_state
from evalward.runtime.playground.base import LivePlayground, PlaygroundSource
from evalward.runtime.playground.sqlite import SqliteRun
from evalward.runtime.playground.sqlite_read import MAX_VALUE_BYTES

pytestmark = pytest.mark.hostile

PROPERTY = settings(max_examples=60, deadline=None)
NAMES = st.text(min_size=1, max_size=8).filter(lambda name: "\0" not in name) | st.sampled_from(
    ['"', "rowid", "k", "sqlite_x", "select", " ", "a.b"]
)
VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=50),
    st.binary(max_size=100),
    st.sampled_from(["x" * 3000, b"\xff" * 3000]),
)
KEYS = st.sampled_from(["", "INTEGER PRIMARY KEY", "TEXT PRIMARY KEY", "PRIMARY KEY", "UNIQUE"])


@st.composite
def tables(draw: st.DrawFn) -> list[dict[str, Any]]:
    found = []
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        columns = draw(st.lists(NAMES, min_size=1, max_size=5, unique_by=str.lower))
        found.append(
            {
                "name": draw(NAMES),
                "columns": columns,
                "key": draw(KEYS),
                "without_rowid": draw(st.booleans()),
                "rows": draw(st.lists(st.lists(VALUES, min_size=5, max_size=5), max_size=6)),
            }
        )
    return found


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def build(path: Path, shape: list[dict[str, Any]], extras: list[str]) -> None:
    db = sqlite3.connect(path)
    for table in shape:
        columns = [quoted(c) for c in table["columns"]]
        if table["key"]:
            columns[0] += " " + table["key"]
        tail = " WITHOUT ROWID" if table["without_rowid"] else ""
        try:
            db.execute(f"CREATE TABLE {quoted(table['name'])} ({', '.join(columns)}){tail}")
        except sqlite3.Error:
            continue  # a name taken twice, WITHOUT ROWID with no key: what SQLite refuses
        marks = ", ".join("?" for _ in columns)
        for row in table["rows"]:
            with contextlib.suppress(sqlite3.Error):  # a key twice, NULL in a WITHOUT ROWID key
                db.execute(
                    f"INSERT INTO {quoted(table['name'])} VALUES ({marks})", row[: len(columns)]
                )
    for statement in extras:
        with contextlib.suppress(sqlite3.Error):
            db.execute(statement)
    db.commit()
    db.close()


EXTRAS = st.lists(
    st.sampled_from(
        [
            "CREATE VIEW v AS SELECT 1",
            "CREATE TABLE big (x)",
            "INSERT INTO big VALUES (zeroblob(1100000))",
            "CREATE TRIGGER t AFTER INSERT ON big BEGIN SELECT 1; END",
            "CREATE INDEX i ON big (x)",
            "CREATE TABLE bad (x TEXT)",
            "INSERT INTO bad VALUES (CAST(x'ff00fe' AS TEXT))",
        ]
    ),
    max_size=3,
)


@PROPERTY
@given(shape=tables(), extras=EXTRAS)
def test_any_database_is_read_within_its_bounds_or_refused_by_name(
    shape: list[dict[str, Any]], extras: list[str]
) -> None:
    with tempfile.TemporaryDirectory(prefix="evalward-db-") as scratch:
        folder = Path(scratch)
        (folder / "db").mkdir()
        build(folder / "db" / "playground.sqlite", shape, extras)
        spec = Playground.model_validate({"sqlite": {"seed": "seed.sql"}})
        assert spec.sqlite is not None
        parts = [SqliteRun(spec.sqlite, folder / "db" / "playground.sqlite")]
        live = LivePlayground(PlaygroundSource("hostile", spec, folder), folder, None, 1.0, parts)

        async def read() -> str:
            try:
                state = await playground_state.capture(live, ["SELECT * FROM big"])
            except PlaygroundError as exc:
                assert str(exc).startswith("playground 'hostile': "), exc
                return "refused"
            record = PlaygroundRun(PlaygroundState("hostile"), state).record()
            json.loads(record.model_dump_json())
            for table in state.document["db"].values():
                for row in table.values():
                    for value in row.values():
                        assert len(str(value)) <= MAX_VALUE_BYTES
            return "read"

        outcome = asyncio.run(read())
        big = ["CREATE TABLE big (x)", "INSERT INTO big VALUES (zeroblob(1100000))"]
        if [e for e in extras if e in big] == big:  # a value past the bound: never read
            assert outcome == "refused"
