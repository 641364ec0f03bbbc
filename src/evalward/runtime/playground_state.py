"""Read a playground's state, as evalward and never as the agent: bounded, links never
followed, queries read-only on a copy evalward controls.

The agent had the run to shape its playground; whatever it left there is data, never a path
evalward follows or a statement it runs for the agent. A file that became a symbolic link is
recorded as a link; the database is copied (no link followed, at most DB_LIMIT bytes) into a
folder of evalward's own and queried there with writes refused and a time limit; the
service's state endpoint is read up to STATE_LIMIT bytes. Whatever cannot be read is a
PlaygroundError naming the playground: the run's error, never a pass.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from evalward.errors import AgentRunError
from evalward.files.safe_files import read_text
from evalward.files.trees import TreeBounds, TreeError, walk
from evalward.http.client import HttpClient, HttpFailure
from evalward.resources import yaml12
from evalward.rundata.playground_state import (
    PlaygroundState,
    QueryAnswer,
    SnapshotMissing,
    canonical_size,
)
from evalward.runtime.playground import (
    SEED_LIMIT,
    LivePlayground,
    PlaygroundError,
    check_owner,
    replace_placeholders,
    seed_path,
)
from evalward.runtime.process import kill_group, read_tail, spawn, tail
from evalward.text import jsontext

STATE_LIMIT = 8 * 1024 * 1024
"""Bytes of state read at most: the service's reply, the folder's files together."""
STATE_CHARS = 4 * STATE_LIMIT
"""Characters of the whole state (as canonical JSON) at most, counted while it is read."""
DB_LIMIT = 256 * 1024 * 1024
MAX_VALUE_BYTES = 1024 * 1024
"""The longest text or blob the database may hold in one value (SQLite refuses to read a
longer one: SQLITE_LIMIT_LENGTH), so no single value is read into memory whole."""
MAX_CELLS = 500_000
"""Values (columns × rows, tables and rows counted too) read at most from the database, and
from each query's answer."""
FILE_TEXT_LIMIT = 256 * 1024
"""A file larger than this is recorded by its size and hash, not its text."""
FILE_HASH_LIMIT = 64 * 1024 * 1024
"""A file larger than this is recorded by its size alone (it is not read)."""
MAX_FILES = 5000
FOLDER_BOUNDS = TreeBounds(depth=64, entries=4 * MAX_FILES, seconds=60.0)
"""How deep, how many entries (folders too) and how long its folder is read at most."""
MAX_ROWS = 100_000
QUERY_SECONDS = 10.0
DUMP_SECONDS = 30.0
_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
_NOFOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK


async def capture(
    live: LivePlayground, queries: Iterable[str] = (), snapshots: Iterable[str] = ()
) -> PlaygroundState:
    """The playground's state now, and the answers to `queries` and the `snapshots` files
    (of the gate's side) that state criteria need."""
    state = PlaygroundState(live.name)
    # reading a large folder or database must not hold up the other runs' event loop
    if live.files is not None:
        state.document["files"] = await asyncio.to_thread(_files, live, live.files)
    if live.database is not None:
        await asyncio.to_thread(_read_database, live, live.database, list(queries), state)
    part = live.source.spec.service
    if live.service is not None and part is not None:
        await _service_alive(live)
        if part.dump is not None:
            state.document["service"] = await _service_dump(live, part.dump)
        elif part.state is not None:
            state.document["service"] = await _service_state(live, part.state)
    if canonical_size(state.document, STATE_CHARS) > STATE_CHARS:
        raise live.error(f"its state is larger than {STATE_CHARS:,} characters")
    for path in snapshots:
        state.snapshots[path] = _snapshot(live, path)
    return state


