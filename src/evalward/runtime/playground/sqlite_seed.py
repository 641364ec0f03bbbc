"""A SQLite playground's seed, loaded into a database within bounds: the one code that loads
it into a run's database file and into the in-memory copy the checks before a run prepare
`sql` criteria against (plan/preflight/static_checks.py).

A seed is a file of the repository, a pull request's when the pull request adds the fixture,
and it runs in evalward's own process: it may not reach past its database. No other database
may be attached (which also refuses `VACUUM INTO` a file), no extension loaded, no pragma
set that moves a bound or a setting of the whole process; the database holds at most
DATABASE_LIMIT bytes, a value at most VALUE_LIMIT, and loading stops after SEED_SECONDS.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalward.errors import SeedError, SeedTimeout, YamlSyntaxError
from evalward.resources.reading.yamlsource import PathKey, check_shape, parse_documents
from evalward.text import jsontext

SEED_SECONDS = 60.0
DATABASE_LIMIT = 256 * 1024 * 1024
"""The largest database a seed may make: a run's state is read from one at most this large
(sqlite_read.DB_LIMIT)."""
VALUE_LIMIT = 1024 * 1024
"""The longest value (a text, a blob) a seed may make: a run's state reads none longer
(sqlite_read.MAX_VALUE_BYTES)."""
_REFUSED_PRAGMAS = frozenset(
    {
        "max_page_count",
        "page_size",
        "mmap_size",
        "cache_size",
        "temp_store",
        "temp_store_directory",
        "data_store_directory",
        "hard_heap_limit",
        "soft_heap_limit",
        "threads",
    }
)
_REFUSED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer"})


def load_seed(
    connection: sqlite3.Connection, seed: str, text: str, seconds: float = SEED_SECONDS
) -> None:
    """Load `text`, the seed `seed` (an SQL script, or a .json/.yaml fixtures file), into
    `connection`, within this module's bounds (`seconds` at most); SeedError when it does
    not load, whose `where` names an SQL seed's failing statement as a fixtures seed's row,
    for a run and `validate` alike (SQLite's message names neither)."""
    try:
        _load(connection, seed, text, seconds)
    except SeedTimeout:
        raise  # loaded again statement by statement, it would take as long once more
    except SeedError as exc:
        if seed.endswith(".sql") and not exc.where:
            line = _failing_line(seed, text, time.monotonic() + seconds)
            exc.where = f"the statement at {seed}:{line}" if line else ""
        raise


def _failing_line(seed: str, text: str, deadline: float) -> int | None:
    """The line of the SQL seed's first statement that does not load, loaded again statement
    by statement into a database of its own, all of them within the load's own `seconds`
    (None once the deadline passes: the error then names no line). Lines are counted as
    SQLite and editors count them, by line feed alone, and a statement is asked whether it
    is whole only at a line that can end it (a `;`, or the `*/` closing a comment after
    one): a statement of a million lines is not read again at every line."""
    connection = sqlite3.connect(":memory:")
    try:
        statement, start = "", 0
        for number, line in enumerate(_lines(text), start=1):
            if not start and line.strip() and not line.lstrip().startswith("--"):
                start = number
            statement += line
            if not start or (";" not in line and "*/" not in line):
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if sqlite3.complete_statement(statement):
                try:
                    _load(connection, seed, statement, left)
                except SeedTimeout:
                    return None
                except SeedError:
                    return start
                statement, start = "", 0
        return start or None  # an incomplete last statement
    finally:
        connection.close()


def _lines(text: str) -> Iterator[str]:
    """`text`'s lines with their line feeds, split at line feeds only (`str.splitlines` also
    splits at a form feed or U+2028, which no editor counts as a line)."""
    lines = text.split("\n")
    for line in lines[:-1]:
        yield line + "\n"
    if lines[-1]:
        yield lines[-1]


def _load(connection: sqlite3.Connection, seed: str, text: str, seconds: float) -> None:
    """`load_seed` without the failing statement's line."""
    guard = _Guard()
    _bound(connection)
    deadline = time.monotonic() + seconds
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    connection.set_authorizer(guard)
    at: list[PathKey] = []  # the table, or the row, a fixtures seed is loading
    try:
        if seed.endswith(".sql"):
            _refuse_nul(seed, text)
            connection.executescript(text)
        else:
            _insert_fixtures(connection, _fixtures(seed, text), at)
    except (sqlite3.Error, OverflowError) as exc:  # OverflowError: an integer past 64 bits
        if guard.refused:
            raise SeedError(f"the seed {seed!r} may not {guard.refused}") from None
        if time.monotonic() > deadline:
            raise SeedTimeout(f"the seed {seed!r} did not load within {seconds:g} s") from None
        refused = refused_by_the_machine(connection, exc)
        if refused is not None:  # not the seed's doing: the run stops on it, exit 3
            raise refused from None
        if getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL":  # the bound, not the disk
            raise SeedError(
                f"the seed {seed!r} makes a database larger than a playground may hold "
                f"({DATABASE_LIMIT // (1024 * 1024)} MiB); seed what the fixtures need"
            ) from None
        raise SeedError(
            f"the seed {seed!r} does not load: {exc}", where_written(seed, text, at)
        ) from None
    finally:
        connection.set_progress_handler(None, 0)
        connection.set_authorizer(None)


def _refuse_nul(seed: str, text: str) -> None:
    """SeedError at the line of the SQL seed's first NUL character: SQLite reads a script as
    text that ends at one, and Python refuses to hand it over at all (a ValueError)."""
    at = text.find("\0")
    if at >= 0:
        line = text.count("\n", 0, at) + 1
        raise SeedError(
            f"the seed {seed!r} does not load: it holds a NUL character (byte 0), which an SQL "
            "script may not; remove it (write a blob with a NUL as X'00')",
            f"the NUL character at {seed}:{line}",
        )


def refused_by_the_machine(connection: sqlite3.Connection, exc: BaseException) -> OSError | None:
    """The machine's refusal behind `exc`, a write SQLite could not make: a disk I/O error
    (its own or a temporary file's: a file size limit, a failing disk), or a database that
    could not grow with its file at the file size limit or its disk out of room. None for
    what the seed did (the bound), and for a database in memory, which only the bound fills."""
    name = getattr(exc, "sqlite_errorname", "")
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    limited = limit != resource.RLIM_INFINITY
    if name.startswith("SQLITE_IOERR"):
        number = errno.EFBIG if limited else errno.EIO
        return OSError(number, f"{os.strerror(number)}, loading a playground's database")
    try:
        files = [row[2] for row in connection.execute("PRAGMA database_list") if row[1] == "main"]
    except sqlite3.Error:
        return None
    if name != "SQLITE_FULL" or not files or not files[0]:
        return None
    path = Path(files[0])
    try:
        if limited and path.stat().st_size + MACHINE_SLACK >= limit:
            return OSError(errno.EFBIG, os.strerror(errno.EFBIG), str(path))
        room = os.statvfs(path.parent)
        if room.f_bavail * room.f_frsize < MACHINE_SLACK:
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    except OSError:
        return None
    return None


MACHINE_SLACK = 1024 * 1024
"""Within this of the file size limit, or with less room than this left on its disk, a
database that could not grow was refused by the machine (SQLite writes pages of a few KiB)."""


def _bound(connection: sqlite3.Connection) -> None:
    connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)  # no other file is written
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, VALUE_LIMIT)
    if hasattr(connection, "enable_load_extension"):  # built without it: nothing to load
        connection.enable_load_extension(False)
    (page,) = connection.execute("PRAGMA page_size").fetchone()
    for schema in ("main", "temp"):
        connection.execute(f"PRAGMA {schema}.max_page_count = {DATABASE_LIMIT // int(page)}")


