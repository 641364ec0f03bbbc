"""A run's SQLite database read as what changed from its template: whatever the agent does
to it (update, insert, delete, a key changed, a row grown past a page, pages freed or
taken over by another table, a table without rowids, a new index, a new table, `VACUUM`, a
corrupted page, rows past the bound, an AUTOINCREMENT table's counter), the state read
equals the state a whole read gives, and a row the agent left alone is the template's own
object."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from evalward.resources.playground import Playground
from evalward.rundata.playground_state import PlaygroundRun
from evalward.rundata.trace import Trace
from evalward.runtime.playground.base import PlaygroundSource, Templates
from evalward.runtime.playground.provision import PlaygroundSetting
from evalward.runtime.playground.run import StateNeeds, run_in_playground
from evalward.runtime.playground.sqlite_read import MAX_ROWS

pytestmark = pytest.mark.integration

SEED = {
    "orders": [
        {
            "id": f"W{n:04}",
            "status": "delivered",
            "items": [n, n + 1],
            "note": "x" * (9000 if n == 450 else n % 50),
        }
        for n in range(600)
    ],
    "users": [{"id": f"u{n}", "name": f"User {n}"} for n in range(300)],
    "notes": [{"id": "long", "text": "n" * 20000}],
    "refunds": [{"id": "R-0", "order_id": "", "amount": 0}],
}

Change = Callable[[sqlite3.Connection], None]


def sql(*statements: str) -> Change:
    def change(db: sqlite3.Connection) -> None:
        for statement in statements:
            db.execute(statement)

    return change


def many_rows(db: sqlite3.Connection) -> None:
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO users (id, name) VALUES (?, ?)", ((f"v{n}", "") for n in range(MAX_ROWS))
    )
    db.execute("COMMIT")


def corrupt(path: str) -> None:
    """Garbage over a page of the orders' table, as an agent that writes the file raw."""
    data = bytearray(Path(path).read_bytes())
    data[4096 * 3 + 8 : 4096 * 3 + 200] = b"\xff" * 192
    Path(path).write_bytes(bytes(data))


CHANGES: dict[str, Change | Callable[[str], None]] = {
    "nothing": sql(),
    "update": sql("UPDATE orders SET status = 'refund_requested' WHERE id = 'W0017'"),
    "insert": sql("INSERT INTO refunds (id, order_id, amount) VALUES ('R-1', 'W0017', 5)"),
    "delete": sql("DELETE FROM orders WHERE id IN ('W0100', 'W0101', 'W0599')"),
    "key changed": sql("UPDATE users SET id = 'u-new' WHERE id = 'u7'"),
    "key taken": sql(
        "DELETE FROM users WHERE id = 'u9'", "UPDATE users SET id = 'u9' WHERE id = 'u8'"
    ),
    "grown past a page": sql(f"UPDATE orders SET note = '{'y' * 9000}' WHERE id = 'W0300'"),
    "overflow changed": sql(  # only the end of a row that spills onto overflow pages
        "UPDATE orders SET note = substr(note, 1, 8990) || 'zzzzzzzzzz' WHERE id = 'W0450'"
    ),
    "many": sql("UPDATE orders SET status = 'lost' WHERE rowid % 7 = 0"),
    "whole pages deleted": sql("DELETE FROM orders WHERE rowid BETWEEN 100 AND 400"),
    "every row deleted": sql("DELETE FROM orders"),
    "pages freed as they were": sql(  # a leaf no longer reached, its bytes unchanged
        "PRAGMA secure_delete = OFF", "DELETE FROM users"
    ),
    "pages taken by another table": sql(  # the orders' freed pages, reused for new users
        "DELETE FROM orders WHERE rowid BETWEEN 100 AND 400",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300) "
        "INSERT INTO users (id, name) SELECT 'n' || i, printf('%.200c', 'x') FROM n",
    ),
    "no rowid table": sql(
        "CREATE TABLE tags (a TEXT, b TEXT, PRIMARY KEY (a, b)) WITHOUT ROWID",
        "INSERT INTO tags VALUES ('x', 'y')",
    ),
    "index": sql("CREATE INDEX by_status ON orders (status)"),
    "vacuum": sql("DELETE FROM orders WHERE rowid < 300", "VACUUM"),
    "rows past the bound": many_rows,
    "corrupt": corrupt,
}


