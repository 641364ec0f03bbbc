"""A playground's `files` part: a folder the agent and its tools work in, a copy of a folder
(or a file) of the gate's side, and its state read back as evalward, never as the agent.

Whatever the agent left in it is data, never a path evalward follows: a file that became a
symbolic link is recorded as a link; each file's text is kept (or its size and hash), within
bounds of what the folder holds, counted as it is read.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

from evalward.errors import GitError, NotCommitted, TreeError
from evalward.files.safe_files import OPEN_SAFELY
from evalward.files.trees import TreeBounds, walk
from evalward.resources.playground import FilesPart
from evalward.rundata.playground_state import FILE_HASH_LIMIT, FILE_TEXT_LIMIT, PlaygroundState
from evalward.runtime.playground.base import (
    SEED_BOUNDS,
    STATE_LIMIT,
    LivePlayground,
    PlaygroundPart,
)
from evalward.runtime.playground.state_readers import read_off_loop
from evalward.text.escaping import printable

FOLDER_READ_LIMIT = 1024 * 1024 * 1024
"""How many bytes of its files a folder's state reads at most: past it, the run's error
(thousands of sparse files of 64 MiB cost the agent nothing to write, and minutes to hash)."""
MAX_FILES = 5000
FOLDER_BOUNDS = TreeBounds(depth=64, entries=4 * MAX_FILES, seconds=60.0)
"""How deep, how many entries (folders too) and how long its folder is read at most."""


class FilesRun(PlaygroundPart[FilesPart]):
    """The run's folder of files: `EVALWARD_PLAYGROUND_DIR`."""

    kind = "files"
    laid_out = ("files/",)

    def __init__(self, spec: FilesPart, folder: Path | None = None) -> None:
        super().__init__(spec)
        self.folder = folder
        """Where the run's copy is (once laid out)."""

    def lay_out(self, live: LivePlayground) -> dict[str, str]:
        self.folder = live.folder / "files"
        seed = self.spec.seed
        try:  # from the side's commit, never the workspace (files/committed.py)
            live.source.door.copy_out(seed, self.folder, SEED_BOUNDS)
        except NotCommitted as exc:
            raise live.error(f"the seed {seed!r} {exc.reason}") from None
        except (OSError, GitError, TreeError) as exc:
            raise live.error(f"cannot copy the seed {seed!r}: {exc}") from None
        return {"EVALWARD_PLAYGROUND_DIR": str(self.folder)}

    async def capture(
        self, live: LivePlayground, state: PlaygroundState, queries: list[str]
    ) -> None:
        assert self.folder is not None, "a laid out folder"
        # reading a large folder must not hold up the other runs' event loop
        state.document[self.spec.state_part()] = await read_off_loop(_files, live, self.folder)


def _files(live: LivePlayground, folder: Path) -> dict[str, Any]:
    """Each entry of the folder by its path: a file's text (or size and hash), a link's
    target; read within FOLDER_BOUNDS (a folder nested past them is the run's error)."""
    found: dict[str, Any] = {}
    budget, readable = STATE_LIMIT, FOLDER_READ_LIMIT
    try:
        for entry in walk(folder, FOLDER_BOUNDS, "its folder"):
            if entry.is_folder:
                if entry.problem:
                    found[printable(entry.path)] = {"unreadable": entry.problem}
                continue
            if len(found) >= MAX_FILES:
                raise live.error(f"its folder holds more than {MAX_FILES} files")
            kept, used = _entry(entry.name, entry.folder_fd, budget)
            key = printable(entry.path)
            if key in found:  # a raw byte and a control character the same, written out
                raise live.error(
                    f"two of its files are both named {key} as the state writes names out "
                    "(a byte that is not UTF-8 beside a control character): which one a "
                    "criterion reads is never the run's to choose"
                )
            found[key] = kept
            budget -= used  # never below 0: _entry keeps a file's text only within it
            hashed = isinstance(kept, dict) and "sha256" in kept
            readable -= kept["bytes"] if hashed else used  # what it read, text or hashed
            if readable < 0:
                raise live.error(
                    f"its files hold more than {FOLDER_READ_LIMIT // 2**30} GiB to read "
                    f"(at {printable(entry.path)})"
                )
    except TreeError as exc:
        raise live.error(str(exc)) from None
    except OSError as exc:
        raise live.error(f"its folder cannot be read: {exc.strerror or exc}") from None
    return found


def _entry(name: str, dir_fd: int, budget: int) -> tuple[Any, int]:
    """What the state keeps of one entry, and how much of `budget` (the bytes of text the
    state may hold) its text took."""
    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        return {"link": printable(os.readlink(name, dir_fd=dir_fd))}, 0
    if not stat.S_ISREG(info.st_mode):
        return {"special": True}, 0
    if info.st_size > FILE_HASH_LIMIT:  # a sparse file claims any size for free
        return {"bytes": info.st_size}, 0
    try:
        fd = os.open(name, OPEN_SAFELY, dir_fd=dir_fd)
    except OSError as exc:
        return {"unreadable": exc.strerror or str(exc)}, 0
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(handle.fileno())
        if not stat.S_ISREG(opened.st_mode):
            return {"special": True}, 0
        if opened.st_size > FILE_HASH_LIMIT:
            return {"bytes": opened.st_size}, 0
        # no further than its size as opened: a program the run left behind may grow it
        # while it is read, a gigabyte at a time, and the read would never end
        digest, size, head = hashlib.sha256(), 0, b""
        while size < opened.st_size and (
            chunk := handle.read(min(1024 * 1024, opened.st_size - size))
        ):
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
