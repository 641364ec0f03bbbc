"""A user's file (a fixtures file `evalward promote` edits, the .gitignore `evalward init`
adds a line to) written whole or not at all: the new content goes to a temporary file of a
name nothing else has, beside it, which is renamed over it with its mode. A write the disk
refuses (full, a file size limit) leaves the file as it was, never cut short, and no file of
the user's, whatever its name, is written over on the way. New files a command makes
(`create_all`) are likewise all or none."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path


def rewrite(path: Path, data: bytes) -> None:
    """Make `data` the content of `path` (through a link, the file it names), keeping its
    mode, or the mode a new file gets; an OSError leaves `path` and its folder as they were."""
    target = path.resolve() if path.is_symlink() else path
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    partial = Path(name)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        if target.exists():
            shutil.copymode(target, partial)
        else:  # mkstemp makes it 0600, whatever the umask says a new file gets
            partial.chmod(0o666 & ~_umask())
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def _umask() -> int:
    """The process's umask, read by setting it and setting it back."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


class NotCreated(Exception):
    """`create_all` could not make `path` (`error` says why); none of its files is left."""

    def __init__(self, path: Path, error: OSError) -> None:
        super().__init__(f"{path}: {error}")
        self.path, self.error = path, error


def create_all(texts: Mapping[Path, str]) -> list[Path]:
    """Make each new file of `texts` (its folders too), all or none: one that is there
    already (never written over) or a write the disk refuses (a file cut short) takes back
    those written before it, which would make the command that wrote them refuse next time,
    and raises `NotCreated`. Returns the files, for a later step's failure to take back."""
    written: list[Path] = []
    for path, text in texts.items():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("x", encoding="utf-8") as file:
                written.append(path)
                file.write(text)
        except OSError as exc:
            for done in written:
                done.unlink(missing_ok=True)
            raise NotCreated(path, exc) from None
    return written
