"""Read a playground's state, as evalward and never as the agent: bounded, links never
followed, queries read-only on a copy evalward controls.

The agent had the run to shape its playground; whatever it left there is data, never a path
evalward follows or a statement it runs for the agent. A file that became a symbolic link is
recorded as a link; the database is read by runtime/playground_database.py; the service's
state endpoint is read up to STATE_LIMIT bytes, as one JSON document. Each part is read
within bounds of what it holds, counted as it is read. Whatever cannot be read is a
PlaygroundError naming the playground: the run's error, never a pass.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evalward.errors import AgentRunError
from evalward.files.safe_files import read_text
from evalward.files.trees import TreeBounds, TreeError, walk
from evalward.http.client import HttpClient, HttpFailure
from evalward.rundata.playground_state import PlaygroundState, SnapshotMissing, canonical_size
from evalward.runtime.playground import (
    SEED_LIMIT,
    LivePlayground,
    PlaygroundError,
    check_owner,
    replace_placeholders,
    seed_path,
)
from evalward.runtime.playground_database import read_database
from evalward.runtime.process import kill_group, read_tail, spawn, tail
from evalward.text import jsontext
from evalward.text.escaping import printable

STATE_LIMIT = 8 * 1024 * 1024
"""Bytes of state read at most: the service's reply, the folder's files together."""
STATE_CHARS = 4 * STATE_LIMIT
"""Characters of the whole state (as canonical JSON) at most, counted while it is read."""
FILE_TEXT_LIMIT = 256 * 1024
"""A file larger than this is recorded by its size and hash, not its text."""
FILE_HASH_LIMIT = 64 * 1024 * 1024
"""A file larger than this is recorded by its size alone (it is not read)."""
MAX_FILES = 5000
FOLDER_BOUNDS = TreeBounds(depth=64, entries=4 * MAX_FILES, seconds=60.0)
"""How deep, how many entries (folders too) and how long its folder is read at most."""
DUMP_SECONDS = 30.0
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
        await asyncio.to_thread(read_database, live, list(queries), state, STATE_CHARS)
    part = live.source.spec.service
    if live.service is not None and part is not None:
        await _service_alive(live)
        if part.dump is not None:
            state.document["service"] = await _service_dump(live, part.dump)
        elif part.state is not None:
            state.document["service"] = await _service_state(live, part.state)
    # the text the run's record compares is made here once, when it is small enough to be
    if state.canonical_text() is None and canonical_size(state.document, STATE_CHARS) > STATE_CHARS:
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
                    found[printable(entry.path)] = {"unreadable": entry.problem}
                continue
            if len(found) >= MAX_FILES:
                raise live.error(f"its folder holds more than {MAX_FILES} files")
            found[printable(entry.path)], used = _entry(entry.name, entry.folder_fd, budget)
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
        return {"link": printable(os.readlink(name, dir_fd=dir_fd))}, 0
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
    # lazy: PyYAML costs about 10 ms of start-up, and only a YAML snapshot needs it
    import yaml

    # lazy: it imports PyYAML
    from evalward.resources import yaml12

    try:
        text = read_text(seed_path(live, path), SEED_LIMIT)
        return json.loads(text) if path.endswith(".json") else yaml12.load(text)
    except PlaygroundError as exc:
        return SnapshotMissing(str(exc))
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        return SnapshotMissing(f"the snapshot {path!r} does not load: {exc}")
