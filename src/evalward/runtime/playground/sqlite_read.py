"""A playground's SQLite database, read as evalward and never as the agent: copied without
following a link (at most DB_LIMIT bytes) into a folder of evalward's own, opened so that
nothing but reading is allowed, and read row by row within bounds of what it holds — rows,
values, a value's length, characters — counted as each row arrives, so reading it never
takes more memory than those bounds allow, whatever the file's size. A state criterion's
query is read the same way, within a time limit. What cannot be read is a PlaygroundError
naming the playground.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import sqlite3
import stat
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from evalward.files.safe_files import OPEN_SAFELY
from evalward.files.trees import FOLDER
from evalward.rundata.playground_state import PlaygroundState, QueryAnswer, derived, shared_with
from evalward.runtime.playground.base import STATE_CHARS, LivePlayground
from evalward.runtime.playground.sqlite_changes import TemplatePages, apply, changes, index_template
from evalward.runtime.playground.sqlite_seed import identifier
from evalward.text.cuts import cap_chars
from evalward.text.escaping import printable

DB_LIMIT = 256 * 1024 * 1024
IN_MEMORY_BYTES = 4 * 1024 * 1024
"""A database up to this size (with no write-ahead log) is read from an image in memory
instead of a copy in a folder of evalward's own: a third of reading a small one."""
MAX_VALUE_BYTES = 1024 * 1024
"""The longest text or blob the database may hold in one value (SQLite refuses to read a
longer one: SQLITE_LIMIT_LENGTH), so no single value is read into memory whole."""
MAX_CELLS = 500_000
"""Values (columns × rows, tables and rows counted too) read at most from the database, and
from each query's answer."""
MAX_ROWS = 100_000
QUERY_SECONDS = 10.0
READ_SECONDS = 30.0
"""The longest reading one database may take, its check and every table together: a schema's
generated columns and views make each row cost what the pull request likes (a million-long
`printf` a row), and nothing else bounds the reader's time."""
PROGRESS_STEPS = 100
"""SQLite instructions between two looks at the clock: one instruction may be one slow call."""
READ_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
"""What a state criterion's query may ask SQLite's authorizer for: reading (a recursive
common table expression reads too), here and in the checks before a run
(plan/preflight/static_checks.py). Its time is bounded by the progress handler, not by this."""
KNOWN_INLINE_BYTES = 64 * 1024
"""A template image up to this size is compared with a run's database on the event loop."""
JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")
"""How a rollback journal that holds a transaction begins: SQLite zeroes (or deletes) it once
the transaction is committed or rolled back, so a journal that still begins so is hot."""
DETERMINISTIC = frozenset(
    """abs avg char coalesce count glob group_concat hex ifnull iif instr json json_array_length
    json_extract json_type json_valid length like lower ltrim max min nullif printf quote replace
    round rtrim substr substring sum total trim typeof unicode upper""".split()  # noqa: SIM905
)
"""Functions whose result depends on their arguments alone: a query that calls no other
answers the same of the same bytes."""


@dataclass
class KnownImage:
    """A database image whose tables are known once read: a template's. A run's database
    that is still these bytes (its agent wrote nothing) reads as the same tables, so they are
    read once, and so is each query that calls only DETERMINISTIC functions; one whose agent
    changed some rows reads as those rows and the template's others (`sqlite_changes.py`)."""

    image: bytes
    tables: dict[str, Any] | None = None
    answers: dict[str, QueryAnswer] = field(default_factory=dict)
    pages: TemplatePages | None = None
    """What its pages hold, once its tables are read (None: a run's database is read whole)."""
    spent: tuple[int, int, int] = (0, 0, 0)
    """The rows, values and characters its tables were counted as (`_Reading`)."""