def _files(live: LivePlayground, folder: Path) -> dict[str, Any]:
    """Each entry of the folder by its path: a file's text (or size and hash), a link's
    target; read within FOLDER_BOUNDS (a folder nested past them is the run's error)."""
    found: dict[str, Any] = {}
    budget = STATE_LIMIT
    try:
        for entry in walk(folder, FOLDER_BOUNDS, "its folder"):
            if entry.is_folder:
                if entry.problem:
                    found[entry.path] = {"unreadable": entry.problem}
                continue
            if len(found) >= MAX_FILES:
                raise live.error(f"its folder holds more than {MAX_FILES} files")
            found[entry.path], used = _entry(entry.name, entry.folder_fd, budget)
            budget -= used
            if budget < 0:
                raise live.error(f"its folder holds more than {STATE_LIMIT:,} bytes of files")
    except TreeError as exc:
        raise live.error(str(exc)) from None
    except OSError as exc:
        raise live.error(f"its folder cannot be read: {exc.strerror or exc}") from None
    return found


def _entry(name: str, dir_fd: int, budget: int) -> tuple[Any, int]:
    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        return {"link": os.readlink(name, dir_fd=dir_fd)}, 0
    if not stat.S_ISREG(info.st_mode):
        return {"special": True}, 0
    if info.st_size > FILE_HASH_LIMIT:  # a sparse file claims any size for free
        return {"bytes": info.st_size}, 0
    try:
        fd = os.open(name, _NOFOLLOW, dir_fd=dir_fd)
    except OSError as exc:
        return {"unreadable": exc.strerror or str(exc)}, 0
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return {"special": True}, 0
        digest, size, head = hashlib.sha256(), 0, b""
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
            if size < FILE_TEXT_LIMIT:
                head += chunk[: FILE_TEXT_LIMIT - size]
            size += len(chunk)
    if size <= min(FILE_TEXT_LIMIT, budget):
        try:
            return head.decode("utf-8"), size
        except UnicodeDecodeError:
            pass
    return {"bytes": size, "sha256": digest.hexdigest()}, 0


def _read_database(
    live: LivePlayground, database: Path, queries: list[str], state: PlaygroundState
) -> None:
    private = Path(tempfile.mkdtemp(prefix="evalward-state-"))
    try:
        copy = private / "copy.sqlite"
        folder = database.parent.relative_to(live.folder)
        _copy_nofollow(live, (*folder.parts, database.name), copy, required=True)
        wal = (*folder.parts, database.name + "-wal")
        _copy_nofollow(live, wal, copy.with_name(copy.name + "-wal"), required=False)
        connection, schema = _open_read_only(live, copy)
        try:
            state.document["db"] = _tables(live, connection, schema)
            for query in queries:
                state.queries[query] = _query(connection, query)
        finally:
            connection.close()
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _copy_nofollow(
    live: LivePlayground, parts: tuple[str, ...], target: Path, *, required: bool
) -> None:
    """Copy a file of the playground's folder, no link followed on the way (a folder the
    agent turned into a link leads nowhere), at most DB_LIMIT bytes."""
    try:
        fd = _open_under(live.folder, parts)
    except FileNotFoundError:
        if not required:
            return
        raise live.error("its database is gone") from None
    except OSError as exc:
        raise live.error(f"its database cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle, target.open("wb") as out:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise live.error("its database is no longer a regular file")
        if info.st_size > DB_LIMIT:
            raise live.error(f"its database grew past {DB_LIMIT:,} bytes")
        copied = 0
        while chunk := handle.read(1024 * 1024):
            copied += len(chunk)
            if copied > DB_LIMIT:
                raise live.error(f"its database grew past {DB_LIMIT:,} bytes")
            out.write(chunk)


def _open_under(root: Path, parts: tuple[str, ...]) -> int:
    """A file descriptor of root/parts…, every component opened without following a link."""
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        return os.open(parts[-1], _NOFOLLOW, dir_fd=folder)
    finally:
        os.close(folder)


def _open_read_only(
    live: LivePlayground, copy: Path
) -> tuple[sqlite3.Connection, list[tuple[str, list[str]]]]:
    """The copy, opened so that nothing but reading is allowed, and its tables with their
    primary keys."""
    connection = sqlite3.connect(copy)
    try:
        connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        connection.execute("PRAGMA trusted_schema = OFF")
        check = connection.execute("PRAGMA integrity_check(1)").fetchone()
        connection.execute("PRAGMA query_only = ON")
        if check is None or check[0] != "ok":
            raise sqlite3.DatabaseError(check[0] if check else "no answer")
        names = connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        ).fetchall()
        schema = []
        for (name,) in names:
            info = connection.execute("SELECT name, pk FROM pragma_table_info(?)", (name,))
            schema.append((str(name), [str(column) for column, pk in info.fetchall() if pk]))
    except sqlite3.Error as exc:
        connection.close()
        raise live.error(f"its database is corrupt ({exc})") from None
    connection.set_authorizer(_read_only)
    return connection, schema


