"""Provision a playground for one run, and tear it down whatever happened.

Every run (each rep, each side) gets its own: a new folder holding a copy of the files seed,
a SQLite database made from its seed, and its own service process on a port evalward picks,
seeded and waited for (`ready`). Seeds and programs come from the gate's side (`world`: the
tree the fixture's definition came from, the base commit under `gate-config: base`), so a pull
request cannot change the world its agent is judged in. In the action the folder belongs to
the agent user of the run's side and the service runs as that user, in the sandbox, with the
scratch environment every program from a checkout gets (no secret). `close` stops the
service's process group and removes the folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evalward.errors import AgentRunError
from evalward.files.safe_files import read_text
from evalward.files.trees import TreeBounds, TreeError, copy_tree, remove_tree, walk
from evalward.http.client import HttpClient, HttpFailure
from evalward.resources import yaml12
from evalward.resources.paths import OutsideRepository, repo_path
from evalward.resources.playground import Playground, ServicePart, SqlitePart
from evalward.runtime.http_agent import free_port
from evalward.runtime.port_owner import PortTaken, owned_host
from evalward.runtime.process import DEFAULT_KILL_GRACE, kill_group, limited_env, read_tail, spawn
from evalward.runtime.process import tail as tail_text
from evalward.runtime.sandbox import Sandbox

DB_NAME = "playground.sqlite"
SEED_LIMIT = 64 * 1024 * 1024
"""The largest seed or snapshot read as text (a repository's file: `safe_files`)."""
SEED_BOUNDS = TreeBounds(depth=128, entries=100_000, seconds=120.0)
"""A files seed is copied (and the copy given to the agent user) within these."""


class PlaygroundError(Exception):
    """A playground that cannot be provisioned or read: the run's error, naming it."""


@dataclass(frozen=True)
class PlaygroundSource:
    """A playground to provision: its definition, its name, and the tree it is made from."""

    name: str
    spec: Playground
    world: Path


@dataclass
class Service:
    process: asyncio.subprocess.Process
    port: int
    url: str
    logs: list[asyncio.Task[bytes]] = field(default_factory=list)
    placeholders: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    """What it was started with: its `dump` command gets the same."""

    async def stderr_tail(self, grace: float) -> str:
        if len(self.logs) < 2 or self.process.returncode is None:
            return ""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace + 1):
                lines = tail_text(await self.logs[1], 500).strip().splitlines()
                return f": {lines[-1]}" if lines else ""
        return ""


@dataclass
class LivePlayground:
    """A provisioned playground: where its parts are, and what the agent is told of them."""

    source: PlaygroundSource
    folder: Path
    sandbox: Sandbox | None
    kill_grace: float
    files: Path | None = None
    database: Path | None = None
    service: Service | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.source.name

    def error(self, what: str) -> PlaygroundError:
        return PlaygroundError(f"playground {self.name!r}: {what}")

    async def close(self) -> None:
        """Stop the service's process group and remove the folder (whatever the agent left
        in it: `files.trees`). PlaygroundError, naming what is left, when it cannot."""
        service, self.service = self.service, None
        left = ""
        if service is not None:
            left = await kill_group(service.process, self.kill_grace, sandbox=self.sandbox)
            for task in service.logs:
                task.cancel()
            await asyncio.gather(*service.logs, return_exceptions=True)
        try:
            await asyncio.to_thread(remove_tree, self.folder)
        except TreeError as exc:
            raise self.error(f"its folder could not be removed: {exc}") from None
        if left:
            raise self.error(f"its service: {left}")