class _Guard:
    """The authorizer a seed loads under: it refuses what would reach past the database,
    and keeps what it refused, for the message."""

    def __init__(self) -> None:
        self.refused = ""

    def __call__(self, action: int, first: str | None, second: str | None, *_: str | None) -> int:
        refused = ""
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            refused = "attach another database"
        elif action == sqlite3.SQLITE_PRAGMA and (first or "").lower() in _REFUSED_PRAGMAS:
            refused = f"set `PRAGMA {first}`"
        elif action == sqlite3.SQLITE_FUNCTION and (second or "").lower() in _REFUSED_FUNCTIONS:
            refused = f"call {second}()"
        if not refused:
            return sqlite3.SQLITE_OK
        self.refused = self.refused or refused
        return sqlite3.SQLITE_DENY


def _fixtures(seed: str, text: str) -> dict[str, list[dict[str, Any]]]:
    # lazy: PyYAML costs about 10 ms of start-up, and only a YAML seed needs it
    import yaml

    try:
        # a table or a column given twice is refused, as in a YAML seed: json.loads kept the
        # last, silently
        data = (
            jsontext.loads(text, unique_keys=True) if seed.endswith(".json") else parse_yaml(text)
        )
    except (ValueError, RecursionError, yaml.YAMLError, YamlSyntaxError) as exc:
        mark = getattr(exc, "problem_mark", None)  # yaml.MarkedYAMLError's, 0-based
        line = getattr(exc, "lineno", None)  # json.JSONDecodeError's
        line = exc.line if isinstance(exc, YamlSyntaxError) else mark.line + 1 if mark else line
        where = f"at {seed}:{line}" if line else ""
        raise SeedError(f"the seed {seed!r} does not parse: {exc}", where) from None
    if not isinstance(data, dict) or not all(
        isinstance(rows, list) and all(isinstance(row, dict) for row in rows)
        for rows in data.values()
    ):
        raise SeedError(f"the seed {seed!r} must map each table to a list of rows (objects)")
    return data