def _read_only(action: int, *_: object) -> int:
    return sqlite3.SQLITE_OK if action in _ALLOWED else sqlite3.SQLITE_DENY


class _Reading:
    """What reading the database has taken so far, against its bounds: values (`MAX_CELLS`)
    and characters (`STATE_CHARS`), counted as each row arrives, so a database never takes
    more memory than its bounds allow before it is refused."""

    def __init__(self, live: LivePlayground) -> None:
        self.live = live
        self.cells = MAX_CELLS
        self.chars = STATE_CHARS
        self.rows = MAX_ROWS

    def table(self, name: str) -> None:
        self.cells -= 1
        self.chars -= len(name) + 8
        self._check(name)

    def take(
        self, where: str, label: str, columns: list[str], values: tuple[Any, ...]
    ) -> dict[str, Any]:
        """One row, as the state keeps it."""
        self.rows -= 1
        self.cells -= len(values) + 1
        self.chars -= len(label) + 8
        if self.rows < 0:
            raise self.live.error(f"its database holds more than {MAX_ROWS:,} rows")
        self._check(where)
        row = {}
        for column, value in zip(columns, values, strict=True):
            row[column] = kept = _json_value(value)
            self.chars -= len(column) + _chars(kept) + 8
        self._check(where)
        return row

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


def _chars(value: Any) -> int:
    """About how many characters a value takes in the state's JSON."""
    return len(value) if isinstance(value, str) else 24


def _tables(
    live: LivePlayground, connection: sqlite3.Connection, schema: list[tuple[str, list[str]]]
) -> dict[str, Any]:
    """Each table's rows by key: its one-column primary key, else its rowid, else its place.
    Rows are read one at a time and counted as they come (`_Reading`)."""
    tables: dict[str, Any] = {}
    reading = _Reading(live)
    for name, keys in schema:
        table_name = identifier(name)
        key = identifier(keys[0]) if len(keys) == 1 else "rowid"
        reading.table(name)
        try:
            try:
                cursor = connection.execute(f"SELECT {key} AS k, * FROM {table_name}")  # noqa: S608
            except sqlite3.Error:  # a table WITHOUT ROWID and a key of several columns
                cursor = connection.execute(f"SELECT NULL AS k, * FROM {table_name}")  # noqa: S608
            columns = [d[0] for d in cursor.description][1:]
            table: dict[str, Any] = {}
            for place, (found, *values) in enumerate(cursor):
                label = str(place) if found is None else str(found)
                table[label] = reading.take(name, label, columns, tuple(values))
        except sqlite3.DataError:
            raise live.error(
                f"its table {name!r} holds a value longer than {MAX_VALUE_BYTES:,} bytes"
            ) from None
        except sqlite3.Error as exc:
            raise live.error(f"its table {name!r} cannot be read ({exc})") from None
        tables[name] = table
    return tables


def identifier(name: str) -> str:
    """A name quoted as an SQL identifier, whatever it holds."""
    return '"' + name.replace('"', '""') + '"'


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return "base64:" + base64.b64encode(value[:1024]).decode()
    return value


