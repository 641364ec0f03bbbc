"""Reading a file someone else may have placed: an environment an install built, a kept cache
entry, what an agent wrote. Such a path may be a FIFO (`open()` waits for a writer that never
comes, and no timeout or signal handler runs while it waits), a device that never ends, or a
link to either. Every read here opens without following a final link and without waiting
(O_NOFOLLOW, O_NONBLOCK), refuses what `fstat` says is not a regular file, and reads at most
a bound.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path

from evalward.errors import UnsafeFile

OPEN_SAFELY = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
"""How every file of uncertain origin is opened."""

KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a folder",
    stat.S_IFLNK: "a symbolic link",
}


def kind_of(mode: int) -> str:
    """What a file is, in words, from its `st_mode`."""
    return KINDS.get(stat.S_IFMT(mode), "a regular file" if stat.S_ISREG(mode) else "special")


def open_regular(path: Path | str, *, dir_fd: int | None = None) -> int:
    """A read-only descriptor of the regular file at `path` (a name in `dir_fd` when given).
    UnsafeFile when it is a link, a FIFO, a device, a socket or a folder."""
    try:
        fd = os.open(path, OPEN_SAFELY, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW on a final link
            raise UnsafeFile(path, "is a symbolic link, not a regular file") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UnsafeFile(path, f"is {kind_of(mode)}, not a regular file")
    return fd


def read_fd(fd: int, limit: int, shown: Path | str) -> bytes:
    """At most `limit` bytes from `fd` (UnsafeFile when there are more)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = os.read(fd, min(1 << 20, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise UnsafeFile(shown, f"is larger than {limit} bytes")


def read_regular(path: Path | str, limit: int) -> bytes:
    """The content of the regular file at `path`, at most `limit` bytes (see `open_regular`)."""
    fd = open_regular(path)
    try:
        if os.fstat(fd).st_size > limit:  # refused before a byte is read
            raise UnsafeFile(path, f"is larger than {limit} bytes")
        return read_fd(fd, limit, path)
    finally:
        os.close(fd)


def read_text(path: Path | str, limit: int) -> str:
    """`read_regular`, decoded as UTF-8 (ValueError when it is not)."""
    return read_regular(path, limit).decode("utf-8")


def hash_regular(path: Path | str) -> str:
    """The SHA-256 of the regular file at `path` (see `open_regular`), read in chunks: a
    file of any size is hashed whole in bounded memory, so a change anywhere in it shows."""
    with os.fdopen(open_regular(path), "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def blob_id(path: Path | str, object_format: str, *, dir_fd: int | None = None) -> str:
    """The id git gives the regular file at `path` as a blob (`git hash-object
    --no-filters`; `object_format` is the repository's, "sha1" or "sha256"), read in
    chunks (see `open_regular`). UnsafeFile when its size changes while it is read.

    Hashed here rather than asked of `git hash-object --stdin-paths`: the file is opened
    without following links and read once through the descriptor the walk already holds,
    so what is hashed is what `copy_out` copies; and it costs no process (1,000 files of
    4 KiB: 11 ms here against 22 ms for git, the same ids)."""
    fd = open_regular(path, dir_fd=dir_fd)
    try:
        size = os.fstat(fd).st_size
        digest = hashlib.new(object_format, b"blob %d\0" % size)
        read = 0
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
            read += len(chunk)
        if read != size:
            raise UnsafeFile(path, "changed while it was read")
        return digest.hexdigest()
    finally:
        os.close(fd)


def blob_id_of(content: bytes, object_format: str) -> str:
    """The id git gives `content` as a blob (a link's target, say)."""
    return hashlib.new(object_format, b"blob %d\0%s" % (len(content), content)).hexdigest()


def is_regular(path: Path | str) -> bool:
    """Whether `path` itself (not what a link points to) is a regular file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
