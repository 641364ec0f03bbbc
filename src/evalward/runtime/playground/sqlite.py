"""A playground's `sqlite` part: a SQLite database made from a seed of the gate's side.

The seed is loaded once per job and tree into a template (`Templates`: evalward's own, out
of any agent's reach), within its bounds (`sqlite_seed.py`); each run's database is a
byte-for-byte copy of it, so every run starts alike: its state before the run is read
once, from the template, and a run whose database is still the template's bytes after it
(its agent wrote nothing) reads as the same tables, only its queries asked. Without
templates (`validate --playgrounds`) the seed is loaded into the run's database itself. Its
state is read as evalward, never as the agent (`sqlite_read.py`).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from evalward.errors import SeedError
from evalward.resources.playground import SqlitePart
from evalward.rundata.playground_state import PlaygroundState
from evalward.runtime.playground.base import (
    LivePlayground,
    PlaygroundPart,
    Templates,
    seed_text,
)
from evalward.runtime.playground.sqlite_read import KnownImage, read_database, read_known
from evalward.runtime.playground.sqlite_seed import load_seed, refused_by_the_machine
from evalward.runtime.playground.state_readers import read_off_loop

DB_NAME = "playground.sqlite"
KEPT_TEMPLATE_BYTES = 4 * 1024 * 1024
"""A template database up to this size is kept in memory and written out for each run (a
fifth of the kernel's work of copying the file); a larger one is copied from its file."""


@dataclass(frozen=True)
class Template:
    """A seed loaded once: its file and, when small, its bytes (and the tables they read as,
    once read)."""

    path: Path
    kept: KnownImage | None


class SqliteRun(PlaygroundPart[SqlitePart]):
    """The run's database: `DATABASE_URL` and `EVALWARD_SQLITE_PATH`, which a service gets
    too."""

    kind = "sqlite"
    laid_out = (DB_NAME,)
    shares_env = True

    def __init__(
        self, spec: SqlitePart, database: Path | None = None, template: Template | None = None
    ) -> None:
        super().__init__(spec)
        self.database = database
        """The run's database file (once laid out)."""
        self.template = template
        """What it was copied from, if a template."""

    def seed(self, live: LivePlayground, where: Path) -> Template:
        path = where.with_suffix(".sqlite")
        _seed_database(live, self.spec, path)
        small = path.stat().st_size <= KEPT_TEMPLATE_BYTES
        return Template(path, KnownImage(path.read_bytes()) if small else None)

    def lay_out(self, live: LivePlayground) -> dict[str, str]:
        # in the run's folder itself: a folder of its own would cost a directory made and
        # removed per run, the dearest calls of a playground on ext4
        self.database = database = live.folder / DB_NAME
        if live.templates is None:
            _seed_database(live, self.spec, database)
        else:
            self.template = template = live.templates.of(live, self)
            if template.kept is not None:
                _write_new(database, template.kept.image)
            else:
                shutil.copyfile(template.path, database)
        return {"EVALWARD_SQLITE_PATH": str(database), "DATABASE_URL": f"sqlite:///{database}"}

    async def capture(
        self, live: LivePlayground, state: PlaygroundState, queries: list[str]
    ) -> None:
        assert self.database is not None, "a laid out database"
        # reading a large database must not hold up the other runs' event loop
        known = self.template.kept if self.template is not None else None
        name = self.database.name  # directly in the playground's folder (`lay_out`, `fresh`)
        if known is not None and read_known(live, name, queries, state, known):
            return  # still the template's bytes, every answer known: no thread, no SQL
        await read_off_loop(read_database, live, name, queries, state, known)

    def fresh(self, live: LivePlayground, templates: Templates) -> SqliteRun:
        template: Template = templates.of(live, self)
        return SqliteRun(self.spec, template.path, template)


def _write_new(path: Path, image: bytes) -> None:
    """A new file holding `image`, in three system calls and no buffered file object."""
    # the mode SQLite gives a database it creates
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        left = memoryview(image)
        while left:
            left = left[os.write(fd, left) :]
    finally:
        os.close(fd)


def seed_refusal(exc: SeedError) -> str:
    """Why a seed does not load, with the part of it that did not (`the row at
    shop/seed.yaml:4`, `the statement at shop/seed.sql:2`), as a run and `validate` both say
    it: the seed's name alone leaves a file of rows to search for the one to fix."""
    return f"{exc} ({exc.where})" if exc.where else str(exc)


def _seed_database(live: LivePlayground, part: SqlitePart, database: Path) -> None:
    text = seed_text(live, part.seed)  # the side's commit's, never the workspace's
    connection = sqlite3.connect(database)
    try:
        # a scratch copy for one run: no fsync (it was a third of a run's provisioning)
        connection.execute("PRAGMA synchronous = OFF")
        connection.execute("PRAGMA journal_mode = MEMORY")
        load_seed(connection, part.seed, text)  # within its bounds: sqlite_seed.py
        connection.commit()
    except SeedError as exc:
        raise live.error(seed_refusal(exc)) from None
    except sqlite3.Error as exc:
        refused = refused_by_the_machine(connection, exc)  # written at the commit
        if refused is not None:
            raise refused from None
        raise live.error(f"the seed {part.seed!r} does not load: {exc}") from None
    finally:
        connection.close()