def read_known(
    live: LivePlayground,
    name: str,
    queries: list[str],
    state: PlaygroundState,
    known: KnownImage,
) -> bool:
    """When the database is still `known`'s bytes (a small image) and every query's answer
    is known, its state from them, in a few system calls and no SQL: True. False: read it
    (`read_database`)."""
    if known.tables is None or len(known.image) > KNOWN_INLINE_BYTES:
        return False
    if any(query not in known.answers for query in queries):
        return False
    if _small_image(live, name, len(known.image)) != known.image:
        return False
    state.document["db"] = known.tables
    state.queries.update((query, known.answers[query]) for query in queries)
    return True


def read_database(
    live: LivePlayground,
    name: str,
    queries: list[str],
    state: PlaygroundState,
    known: KnownImage | None,
) -> None:
    """The tables of the database `name` (a file of the playground's folder) into
    `state.document["db"]`, and each query's answer, within STATE_CHARS characters of state
    and the bounds above."""
    image = _small_image(live, name)
    if image is not None and known is not None and image == known.image:
        if known.tables is None:
            _read(live, image, queries, state, known)
            known.tables = state.document["db"]
            _index(known)
        else:  # the same bytes: the same tables, and the same integrity, already checked
            state.document["db"] = known.tables
            if queries:
                _answer(_open_read_only(live, image, known=True)[0], queries, state, known)
    elif image is None:  # too large to read in memory, or with a write-ahead log: copied
        private = Path(tempfile.mkdtemp(prefix="evalward-state-"))
        try:
            copy = private / "copy.sqlite"
            _copy_nofollow(live, name, copy, required=True)
            _copy_nofollow(live, name + "-wal", copy.with_name(copy.name + "-wal"), required=False)
            _read(live, copy, queries, state)
        finally:
            shutil.rmtree(private, ignore_errors=True)
    elif (
        known is None
        or known.pages is None
        or not _read_changed(live, image, queries, state, known)
    ):
        _read(live, image, queries, state)


def _read(
    live: LivePlayground,
    copy: Path | bytes,
    queries: list[str],
    state: PlaygroundState,
    known: KnownImage | None = None,
) -> None:
    connection, schema = _open_read_only(live, copy)
    reading = _Reading(live)
    try:  # each table's rows by their label (`label_key`), read and counted one at a time
        state.document["db"] = {
            name: _table(live, connection, name, key, reading) for name, key in schema
        }
    except BaseException:
        connection.close()
        raise
    if known is not None:  # a template's: what a run's read by what changed starts from
        known.spent = reading.spent()
    _answer(connection, queries, state, known)


def _index(known: KnownImage) -> None:
    """Learn what a template's pages hold (`sqlite_changes.index_template`), so that a run's
    database can be read by what changed; a template that cannot be indexed stays without."""
    assert known.tables is not None
    connection = sqlite3.connect(":memory:")
    try:
        _bound(connection, known.image)
        keys = {name: label_key(connection, name) for name in known.tables}
        known.pages = index_template(connection, known.image, keys, known.tables)
    except sqlite3.Error:
        known.pages = None
    finally:
        connection.close()


def _read_changed(
    live: LivePlayground,
    image: bytes,
    queries: list[str],
    state: PlaygroundState,
    known: KnownImage,
) -> bool:
    """The run's database (`image`) as its template's tables with the rows on its changed
    pages read again, checked as a whole read checks it; False when it is not read so (read
    it whole)."""
    assert known.pages is not None and known.tables is not None
    connection = sqlite3.connect(":memory:")
    handed = False
    try:
        _bound(connection, image)
        _check_integrity(connection)
        found = changes(connection, image, known.image, known.pages)
        if found is None:
            return False
        reading = _Reading(live, known.spent)
        tables = apply(connection, found, known.tables, known.pages, reading)
        if tables is None:
            return False
        for name in found.whole:
            for label, row in known.tables.get(name, {}).items():
                reading.give_back(label, row)
            table = _table(live, connection, name, known.pages.keys[name], reading)
            tables[name] = shared_with(table, known.tables.get(name), 1)
        settled = derived(tables, set(found.rowids) | found.whole)
        connection.execute("PRAGMA query_only = ON")
        handed = True
    except sqlite3.Error as exc:
        raise live.error(_unreadable(exc, f"its database is corrupt ({exc})")) from None
    finally:
        if not handed:  # the queries close it once handed to them
            connection.close()
    connection.set_authorizer(_read_only)
    state.document["db"] = settled
    _answer(connection, queries, state, None)
    return True