def run_all(
    root: Path, templates: Templates | None
) -> dict[str, tuple[Trace, PlaygroundRun | None]]:
    """Each change in a run of its own, one after another, in one job (`templates`: none,
    each run's database is seeded and read whole)."""
    spec = Playground.model_validate({"sqlite": {"seed": "seed.json"}})
    source = PlaygroundSource("shop", spec, root)
    setting = PlaygroundSetting({"PATH": "/usr/bin:/bin"}, templates=templates)

    def agent(name: str) -> Callable[[Mapping[str, str]], Any]:
        async def run(env: Mapping[str, str]) -> Trace:
            change, path = CHANGES[name], env["EVALWARD_SQLITE_PATH"]
            if name == "corrupt":
                change(path)  # type: ignore[arg-type]
                return Trace()
            db = sqlite3.connect(path, isolation_level=None)  # each statement its own
            try:
                change(db)  # type: ignore[arg-type]
            finally:
                db.close()
            return Trace()

        return run

    async def each() -> dict[str, tuple[Trace, PlaygroundRun | None]]:
        return {
            name: await run_in_playground(source, StateNeeds(), agent(name), setting)
            for name in CHANGES
        }

    return asyncio.run(each())


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    root = tmp_path_factory.mktemp("shop")
    (root / "seed.json").write_text(json.dumps(SEED))
    templates = Templates()
    try:
        changed = run_all(root, templates)
    finally:
        templates.close()
    return changed, run_all(root, None)


READ_WHOLE = {"nothing", "no rowid table", "index", "vacuum"}
"""Changes read whole: the template's bytes (read once), and what pages cannot tell."""


@pytest.mark.parametrize(
    "name", [n for n in CHANGES if n not in ("rows past the bound", "corrupt")]
)
def test_the_state_read_by_what_changed_is_the_state_read_whole(
    both: tuple[dict[str, Any], dict[str, Any]], name: str
) -> None:
    changed, whole = both
    (trace, run), (whole_trace, reference) = changed[name], whole[name]
    assert run is not None and reference is not None, (trace.error, whole_trace.error)
    assert run.final.document == reference.final.document
    assert run.record() == reference.record()
    before, after = run.initial.document["db"], run.final.document["db"]
    kept = {table for table in after if after[table] is before.get(table)}
    if name == "nothing":
        assert after is before
    elif name in READ_WHOLE:
        assert not kept
    else:  # read by what changed: every table it left alone, and its rows, are the template's
        assert "notes" in kept
        for table in set(after) - kept:  # (one whose overflow pages changed: read whole)
            rows = after[table]
            shared = sum(rows[label] is before[table].get(label) for label in rows)
            assert 0 < shared < len(rows) or len(rows) != len(before[table]), table


def test_rows_the_agent_left_alone_are_the_templates_own(
    both: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    changed, _ = both
    _, run = changed["update"]
    assert run is not None
    before, after = run.initial.document["db"], run.final.document["db"]
    assert after["users"] is before["users"]  # a table it did not touch
    assert after["orders"] is not before["orders"]
    assert after["orders"]["W0017"]["status"] == "refund_requested"
    shared = [
        label for label in before["orders"] if after["orders"][label] is before["orders"][label]
    ]
    assert len(shared) == len(before["orders"]) - 1


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("rows past the bound", f"its database holds more than {MAX_ROWS:,} rows"),
        ("corrupt", "its database is corrupt"),
    ],
)
def test_what_a_whole_read_refuses_is_refused_alike(
    both: tuple[dict[str, Any], dict[str, Any]], name: str, why: str
) -> None:
    changed, whole = both
    for found in (changed, whole):
        trace, run = found[name]
        assert run is None
        assert trace.error is not None and why in trace.error, trace.error


AUTOINCREMENT_SEED = """\
CREATE TABLE log (id INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT NOT NULL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400)
INSERT INTO log (what) SELECT printf('entry %d', i) FROM n;
"""


def test_a_table_that_counts_its_keys_in_sqlites_own_table_is_read_by_what_changed(
    tmp_path: Path,
) -> None:
    """An AUTOINCREMENT table's insert also writes `sqlite_sequence`, which is SQLite's own
    and no part of the state: the rest is read by what changed, as a whole read reads it."""
    (tmp_path / "seed.sql").write_text(AUTOINCREMENT_SEED)
    spec = Playground.model_validate({"sqlite": {"seed": "seed.sql"}})
    source = PlaygroundSource("log", spec, tmp_path)

    async def agent(env: Mapping[str, str]) -> Trace:
        db = sqlite3.connect(env["EVALWARD_SQLITE_PATH"], isolation_level=None)
        try:
            db.execute("INSERT INTO log (what) VALUES ('refunded W0017')")
        finally:
            db.close()
        return Trace()

    async def once(templates: Templates | None) -> PlaygroundRun | None:
        setting = PlaygroundSetting({"PATH": "/usr/bin:/bin"}, templates=templates)
        await run_in_playground(source, StateNeeds(), agent, setting)  # the template read
        trace, run = await run_in_playground(source, StateNeeds(), agent, setting)
        assert run is not None, trace.error
        return run

    templates = Templates()
    try:
        changed = asyncio.run(once(templates))
    finally:
        templates.close()
    whole = asyncio.run(once(None))
    assert changed is not None and whole is not None
    assert changed.final.document == whole.final.document
    assert changed.record() == whole.record()
    before, after = changed.initial.document["db"], changed.final.document["db"]
    assert "sqlite_sequence" not in after
    assert len(after["log"]) == 401
    shared = sum(after["log"][label] is row for label, row in before["log"].items())
    assert shared == 400  # every entry it left alone is the template's own
