"""Peak memory of reading a playground's SQLite state: the worst databases an agent can leave
inside the limits of runtime/playground_database.py and runtime/playground_state.py, and
just past them.

Each database is read in a fresh process, as a run's final state is (the copy, the integrity
check, every table, the run record with its diff from an empty initial state); the process's
peak RSS (VmHWM, reset as it starts) is reported, and what the same process takes without
reading any (interpreter and imports). So is a service's state of the most bytes it may
answer, in the shapes that take the most memory once parsed. The figures go to docs/benchmarks.md.

    python bench/playground_state_memory.py
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from evalward.runtime.playground.base import STATE_CHARS, STATE_LIMIT
from evalward.runtime.playground.sqlite_read import MAX_CELLS, MAX_ROWS, MAX_VALUE_BYTES

READ = r"""
import asyncio, json, sys, time
from pathlib import Path
from evalward.resources.playground import Playground
from evalward.rundata.playground_state import PlaygroundRun, PlaygroundState
from evalward.runtime.playground.base import LivePlayground, PlaygroundSource
from evalward.errors import PlaygroundError
from evalward.runtime.playground.sqlite import SqliteRun
from evalward.runtime.playground.state import capture

def peak_kib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

folder = Path(sys.argv[1])
Path("/proc/self/clear_refs").write_text("5")  # the peak so far is the parent's: start afresh
before = peak_kib()
if sys.argv[2] == "service":
    from evalward.runtime.playground.base import STATE_CHARS
    from evalward.runtime.playground.service import state_json
    from evalward.rundata.playground_state import json_size
    spec = Playground.model_validate({"sqlite": {"seed": "seed.sql"}})
    live = LivePlayground(PlaygroundSource("bench", spec, folder), folder, None, 1.0)
    started = time.monotonic()
    try:
        final = PlaygroundState("bench")
        final.document["service"] = state_json(live, (folder / "state.json").read_bytes(), "it")
        if json_size(final.document) > STATE_CHARS:
            raise PlaygroundError("x: its state is larger than the characters bound")
        PlaygroundRun(PlaygroundState("bench"), final).record()
        outcome = "read"
    except PlaygroundError as exc:
        outcome = "refused: " + str(exc).split(": ", 1)[1]
    outcome += f" in {time.monotonic() - started:.1f} s"
elif sys.argv[2] == "read":
    spec = Playground.model_validate({"sqlite": {"seed": "seed.sql"}})
    parts = [SqliteRun(spec.sqlite, folder / "db" / "playground.sqlite")]
    live = LivePlayground(PlaygroundSource("bench", spec, folder), folder, None, 1.0, parts)
    started = time.monotonic()
    async def read():
        # the state stays inside: asyncio.run's main task's result is repr'd at its end
        final = await capture(live)
        PlaygroundRun(PlaygroundState("bench"), final).record()
        return "read"

    try:
        outcome = asyncio.run(read())
    except PlaygroundError as exc:
        outcome = "refused: " + str(exc).split(": ", 1)[1]
    outcome += f" in {time.monotonic() - started:.1f} s"
else:
    outcome = "not read"