def _answer(
    connection: sqlite3.Connection,
    queries: list[str],
    state: PlaygroundState,
    known: KnownImage | None,
) -> None:
    """Each query's answer, on a connection opened for reading only (then closed); kept in
    `known` when the query calls DETERMINISTIC functions alone and did not fail."""
    try:
        for query in queries:
            found = known.answers.get(query) if known is not None else None
            if found is None:
                called: set[str] = set()
                connection.set_authorizer(partial(_read_only, called=called))
                found = _query(connection, query)
                if known is not None and not found.error and called <= DETERMINISTIC:
                    known.answers[query] = found
            state.queries[query] = found
    finally:
        connection.close()


def _small_image(live: LivePlayground, name: str, limit: int = IN_MEMORY_BYTES) -> bytes | None:
    """The database's bytes when it is at most `limit` and has no write-ahead log beside it:
    read into memory, no link followed, it is opened there rather than copied into a folder.
    None: copy it (`_copy_nofollow`). Every read of a run's database starts here, so a
    transaction left unfinished beside it is refused here (`_refuse_unfinished`)."""
    try:
        folder = os.open(live.folder, FOLDER)
    except OSError:
        return None  # the copy says what is wrong with it (gone, or not a folder)
    try:
        _refuse_unfinished(live, name, folder)
        try:
            os.close(os.open(name + "-wal", OPEN_SAFELY, dir_fd=folder))
            return None
        except FileNotFoundError:
            pass
        except OSError:
            return None  # the copy says what is wrong with it
        try:
            fd = os.open(name, OPEN_SAFELY, dir_fd=folder)
        except FileNotFoundError:
            raise live.error("its database is gone") from None
        except OSError as exc:
            raise live.error(f"its database cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(folder)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise live.error("its database is no longer a regular file")
        if info.st_size > limit:
            return None
        image = _read_up_to(fd, limit + 1, info.st_size + 1)
    finally:
        os.close(fd)
    return image if len(image) <= limit else None


def _refuse_unfinished(live: LivePlayground, name: str, folder: int) -> None:
    """PlaygroundError when a rollback journal beside the database holds a transaction that
    was never committed (a hot journal: a program stopped while writing). Its pages may be in
    the database's file already, so the file is not the state: SQLite would roll them back
    when next opened. The journal is never played back here: it names a super-journal by
    any path, which SQLite would read and then delete as evalward."""
    journal = name + "-journal"
    try:
        fd = os.open(journal, OPEN_SAFELY, dir_fd=folder)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise live.error(f"its database's journal {journal} cannot be read: {exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise live.error(f"its database's journal {journal} is not a regular file")
        begins = os.read(fd, len(JOURNAL_MAGIC))
    finally:
        os.close(fd)
    if begins == JOURNAL_MAGIC:
        raise live.error(
            f"its database holds a transaction that was never committed ({journal} is a hot "
            "journal: a program was stopped while writing), so what it holds is not the run's "
            "state; commit or roll back every transaction before the agent's programs end"
        )


def _read_up_to(fd: int, limit: int, expected: int) -> bytes:
    """At most `limit` bytes of a file, read in pieces of about its expected size (a buffer
    of `limit` bytes for a file of a few pages would cost more than reading it)."""
    chunks: list[bytes] = []
    size = 0
    while size < limit and (chunk := os.read(fd, min(limit - size, max(expected, 65536)))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _copy_nofollow(live: LivePlayground, name: str, target: Path, *, required: bool) -> None:
    """Copy a file of the playground's folder, no link followed (one the agent turned into
    a link leads nowhere), at most DB_LIMIT bytes: the database, or (not `required`) its
    write-ahead log, each named as itself where it is wrong."""
    what = "its database" if required else f"its database's write-ahead log ({name})"
    try:
        folder = os.open(live.folder, FOLDER)
        try:
            fd = os.open(name, OPEN_SAFELY, dir_fd=folder)
        finally:
            os.close(folder)
    except FileNotFoundError:
        if not required:
            return
        raise live.error(f"{what} is gone") from None
    except OSError as exc:
        raise live.error(f"{what} cannot be read: {exc.strerror or exc}") from None
    try:  # a folder in its place opens too, and no file object is made of one
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise live.error(f"{what} is no longer a regular file")
        if info.st_size > DB_LIMIT:
            raise live.error(f"{what} grew past {DB_LIMIT:,} bytes")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle, target.open("wb") as out:
        copied = 0
        while chunk := handle.read(1024 * 1024):
            copied += len(chunk)
            if copied > DB_LIMIT:
                raise live.error(f"{what} grew past {DB_LIMIT:,} bytes")
            out.write(chunk)


_TABLES = (
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
)


def _open_read_only(
    live: LivePlayground, copy: Path | bytes, *, known: bool = False
) -> tuple[sqlite3.Connection, list[tuple[str, str]]]:
    """The copy (a file, or an image in memory), opened so that nothing but reading is
    allowed, and its tables with the expression each one's rows are labelled by (`label_key`).
    `known`: an image whose integrity was checked and tables read already (none listed)."""
    connection = sqlite3.connect(":memory:" if isinstance(copy, bytes) else copy)
    try:
        _bound(connection, copy)
        if not known:
            _check_integrity(connection)
        connection.execute("PRAGMA query_only = ON")
        names = [] if known else connection.execute(_TABLES).fetchall()
        schema = [(str(name), label_key(connection, name)) for (name,) in names]
    except sqlite3.Error as exc:
        connection.close()
        raise live.error(_unreadable(exc, f"its database is corrupt ({exc})")) from None
    connection.set_authorizer(_read_only)
    return connection, schema


def _bound(connection: sqlite3.Connection, copy: Path | bytes) -> None:
    """Open `copy` on `connection` within the reader's bounds: attaching nothing, no value
    longer than MAX_VALUE_BYTES, everything it is asked within READ_SECONDS from now."""
    deadline = time.monotonic() + READ_SECONDS
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), PROGRESS_STEPS)
    if isinstance(copy, bytes) and copy:  # an empty file is an empty database
        connection.deserialize(_rollback_mode(copy))
    connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    connection.execute("PRAGMA trusted_schema = OFF")


def _rollback_mode(image: bytes) -> bytes:
    """`image` as SQLite opens it in memory: a database a program put in WAL mode (2 in its
    header's bytes 18 and 19, which stay so once its log is checkpointed and removed) cannot
    be, and in rollback mode (1) its pages read the same. An image is read in memory only
    with no log beside it (`_small_image`), so its file holds every committed page."""
    versions = image[18:20]
    if b"\x02" not in versions:
        return image
    return image[:18] + versions.replace(b"\x02", b"\x01") + image[20:]


def _check_integrity(connection: sqlite3.Connection) -> None:
    check = connection.execute("PRAGMA integrity_check(1)").fetchone()
    if check is None or check[0] != "ok":
        raise sqlite3.DatabaseError(check[0] if check else "no answer")


def _read_only(
    action: int, first: str | None, second: str | None, *_: object, called: set[str] | None = None
) -> int:
    """Reading only; the functions a statement calls are added to `called`."""
    if action == sqlite3.SQLITE_FUNCTION and called is not None:
        called.add((second or "").lower())
    return sqlite3.SQLITE_OK if action in READ_ACTIONS else sqlite3.SQLITE_DENY


class _Reading:
    """What reading the database has taken so far, against its bounds: values (`MAX_CELLS`)
    and characters (of the whole state), counted as each row arrives, so a database never takes
    more memory than its bounds allow before it is refused."""

    def __init__(self, live: LivePlayground, spent: tuple[int, int, int] = (0, 0, 0)) -> None:
        """`spent`: rows, values and characters already counted (a template's tables)."""
        self.live = live
        rows, cells, chars = spent
        self.rows, self.cells, self.chars = MAX_ROWS - rows, MAX_CELLS - cells, STATE_CHARS - chars

    def table(self, name: str) -> None:
        self.cells -= 1
        self.chars -= len(name) + 8
        self._check(name)

    def take(
        self, where: str, label: str, columns: list[str], values: tuple[Any, ...]
    ) -> dict[str, Any]:
        """One row, as the state keeps it."""
        self.rows -= 1
        if self.rows < 0:
            raise self.live.error(f"its database holds more than {MAX_ROWS:,} rows")
        row = {column: _json_value(value) for column, value in zip(columns, values, strict=True)}
        cells, chars = _row_cost(label, row)
        self.cells -= cells
        self.chars -= chars
        self._check(where)
        return row

    def spent(self) -> tuple[int, int, int]:
        """The rows, values and characters counted so far."""
        return MAX_ROWS - self.rows, MAX_CELLS - self.cells, STATE_CHARS - self.chars

    def give_back(self, label: str, row: dict[str, Any]) -> None:
        """A counted row the state no longer holds (a template's row the run changed)."""
        cells, chars = _row_cost(label, row)
        self.rows += 1
        self.cells += cells
        self.chars += chars

    def _check(self, where: str) -> None:
        if self.cells < 0:
            raise self.live.error(
                f"its database holds more than {MAX_CELLS:,} values (at table {where!r})"
            )
        if self.chars < 0:
            raise self.live.error(
                f"its database's state is larger than {STATE_CHARS:,} characters "
                f"(at table {where!r})"
            )


def _row_cost(label: str, row: dict[str, Any]) -> tuple[int, int]:
    """The values and characters a row made of `label` and `row` is counted as (`take`): a
    value that is not text as about 24 characters of the state's JSON."""
    chars = sum(len(c) + (len(v) if isinstance(v, str) else 24) + 8 for c, v in row.items())
    return len(row) + 1, len(label) + 8 + chars


def label_key(connection: sqlite3.Connection, name: str) -> str:
    """The expression a table's rows are labelled by: its one-column primary key, else its
    rowid."""
    info = connection.execute("SELECT name, pk FROM pragma_table_info(?)", (name,))
    keys = [str(column) for column, pk in info.fetchall() if pk]
    return identifier(keys[0]) if len(keys) == 1 else "rowid"


def _labelled_rows(connection: sqlite3.Connection, name: str, key: str) -> sqlite3.Cursor:
    """A table's rows, each led by its key (`label_key`; NULL where it cannot be read)."""
    table_name = identifier(name)
    try:
        return connection.execute(f"SELECT {key} AS k, * FROM {table_name}")  # noqa: S608
    except sqlite3.Error:  # a table WITHOUT ROWID and a key of several columns
        return connection.execute(f"SELECT NULL AS k, * FROM {table_name}")  # noqa: S608


def row_label(place: int, key: object) -> str:
    """What a row is called in a run's state: its key as text, else its place."""
    return str(place) if key is None else str(key)


def labelled_twice(label: str) -> str:
    """Why a table whose two rows are called `label` has no state (`row_label`)."""
    shown = cap_chars(printable(label), 80)
    return (
        f"holds two rows labelled {shown!r} (keys of other types, as 1 and '1', or a row "
        "without one at that place): a state criterion could not tell them apart"
    )


def first_labelled_twice(connection: sqlite3.Connection, name: str) -> tuple[int, str] | None:
    """The place and label of a table's first row called as one before it was (`row_label`),
    or None: what the run's state read of the table would refuse, found before any run.

    Only a key of one column can call two rows alike (a rowid is an integer no other row
    has; a key of several columns leaves every row called by its place). Its key alone is
    read, in the order a run reads the rows (NOT INDEXED: the table's own order, not its
    key's index), never a generated column's value, which may cost any time; and no more
    rows than a run reads (MAX_ROWS), within READ_SECONDS (not read in time: None, for the
    run's reader to say)."""
    key = label_key(connection, name)
    if key == "rowid":
        return None
    seen: set[str] = set()
    deadline = time.monotonic() + READ_SECONDS
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), PROGRESS_STEPS)
    try:
        cursor = connection.execute(
            f"SELECT {key} FROM {identifier(name)} NOT INDEXED LIMIT {MAX_ROWS}"  # noqa: S608
        )
        for place, (found,) in enumerate(cursor):
            label = row_label(place, found)
            if label in seen:
                return place, label
            seen.add(label)
    except sqlite3.Error:
        return None
    finally:
        connection.set_progress_handler(None, 0)
    return None