def parse_yaml(text: str) -> Any:
    """A YAML file of the repository as data, refused (YamlSyntaxError) when it nests too
    deep or its aliases expand too far to be walked (`yamlsource.check_shape`)."""
    check_shape(text)
    # lazy: PyYAML costs about 10 ms of start-up, and only a YAML file needs it
    from evalward.resources.reading import yaml12

    return yaml12.load(text)


def _insert_fixtures(
    connection: sqlite3.Connection, tables: dict[str, list[dict[str, Any]]], at: list[PathKey]
) -> None:
    """Each table with the columns its rows use (`id`, when there is one, its primary key),
    then its rows; `at` holds the table, or the row, being loaded, for a message that names
    where a row the database refuses (a key given twice) is written."""
    for table, rows in tables.items():
        columns = list(dict.fromkeys(name for row in rows for name in row))
        if not columns:
            continue
        names = [identifier(c) for c in columns]
        defined = [identifier(c) + (" PRIMARY KEY" if c == "id" else "") for c in columns]
        at[:] = [(table,)]
        connection.execute(f"CREATE TABLE {identifier(table)} ({', '.join(defined)})")
        marks = ", ".join("?" for _ in columns)
        insert = f"INSERT INTO {identifier(table)} ({', '.join(names)}) VALUES ({marks})"  # noqa: S608
        connection.executemany(insert, _values(table, rows, columns, at))


def _values(
    table: str, rows: list[dict[str, Any]], columns: list[str], at: list[PathKey]
) -> Iterator[tuple[Any, ...]]:
    """The rows' values, `at` naming each row as it is handed on: executemany takes a row
    once the one before is in, so `at` is the row it refuses."""
    for index, row in enumerate(rows):
        at[:] = [(table, index)]
        yield tuple(_sql_value(row.get(c)) for c in columns)


def where_written(seed: str, text: str, at: list[PathKey]) -> str:
    """Where in the fixtures seed `text` the table or row `at` is written (`the row at
    shop/seed.yaml:7`), or "" when it cannot be said."""
    if not at:
        return ""
    try:
        (document, *_) = parse_documents(text)  # read again for its marks: the error is rare
    except (YamlSyntaxError, ValueError):
        return ""
    line, _ = document.locate(at[0])
    return f"the {'row' if len(at[0]) > 1 else 'table'} at {seed}:{line}"


def identifier(name: str) -> str:
    """A name quoted as an SQL identifier, whatever it holds."""
    return '"' + str(name).replace('"', '""') + '"'


def _sql_value(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, dict | list) else value
