"""The result cache's database as a test reads and forges it (`evalward.plan.result_cache_db`)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
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