def _table(
    live: LivePlayground,
    connection: sqlite3.Connection,
    name: str,
    key: str,
    reading: _Reading,
) -> dict[str, Any]:
    """One table's rows by their label (`key`, else their place), counted by `reading`."""
    reading.table(name)
    try:
        cursor = _labelled_rows(connection, name, key)
        columns = [d[0] for d in cursor.description][1:]
        table: dict[str, Any] = {}
        for place, (found, *values) in enumerate(cursor):
            label = row_label(place, found)
            if label in table:
                raise live.error(f"its table {name!r} {labelled_twice(label)}")
            table[label] = reading.take(name, label, columns, tuple(values))
    except sqlite3.DataError:
        raise live.error(
            f"its table {name!r} holds a value longer than {MAX_VALUE_BYTES:,} bytes"
        ) from None
    except sqlite3.Error as exc:
        raise live.error(_unreadable(exc, f"its table {name!r} cannot be read ({exc})")) from None
    return table


def _unreadable(exc: sqlite3.Error, otherwise: str) -> str:
    """What to say of `exc`: the reader's time ran out (`_bound`'s clock interrupted it), or
    `otherwise`."""
    if str(exc) == "interrupted":
        return f"its database could not be read within {READ_SECONDS:g} s"
    return otherwise


BLOB_SHOWN = 1024
"""A BLOB up to this many bytes is kept whole (`base64:…`); a longer one by its size and
hash, so that a change anywhere in it is a change of the state."""


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        if len(value) > BLOB_SHOWN:
            return {"bytes": len(value), "sha256": hashlib.sha256(value).hexdigest()}
        return "base64:" + base64.b64encode(value).decode()
    return value