async def provision(
    source: PlaygroundSource,
    *,
    env: Mapping[str, str],
    sandbox: Sandbox | None = None,
    kill_grace: float = DEFAULT_KILL_GRACE,
) -> LivePlayground:
    """A fresh playground for one run; PlaygroundError (naming it) when it cannot be made,
    with nothing left behind."""
    if sandbox is not None and sandbox.unavailable:
        raise PlaygroundError(f"playground {source.name!r}: {sandbox.unavailable}")
    where = sandbox.root if sandbox is not None and sandbox.user is not None else None
    folder = Path(tempfile.mkdtemp(prefix="evalward-playground-", dir=where))
    live = LivePlayground(source, folder, sandbox, kill_grace)
    live.env["EVALWARD_PLAYGROUND"] = source.name
    try:
        spec = source.spec
        if spec.files is not None:
            live.files = folder / "files"
            _copy_seed(live, spec.files.seed, live.files)
            live.env["EVALWARD_PLAYGROUND_DIR"] = str(live.files)
        if spec.sqlite is not None:
            live.database = folder / "db" / DB_NAME
            live.database.parent.mkdir()
            _seed_database(live, spec.sqlite, live.database)
            live.env["EVALWARD_SQLITE_PATH"] = str(live.database)
            live.env["DATABASE_URL"] = f"sqlite:///{live.database}"
        (folder / "data").mkdir()
        _hand_over(folder, sandbox)
        if spec.service is not None:
            live.service = await _start_service(live, spec.service, env)
            live.env["EVALWARD_SERVICE_URL"] = live.service.url
    except (OSError, TreeError) as exc:  # the machine's refusal: a full disk, a user it
        await _close_quietly(live)  # cannot give to
        raise live.error(f"cannot be made: {exc}") from None
    except BaseException:
        await _close_quietly(live)
        raise
    return live


async def _close_quietly(live: LivePlayground) -> None:
    """Tear down a playground on the way out of an error: that error is the one to tell."""
    with contextlib.suppress(PlaygroundError):
        await live.close()


def seed_path(live: LivePlayground, seed: str) -> Path:
    """A seed of the gate's side, which must be there and stay inside its tree."""
    try:
        path = repo_path(live.source.world, seed)
    except OutsideRepository:
        raise live.error(f"the seed {seed!r} leads outside the repository") from None
    if not path.exists():
        raise live.error(f"the seed {seed!r} is not in the repository (on the gate's side)")
    return path


def _copy_seed(live: LivePlayground, seed: str, target: Path) -> None:
    source = seed_path(live, seed)
    try:
        if source.is_dir():
            copy_tree(source, target, SEED_BOUNDS)
        else:
            target.mkdir()
            shutil.copy2(source, target / source.name)
    except (OSError, shutil.Error, TreeError) as exc:
        raise live.error(f"cannot copy the seed {seed!r}: {exc}") from None


def _seed_database(live: LivePlayground, part: SqlitePart, database: Path) -> None:
    source = seed_path(live, part.seed)
    try:
        text = read_text(source, SEED_LIMIT)
    except (OSError, UnicodeDecodeError) as exc:
        raise live.error(f"cannot read the seed {part.seed!r}: {exc}") from None
    connection = sqlite3.connect(database)
    try:
        connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)  # no other file is written
        # a scratch copy for one run: no fsync (it was a third of a run's provisioning)
        connection.execute("PRAGMA synchronous = OFF")
        connection.execute("PRAGMA journal_mode = MEMORY")
        if part.seed.endswith(".sql"):
            connection.executescript(text)
        else:
            _insert_fixtures(connection, _fixtures(live, part.seed, text))
        connection.commit()
    except sqlite3.Error as exc:
        raise live.error(f"the seed {part.seed!r} does not load: {exc}") from None
    finally:
        connection.close()


def _fixtures(live: LivePlayground, seed: str, text: str) -> dict[str, list[dict[str, Any]]]:
    try:
        data = json.loads(text) if seed.endswith(".json") else yaml12.load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise live.error(f"the seed {seed!r} does not parse: {exc}") from None
    if not isinstance(data, dict) or not all(
        isinstance(rows, list) and all(isinstance(row, dict) for row in rows)
        for rows in data.values()
    ):
        raise live.error(f"the seed {seed!r} must map each table to a list of rows (objects)")
    return data