peak = peak_kib()
print(json.dumps({"outcome": outcome, "before": before, "peak": peak}))
"""


def table(db: sqlite3.Connection, name: str, columns: int, rows: int, value: object) -> None:
    names = ", ".join(f"c{i}" for i in range(columns))
    db.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, {names})")
    marks = ", ".join("?" for _ in range(columns))
    insert = f"INSERT INTO {name} ({names}) VALUES ({marks})"
    db.executemany(insert, ([value] * columns for _ in range(rows)))


def cells(columns: int) -> Callable[[sqlite3.Connection], None]:
    """NULLs in `columns` columns (the key one of them), as many as the bounds allow: a row
    counts its columns and its key."""
    rows = min(MAX_ROWS, MAX_CELLS // (columns + 1)) - 2
    return lambda db: table(db, "t", columns - 1, rows, None)


def long_values(db: sqlite3.Connection) -> None:
    """Texts of the longest length a value may have, in characters Python keeps in 4 bytes
    (so each takes 1 MiB of memory), as many as the characters bound allows."""
    count = STATE_CHARS // (MAX_VALUE_BYTES // 4 + 40) - 2
    table(db, "t", 1, count, "\U0001f600" * (MAX_VALUE_BYTES // 4))


def many_rows(db: sqlite3.Connection) -> None:
    """The most rows, each with a short text in a few columns."""
    table(db, "t", 3, MAX_ROWS - 10, "a" * 40)


def many_tables(db: sqlite3.Connection) -> None:
    for index in range(5_000):
        db.execute(f"CREATE TABLE t{index} (c)")


def too_long_value(db: sqlite3.Connection) -> None:
    table(db, "t", 1, 1, "x" * (MAX_VALUE_BYTES + 1))


def too_many_nulls(db: sqlite3.Connection) -> None:
    """The database of the report that first measured this: 1,999 columns × 4,000 rows of
    NULL (8 MB on disk), 1.17 GiB read before it was refused."""
    table(db, "t", 1998, 4000, None)


CASES: dict[str, Callable[[sqlite3.Connection], None]] = {
    "NULLs, 1,999 columns (inside)": cells(1999),
    "NULLs, 5 columns (inside)": cells(5),
    "1 MiB texts (inside)": long_values,
    "100,000 rows (inside)": many_rows,
    "5,000 empty tables (inside)": many_tables,
    "a text of 1 MiB + 1 byte (past)": too_long_value,
    "1,999 × 4,000 NULLs (past)": too_many_nulls,
}


def empty_objects() -> bytes:
    return b"[" + b"{}," * (STATE_LIMIT // 3 - 2) + b"{}]"


def deep_numbers() -> bytes:
    return b"[" * 63 + b"0," * (STATE_LIMIT // 2 - 100) + b"0" + b"]" * 63


SERVICE_STATES: dict[str, Callable[[], bytes]] = {
    "service state: 8 MB of empty objects (inside)": empty_objects,
    "service state: 8 MB of numbers 64 deep (inside)": deep_numbers,
}
"""What a service's state endpoint or dump may answer: at most STATE_LIMIT bytes."""


def measure(folder: Path, how: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", READ, str(folder), how],
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, object] = json.loads(done.stdout)
    return found


def main(only: str | None) -> None:
    with tempfile.TemporaryDirectory(prefix="evalward-bench-state-") as scratch:
        base = measure(Path(scratch), "imports only")
        print(f"interpreter and imports: {int(base['peak']) / 1024:.0f} MiB")  # type: ignore[call-overload]
        for name, build in CASES.items():
            if only and only not in name:
                continue
            folder = Path(scratch) / f"case-{len(name)}-{abs(hash(name))}"
            (folder / "db").mkdir(parents=True)
            path = folder / "db" / "playground.sqlite"
            db = sqlite3.connect(path)
            db.execute("PRAGMA synchronous = OFF")
            build(db)
            db.commit()
            db.close()
            found = measure(folder, "read")
            size = path.stat().st_size / 1024 / 1024
            peak = int(found["peak"]) / 1024  # type: ignore[call-overload]
            print(f"{name}: {size:.1f} MB on disk, peak RSS {peak:.0f} MiB, {found['outcome']}")
            path.unlink()
        for name, make in SERVICE_STATES.items():
            if only and only not in name:
                continue
            raw = make()
            folder = Path(scratch) / f"service-{abs(hash(name))}"
            folder.mkdir()
            (folder / "state.json").write_bytes(raw)
            found = measure(folder, "service")
            peak = int(found["peak"]) / 1024  # type: ignore[call-overload]
            print(f"{name}: peak RSS {peak:.0f} MiB, {found['outcome']}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", help="run the cases whose name holds this text")
    main(parser.parse_args().only)
