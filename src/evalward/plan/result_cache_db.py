"""Result texts by key in one SQLite file: where the result cache keeps what it holds.

A run stores one result per fixture, and one file per result cost more than the rest of the
fixture's run: creating a file is the kernel's work on every disk, 0.02-0.05 ms on an idle
one and 0.3-1.3 ms of CPU on the shared benchmark machine's (bench/p6_user_suite.py). SQLite
appends each result to its write-ahead log instead (about 0.04 ms), replaces and removes one
in place, makes a second run that writes at the same time wait its turn, and never shows a
reader part of a result.

A file that is not this store's database (cut short, written by something else, or garbage)
is set aside as `<name>.unreadable` and the store starts empty: a cache can always be
rebuilt, and a run must not fail on one. Reads that fail are misses.

Nor does a run fail on a store the machine refuses (a full disk, a file size limit, a
read-only disk, another run holding the database past `BUSY_SECONDS`): its results are valid
without the cache, and stopping would throw away model calls already paid for. The store is
given up for the rest of the run: reads miss, writes are dropped, what was not committed is
rolled back, and the first refusal is kept (`refused`) for the front end to say.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import sqlite3
import weakref
from pathlib import Path

from evalward.errors import refused_write
from evalward.files.safe_files import is_regular

FILE_NAME = "results.sqlite"

BUSY_SECONDS = 30.0
"""How long a write waits for another run's write to finish."""

COMMIT_SECONDS = 0.2
"""Results stored within this long of each other are committed together: another process
sees a result at most this long after it was stored, and one that is killed outright loses
at most this long's results (a process that ends any other way commits them all)."""

_UNREADABLE = frozenset(
    {
        sqlite3.SQLITE_ERROR,  # no such table or column: not this store's schema
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_SCHEMA,
        sqlite3.SQLITE_MISMATCH,
        sqlite3.SQLITE_FORMAT,
    }
)
"""Errors that say the file is not a database this store can use, as opposed to the disk or
another run being in the way (busy, locked, full, read-only), which give the store up."""