def _query(connection: sqlite3.Connection, query: str) -> QueryAnswer:
    """A state criterion's query, its rows read one at a time within the database's bounds
    (rows, values, a value's length) and QUERY_SECONDS."""
    deadline = time.monotonic() + QUERY_SECONDS
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), PROGRESS_STEPS)
    rows: list[tuple[Any, ...]] = []
    cells = 0
    try:
        cursor = connection.execute(query)
        for row in cursor:
            cells += len(row)
            if len(rows) >= MAX_ROWS:
                return QueryAnswer(error=f"the query returned more than {MAX_ROWS:,} rows")
            if cells > MAX_CELLS:
                return QueryAnswer(error=f"the query returned more than {MAX_CELLS:,} values")
            rows.append(tuple(map(_json_value, row)))
    except sqlite3.Warning:
        return QueryAnswer(error="give one statement (a SELECT)")
    except sqlite3.DataError:
        return QueryAnswer(error=f"the query read a value longer than {MAX_VALUE_BYTES:,} bytes")
    except sqlite3.Error as exc:
        if time.monotonic() > deadline:
            return QueryAnswer(error=f"the query did not finish within {QUERY_SECONDS:g} s")
        return QueryAnswer(error=f"the query failed: {exc} (it may only read)")
    finally:
        connection.set_progress_handler(None, 0)
    columns = tuple(d[0] for d in cursor.description or ())
    return QueryAnswer(columns, tuple(rows))
