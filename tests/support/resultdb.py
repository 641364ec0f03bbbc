"""The result cache's database as a test reads and forges it (`evalward.plan.result_cache_db`)."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from evalward.plan.result_cache_db import FILE_NAME


def database(cache: Path) -> Path:
    """Where the result cache under `cache` (e.g. `.evalward/cache`) keeps its results."""
    return cache / "results" / FILE_NAME


def stored(cache: Path) -> dict[str, dict[str, Any]]:
    """Every stored result by key, parsed; {} when the cache holds no database."""
    path = database(cache)
    if not path.exists():
        return {}
    with contextlib.closing(sqlite3.connect(path)) as db:
        try:
            rows = db.execute("SELECT key, result FROM results").fetchall()
        except sqlite3.OperationalError:  # read while the run is still creating it
            return {}
    return {key: json.loads(result) for key, result in rows}


def store(cache: Path, results: dict[str, dict[str, Any]]) -> None:
    """Write `results` by key over what the database held, as a forger would."""
    with contextlib.closing(sqlite3.connect(database(cache))) as db, db:
        db.executemany(
            "INSERT OR REPLACE INTO results (key, result) VALUES (?, ?)",
            [(key, json.dumps(result)) for key, result in results.items()],
        )


def log_past(cache: Path, size: int) -> None:
    """A result cache under `cache` whose write-ahead log already holds more than `size`
    bytes of results no run looks up, as a run killed before its last checkpoint leaves it:
    the database reads as ever, and what the next run stores is appended past `size`, so a
    file size limit of `size` refuses every write to it (as a full disk would) and no other
    file of the run's."""
    path = database(cache)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        made = Path(scratch) / FILE_NAME
        with contextlib.closing(sqlite3.connect(made, isolation_level=None)) as db:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA wal_autocheckpoint = 0")  # it all stays in the log
            db.execute("CREATE TABLE results (key TEXT PRIMARY KEY, result TEXT NOT NULL)")
            log, count = Path(f"{made}-wal"), 0
            while not log.exists() or log.stat().st_size <= size:
                db.execute(
                    "INSERT INTO results VALUES (?, ?)", (f"unread-{count}", json.dumps("x" * 4000))
                )
                count += 1
            # copied while the connection is open: its close would check the log in and end it
            for suffix in ("", "-wal"):
                shutil.copyfile(f"{made}{suffix}", f"{path}{suffix}")
