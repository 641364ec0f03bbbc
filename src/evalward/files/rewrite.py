"""A user's file (a fixtures file `evalward promote` edits, the .gitignore `evalward init`
adds a line to) written whole or not at all: the new content goes to a temporary file of a
name nothing else has, beside it, which is renamed over it with its mode. A write the disk
refuses (full, a file size limit) leaves the file as it was, never cut short, and no file of
the user's, whatever its name, is written over on the way."""

from __future__ import annotations

import os
import shutil
import tempfile
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