def _query(connection: sqlite3.Connection, query: str) -> QueryAnswer:
    """A state criterion's query, its rows read one at a time within the database's bounds
    (rows, values, a value's length) and QUERY_SECONDS."""
    deadline = time.monotonic() + QUERY_SECONDS
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
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


async def _service_alive(live: LivePlayground) -> None:
    service = live.service
    assert service is not None
    if service.process.returncode is not None:
        raise live.error(
            f"the service exited with code {service.process.returncode} during the run"
            + await service.stderr_tail(live.kill_grace)
        )
    check_owner(live, service)


async def _service_state(live: LivePlayground, path: str) -> Any:
    service = live.service
    assert service is not None
    client = HttpClient(timeout_seconds=30, max_reply_bytes=STATE_LIMIT)
    try:
        reply = await client.get(service.url + path)
    except HttpFailure as exc:
        raise live.error(f"its state endpoint {path} did not answer: {exc}") from None
    finally:
        await client.aclose()
    if reply.status >= 300:
        raise live.error(f"its state endpoint {path} answered HTTP {reply.status}")
    return _state_json(live, reply.body, f"its state endpoint {path}")


async def _service_dump(live: LivePlayground, command: list[str]) -> Any:
    """The service's state as its `dump` command prints it: run like the service (the same
    user, environment and placeholders), its output read up to STATE_LIMIT bytes."""
    service = live.service
    assert service is not None
    argv = [replace_placeholders(arg, service.placeholders) for arg in command]
    try:
        process = await spawn(
            argv, cwd=live.source.world, env=service.env, stdin=False, sandbox=live.sandbox
        )
    except AgentRunError as exc:
        raise live.error(f"its state dump could not start: {exc}") from None
    errors = asyncio.create_task(read_tail(process.stderr, 2000))
    try:
        async with asyncio.timeout(DUMP_SECONDS):
            output = await _read_bounded(live, process.stdout)
            code = await process.wait()
    except TimeoutError:
        raise live.error(f"its state dump did not finish within {DUMP_SECONDS:g} s") from None
    finally:
        left = await kill_group(process, live.kill_grace, sandbox=live.sandbox)
    if left:
        raise live.error(f"its state dump: {left}")
    if code != 0:
        said = tail(await errors, 300).strip().splitlines()
        raise live.error(
            f"its state dump exited with code {code}" + (f": {said[-1]}" if said else "")
        )
    errors.cancel()
    return _state_json(live, output, "its state dump")


def _state_json(live: LivePlayground, raw: bytes, source: str) -> Any:
    """The service's state: one JSON document, nested at most AGENT_DEPTH deep (what the
    agent stored in the service shapes it), no key given twice (an agent's text spliced
    into it could add a second `"status"`)."""
    try:
        return jsontext.loads(raw, max_depth=jsontext.AGENT_DEPTH, unique_keys=True)
    except jsontext.DuplicateKey as exc:
        raise live.error(f"{source} is ambiguous: {exc}") from None
    except ValueError as exc:
        raise live.error(f"{source} did not give one JSON document ({exc})") from None


async def _read_bounded(live: LivePlayground, stream: asyncio.StreamReader | None) -> bytes:
    kept = bytearray()
    while stream is not None and (chunk := await stream.read(65536)):
        kept.extend(chunk)
        if len(kept) > STATE_LIMIT:
            raise live.error(f"its state dump is larger than {STATE_LIMIT:,} bytes")
    return bytes(kept)


def _snapshot(live: LivePlayground, path: str) -> Any:
    try:
        text = read_text(seed_path(live, path), SEED_LIMIT)
        return json.loads(text) if path.endswith(".json") else yaml12.load(text)
    except PlaygroundError as exc:
        return SnapshotMissing(str(exc))
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        return SnapshotMissing(f"the snapshot {path!r} does not load: {exc}")