def _insert_fixtures(
    connection: sqlite3.Connection, tables: dict[str, list[dict[str, Any]]]
) -> None:
    """Each table with the columns its rows use (`id`, when there is one, its primary key),
    then its rows."""
    for table, rows in tables.items():
        columns = list(dict.fromkeys(name for row in rows for name in row))
        if not columns:
            continue
        names = [_identifier(c) for c in columns]
        defined = [_identifier(c) + (" PRIMARY KEY" if c == "id" else "") for c in columns]
        connection.execute(f"CREATE TABLE {_identifier(table)} ({', '.join(defined)})")
        marks = ", ".join("?" for _ in columns)
        insert = f"INSERT INTO {_identifier(table)} ({', '.join(names)}) VALUES ({marks})"  # noqa: S608
        connection.executemany(
            insert, [tuple(_sql_value(row.get(c)) for c in columns) for row in rows]
        )


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_value(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, dict | list) else value


def _hand_over(folder: Path, sandbox: Sandbox | None) -> None:
    """Give the folder to the agent user of the run's side (no other user may enter it)."""
    folder.chmod(0o700)
    user = sandbox.user if sandbox is not None else None
    if user is None:
        return
    os.chown(folder, user.uid, user.gid)
    for entry in walk(folder, SEED_BOUNDS):
        os.chown(entry.name, user.uid, user.gid, dir_fd=entry.folder_fd, follow_symlinks=False)


async def _start_service(
    live: LivePlayground, part: ServicePart, env: Mapping[str, str]
) -> Service:
    port = free_port()
    seed = ""
    if part.seed:
        seed = str(seed_path(live, part.seed).relative_to(live.source.world.resolve()))
    data = str(live.folder / "data")
    values = {"{port}": str(port), "{seed}": seed, "{data}": data}
    argv = [replace_placeholders(arg, values) for arg in part.start]
    extra = {"PORT": str(port), "EVALWARD_SERVICE_SEED": seed, "EVALWARD_SERVICE_DATA": data}
    if live.database is not None:
        extra |= {k: live.env[k] for k in ("DATABASE_URL", "EVALWARD_SQLITE_PATH")}
    sandbox = live.sandbox
    own_env = limited_env(env, [], extra, sandbox=sandbox)
    try:
        process = await spawn(
            argv, cwd=live.source.world, env=own_env, stdin=False, sandbox=sandbox
        )
    except AgentRunError as exc:
        raise live.error(f"the service could not start: {exc}") from None
    logs = [
        asyncio.create_task(read_tail(process.stdout)),
        asyncio.create_task(read_tail(process.stderr)),
    ]
    url = f"http://127.0.0.1:{port}"
    own_env["EVALWARD_SERVICE_URL"] = url
    service = Service(process, port, url, logs, values, own_env)
    live.service = service
    await _wait_ready(live, service, part)
    return service


def replace_placeholders(arg: str, values: Mapping[str, str]) -> str:
    for placeholder, value in values.items():
        arg = arg.replace(placeholder, value)
    return arg


async def _wait_ready(live: LivePlayground, service: Service, part: ServicePart) -> None:
    deadline = time.monotonic() + part.ready_timeout_seconds
    url = service.url + part.ready
    client = HttpClient(timeout_seconds=part.ready_timeout_seconds)
    try:
        while True:
            if service.process.returncode is not None:
                raise live.error(
                    f"the service exited with code {service.process.returncode} before "
                    f"{part.ready} answered" + await service.stderr_tail(live.kill_grace)
                )
            with contextlib.suppress(HttpFailure):
                reply = await client.get(url, timeout_seconds=1.0)
                if reply.status < 400:
                    check_owner(live, service)
                    return
            if time.monotonic() >= deadline:
                raise live.error(
                    f"the service did not answer {part.ready} within "
                    f"{part.ready_timeout_seconds:g} s (service.readyTimeoutSeconds)"
                )
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.1):
                    await service.process.wait()
    finally:
        await client.aclose()


def check_owner(live: LivePlayground, service: Service) -> None:
    """In the action, the port must be held by the run's own user: another side's program
    that bound it first does not answer in the service's place."""
    user = live.sandbox.user if live.sandbox is not None else None
    if user is None:
        return
    try:
        owned_host(service.port, user.uid)
    except PortTaken as exc:
        raise live.error(f"the service's {exc}") from None