class ResultStore:
    """Texts by key. The database is opened on first use, and created only by a store that
    writes: a read-only store over a folder that holds none reads nothing."""

    def __init__(self, directory: Path, *, create: bool) -> None:
        self.path = directory / FILE_NAME
        self._create = create
        self._db: sqlite3.Connection | None = None
        self._opened = False
        self._commit_loop: asyncio.AbstractEventLoop | None = None
        self._created = False
        self.refused: OSError | None = None
        """The first refusal that gave the store up (`_lost`): none of its later reads or
        writes reach the disk, so the run goes on without the cache and says the loss."""

    def get(self, key: str) -> str | None:
        row = self._read("SELECT result FROM results WHERE key = ?", key)
        return row[0] if row is not None and isinstance(row[0], str) else None

    def contains(self, key: str) -> bool:
        return self._read("SELECT 1 FROM results WHERE key = ?", key) is not None

    def empty(self) -> bool:
        """Whether every look-up is a miss: there is no database, or this store created it
        and has not written to it yet. A first run then makes no key to look one up."""
        return self._connection() is None or self._created

    def put(self, key: str, text: str) -> None:
        """Store `text` under `key`, replacing what it held."""
        self._write("INSERT OR REPLACE INTO results (key, result) VALUES (?, ?)", key, text)

    def remove(self, key: str) -> None:
        self._write("DELETE FROM results WHERE key = ?", key)

    def _read(self, statement: str, key: str) -> tuple[object, ...] | None:
        db = self._connection()
        if db is None or self._created:
            return None  # created empty by this store, which has not written to it yet
        try:
            row: tuple[object, ...] | None = db.execute(statement, (key,)).fetchone()
        except sqlite3.Error:
            return None
        return row

    def _write(self, statement: str, *values: str) -> None:
        for attempt in (1, 2):
            db = self._connection()
            if db is None:
                return
            try:
                if not db.in_transaction:
                    db.execute("BEGIN")
                db.execute(statement, values)
                self._created = False
                break
            except sqlite3.DatabaseError as exc:
                if attempt == 2 or exc.sqlite_errorcode not in _UNREADABLE:
                    self._give_up(_refused(self.path, exc))
                    return
                try:
                    self._set_aside()
                except OSError as moved:
                    self._give_up(moved)
                    return
        self._commit_soon()

    def _commit_soon(self) -> None:
        """Commit now outside an event loop; inside one, what the next COMMIT_SECONDS store
        goes in one commit (a commit per result cost as much as the rest of storing it)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.commit()
            return
        if self._commit_loop is not loop:  # none scheduled, or on a loop that has ended
            self._commit_loop = loop
            loop.call_later(COMMIT_SECONDS, self._scheduled_commit, loop)

    def _scheduled_commit(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._commit_loop is loop:
            # Nobody to tell from a timer: a commit that fails loses these results to the
            # cache (they run again next time), and the next store says what is wrong.
            with contextlib.suppress(OSError):
                self.commit()

    def commit(self) -> None:
        """Make what was stored visible to other processes (and safe from this one's end)."""
        self._commit_loop = None
        if self._db is not None and self._db.in_transaction:
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    self._db.rollback()
                self._give_up(_refused(self.path, exc))

    def _connection(self) -> sqlite3.Connection | None:
        if not self._opened:
            try:
                self._db = self._open()
            except OSError as exc:
                half_made = self._created and refused_write(exc)
                self._give_up(exc)
                if half_made:  # made here and cut short: no file for the next run to set aside
                    for name in ("", "-wal", "-shm", "-journal"):
                        with contextlib.suppress(OSError):
                            self.path.with_name(self.path.name + name).unlink()
            self._opened = True
        return self._db

    def _give_up(self, exc: OSError) -> None:
        """A refusal of the machine's (`_lost`) gives the store up for the rest of the run:
        what was not committed is rolled back, reads miss and writes are dropped. Any other
        error is raised: it is not the disk's, and would be a bug."""
        if not _lost(exc):
            raise exc
        self.refused = self.refused or exc
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()  # what it had not committed is rolled back
        self._db, self._opened, self._created, self._commit_loop = None, True, False, None

    def _open(self, *, retry: bool = True) -> sqlite3.Connection | None:
        if not self.path.exists():
            if not self._create:
                return None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Owner-only, as each result file was; SQLite gives its log files the same mode.
            with contextlib.suppress(FileExistsError):
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
                # Empty: until this store writes, what another run stores meanwhile is a
                # miss here, as it was a moment earlier, so nothing is looked up.
                self._created = True
        if not self._files_are_regular():
            # SQLite would open a FIFO left here and wait on it for good: never connect.
            if not self._create or not retry:
                return None
            self._set_aside()
            return self._open(retry=False)
        try:
            return self._prepare()
        except sqlite3.DatabaseError as exc:
            if not self._create:
                return None  # nothing is read from it, and it is not this store's to move
            if exc.sqlite_errorcode not in _UNREADABLE or not retry:
                raise _refused(self.path, exc) from exc
            self._set_aside()
            return self._open(retry=False)

    def _files_are_regular(self) -> bool:
        """The database and each log beside it that exists is a regular file (not a link,
        FIFO or device a restored cache may hold)."""
        logs = [Path(f"{self.path}{log}") for log in ("-wal", "-shm", "-journal")]
        return all(is_regular(path) or not os.path.lexists(path) for path in [self.path, *logs])

    def _prepare(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None)
        try:
            # A database from a restored cache is data, never code for it to run.
            db.execute("PRAGMA trusted_schema = OFF")
            # Never flushed to disk: a cache that a crash of the machine damages is set aside
            # and rebuilt, and flushing cost a run more than storing its results (creating
            # the table and the log with flushes took 2-40 ms of the shared benchmark
            # machine's start-up, 0.5 ms without). A setting of this connection only: it
            # changes nothing in the file, so it comes before anything is written to it.
            db.execute("PRAGMA synchronous = OFF")
            tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
            if not tables and self._create:
                db.execute(
                    "CREATE TABLE IF NOT EXISTS results "
                    "(key TEXT PRIMARY KEY, result TEXT NOT NULL)"
                )
            db.execute("SELECT key, result FROM results LIMIT 0")  # the schema is ours
            if self._create:  # changed only once it is known to be this store's
                db.execute("PRAGMA journal_mode = WAL")
        except BaseException:
            db.close()
            raise
        weakref.finalize(self, _close, db)
        return db

    def _set_aside(self) -> None:
        """Move an unusable database out of the way, with the logs that belong to it."""
        if self._db is not None:
            self._db.close()
        self._db, self._opened, self._created = None, False, False
        with contextlib.suppress(FileNotFoundError):
            self.path.replace(self.path.with_name(self.path.name + ".unreadable"))
        for log in ("-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                self.path.with_name(self.path.name + log).unlink()


def _refused(path: Path, exc: sqlite3.Error) -> OSError:
    """SQLite's refusal as the OSError it stands for (a full disk is ENOSPC), naming the
    database, so it is said as any other refused write is (`errors.why_refused`)."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    number = _ERRNO_OF.get(code, errno.EIO)
    return OSError(number, str(exc), str(path))


def _lost(exc: OSError) -> bool:
    """Whether `exc` costs the run its result cache and nothing else: the disk's refusal
    (`errors.refused_write`), or another run holding the database past `BUSY_SECONDS`
    (EBUSY). A wait that long is a run stuck with its write open, not one storing a result
    (a few milliseconds): waiting as long again on every later result would cost the run
    far more than its cache saves, and stopping would lose its paid-for runs."""
    return refused_write(exc) or exc.errno == errno.EBUSY


_ERRNO_OF = {
    sqlite3.SQLITE_FULL: errno.ENOSPC,
    sqlite3.SQLITE_READONLY: errno.EROFS,
    sqlite3.SQLITE_BUSY: errno.EBUSY,
    sqlite3.SQLITE_LOCKED: errno.EBUSY,
    sqlite3.SQLITE_PERM: errno.EPERM,
    sqlite3.SQLITE_CANTOPEN: errno.EACCES,
}
"""The errno of an SQLite result code; any other (its I/O errors first) is EIO."""


def _close(db: sqlite3.Connection) -> None:
    """At the store's end (at the latest, the process's): what it stored is committed."""
    with contextlib.suppress(sqlite3.Error):
        if db.in_transaction:
            db.execute("COMMIT")
    db.close()
