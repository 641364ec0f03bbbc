"""A SQLite seed is a pull request's file run in evalward's own process, into a run's
database and into the in-memory copy `validate` checks criteria against: it may not write a
file beside its database, load code, lift a bound, or run for ever."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from evalward.errors import SeedError, SeedTimeout
from evalward.runtime.playground.sqlite_seed import load_seed

pytestmark = pytest.mark.hostile

FOREVER = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c;"


@pytest.mark.parametrize(
    ("statement", "refusal"),
    [
        ("ATTACH DATABASE '{file}' AS other;", "may not attach another database"),
        ("CREATE TABLE t (x); VACUUM INTO '{file}';", "may not attach another database"),
        ("PRAGMA max_page_count = 999999999;", "may not set `PRAGMA max_page_count`"),
        ("PRAGMA page_size = 65536;", "may not set `PRAGMA page_size`"),
        ("PRAGMA temp.max_page_count = 999999999;", "may not set `PRAGMA max_page_count`"),
        ("SELECT load_extension('{file}');", "may not call load_extension()"),
        ("SELECT zeroblob(100000000);", "string or blob too big"),
    ],
)
@pytest.mark.parametrize("database", ["file", "memory"])
def test_a_seed_cannot_reach_past_its_database(
    tmp_path: Path, statement: str, refusal: str, database: str
) -> None:
    target = tmp_path / "written.db"
    connection = sqlite3.connect(tmp_path / "db.sqlite" if database == "file" else ":memory:")
    try:
        with pytest.raises(SeedError) as refused:
            load_seed(connection, "seed.sql", statement.format(file=target))
    finally:
        connection.close()
    assert str(refused.value).startswith("the seed 'seed.sql' ")
    assert refusal in str(refused.value)
    assert not target.exists()


def test_a_seed_that_never_ends_is_stopped_at_its_bound() -> None:
    connection = sqlite3.connect(":memory:")
    with pytest.raises(SeedTimeout, match=r"did not load within 0\.2 s"):
        load_seed(connection, "seed.sql", FOREVER, seconds=0.2)
    # the bound is the seed's, not the connection's: what follows runs unbounded by it
    assert connection.execute("SELECT 1").fetchone() == (1,)


def test_the_search_for_a_failing_statement_is_held_to_the_seeds_bound_too() -> None:
    """A seed that fails is loaded again statement by statement to name the failing one's
    line: a statement of many lines, each a place it could end (a `;` in a string), is asked
    whether it is whole at each, which grows with the square of its lines, so the search
    stops at the seed's own bound and the error names no line."""
    rows = "".join(f"({n}, 'a;'),\n" for n in range(2, 50_000))
    text = (  # the id twice at once: the load fails as soon as it starts
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v);\n"
        f"INSERT INTO t VALUES\n(1, 'a;'),\n(1, 'b;'),\n{rows}(50000, 'c');\n"
    )
    connection = sqlite3.connect(":memory:")
    try:
        with pytest.raises(SeedError) as failed:
            load_seed(connection, "seed.sql", text, seconds=3)
    finally:
        connection.close()
    assert "UNIQUE constraint failed" in str(failed.value)
    assert failed.value.where == ""


def test_the_pragmas_a_dump_writes_still_load() -> None:
    """What `sqlite3 .dump` writes (foreign keys off, a transaction) is a seed as before."""
    connection = sqlite3.connect(":memory:")
    load_seed(
        connection,
        "seed.sql",
        "PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\nCREATE TABLE t (x);\n"
        "INSERT INTO t VALUES (1);\nCOMMIT;\n",
    )
    assert connection.execute("SELECT x FROM t").fetchall() == [(1,)]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("orders: [{id: 99999999999999999999}]\n", "does not load"),
        ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{n}: &{n} [{', '.join(['*' + p] * 10)}]\n"
            for n, p in zip("bcdefgh", "abcdefg", strict=True)
        ) + "orders: [{id: 1, blob: *h}]\n", "does not parse"),
    ],
    ids=["integer-past-64-bits", "alias-bomb"],
)  # fmt: skip
def test_a_fixtures_seed_too_large_to_hold_is_refused_by_name(text: str, said: str) -> None:
    connection = sqlite3.connect(":memory:")
    with pytest.raises(SeedError, match=re.escape(f"the seed 'seed.yaml' {said}")):
        load_seed(connection, "seed.yaml", text)


def test_a_json_fixtures_seed_that_gives_a_table_twice_is_refused_as_a_yaml_one_is() -> None:
    """`json.loads` kept the second `orders` and loaded it, silently."""
    connection = sqlite3.connect(":memory:")
    text = '{"orders": [{"id": 1}], "orders": [{"id": 2}]}'
    said = "the seed 'seed.json' does not parse: the key `orders`"
    with pytest.raises(SeedError, match=re.escape(said)):
        load_seed(connection, "seed.json", text)


@pytest.mark.parametrize(
    ("seed", "text", "where"),
    [
        ("seed.yaml", "orders:\n  - id: 1\n  - id: 2\n  - id: 1\n", "the row at seed.yaml:4"),
        ("seed.json", '{"orders": [\n  {"id": 1},\n  {"id": 1}\n]}', "the row at seed.json:3"),
        ("seed.yaml", "sqlite_x:\n  - id: 1\n", "the table at seed.yaml:1"),
        ("seed.yaml", "orders:\n  - id: 1\n  - id: 1\nrefunds: [}\n", "at seed.yaml:4"),
        ("seed.json", '{"orders": [\n  {"id": 1},\n  {"id": 1}\n}', "at seed.json:4"),
    ],
    ids=["yaml-row", "json-row", "table", "yaml-syntax", "json-syntax"],
)
def test_a_fixtures_seed_that_does_not_load_names_its_line(
    seed: str, text: str, where: str
) -> None:
    """Not the seed's first line, which every seed has."""
    connection = sqlite3.connect(":memory:")
    with pytest.raises(SeedError) as refused:
        load_seed(connection, seed, text)
    assert refused.value.where == where, refused.value


@pytest.mark.parametrize("database", ["file", "memory"])
def test_a_seed_past_the_database_bound_is_said_to_be_too_large(
    tmp_path: Path, database: str
) -> None:
    """Rows without end fill the database to its bound: the seed is too large, said so and by
    how much may be held (SQLite's own words blame the disk)."""
    filler = (
        "CREATE TABLE t (x); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) "
        "INSERT INTO t SELECT zeroblob(1000000) FROM c;"
    )
    connection = sqlite3.connect(tmp_path / "db.sqlite" if database == "file" else ":memory:")
    try:
        with pytest.raises(SeedError) as refused:
            load_seed(connection, "seed.sql", filler)
    finally:
        connection.close()
    assert str(refused.value) == (
        "the seed 'seed.sql' makes a database larger than a playground may hold (256 MiB); "
        "seed what the fixtures need"
    )
