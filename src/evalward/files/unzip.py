"""A zip archive from elsewhere unpacked into an empty folder of evalward's own, refusing
whatever could write outside it or past a bound.

Its names and kinds are hostile: an absolute name, a `..` step, a backslash, a symbolic
link, a device or a FIFO (their kind is in an entry's Unix mode), a name twice, a file that
another entry's name makes a folder, a name longer than the file system takes, more entries
or more bytes than the bounds allow. Any of them refuses the whole archive before one file
is written, so what is unpacked is either all of it or nothing read from it. Files are
created owner-only, without following a link and never over an existing one.
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from evalward.errors import UnsafeArchive, printable

CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
"""How each file is made: a new file, never through a link or over one."""
CHUNK = 1024 * 1024
NAME_BYTES = 255
"""The longest step of a path Linux's file systems take."""
PATH_BYTES = 4095
"""The longest path the kernel takes (PATH_MAX less its NUL)."""


def unzip(
    archive: bytes,
    into: Path,
    *,
    max_bytes: int,
    max_entries: int,
    keep: Callable[[PurePosixPath], bool] = lambda _: True,
) -> int:
    """Unpack `archive` into the empty folder `into`; returns the files written. Entries
    `keep` refuses are checked as every other and not written. Raises UnsafeArchive naming
    the first entry refused, or why the archive is not one."""
    try:
        entries = zipfile.ZipFile(io.BytesIO(archive)).infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise UnsafeArchive(f"not a zip archive ({printable(str(exc))[:200]})") from None
    if len(entries) > max_entries:
        raise UnsafeArchive(f"{len(entries):,} entries, more than the {max_entries:,} allowed")
    total = sum(entry.file_size for entry in entries)
    if total > max_bytes:
        raise UnsafeArchive(f"{total:,} bytes unpacked, more than the {max_bytes:,} allowed")
    names = [_checked(entry) for entry in entries]
    if len(set(names)) != len(names):
        raise UnsafeArchive("a name appears twice")
    _fits(into, entries, names)
    written = 0
    with zipfile.ZipFile(io.BytesIO(archive)) as opened:
        for entry, name in zip(entries, names, strict=True):
            if not keep(name):
                continue
            target = into.joinpath(*name.parts)
            if entry.is_dir():
                target.mkdir(mode=0o700, parents=True, exist_ok=True)
                continue
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            _write(opened, entry, target)
            written += 1
    return written


def _checked(entry: zipfile.ZipInfo) -> PurePosixPath:
    """The entry's name as a relative path of plain steps, its kind a file or a folder."""
    raw = entry.filename
    shown = printable(raw)[:200]
    name = PurePosixPath(raw.rstrip("/"))
    if (
        not raw
        or "\\" in raw
        or "\x00" in raw
        or name.is_absolute()
        or raw.startswith("/")
        or any(part in ("", ".", "..") for part in raw.rstrip("/").split("/"))
    ):
        raise UnsafeArchive(f"the entry {shown!r} is not a plain relative name")
    kind = stat.S_IFMT(entry.external_attr >> 16)
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise UnsafeArchive(f"the entry {shown!r} is not a file or a folder (mode {kind:o})")
    if kind == stat.S_IFDIR and not entry.is_dir():
        raise UnsafeArchive(f"the entry {shown!r} is a folder with a file's name")
    return name


def _fits(into: Path, entries: list[zipfile.ZipInfo], names: list[PurePosixPath]) -> None:
    """Every entry can be made under `into`: no file is also a folder on another's way (it
    would fail once files before it were written), no name too long for the file system."""
    folders = {parent for name in names for parent in name.parents}
    folders |= {name for entry, name in zip(entries, names, strict=True) if entry.is_dir()}
    for entry, name in zip(entries, names, strict=True):
        shown = printable(entry.filename)[:200]
        if not entry.is_dir() and name in folders:
            raise UnsafeArchive(f"the entry {shown!r} is a file and a folder of other entries")
        too_long = any(len(os.fsencode(part)) > NAME_BYTES for part in name.parts)
        if too_long or len(os.fsencode(into.joinpath(*name.parts))) > PATH_BYTES:
            raise UnsafeArchive(f"the entry {shown!r} is a name longer than a file system takes")


def _write(opened: zipfile.ZipFile, entry: zipfile.ZipInfo, target: Path) -> None:
    """One file, owner-only, read no further than the size its entry declares (which
    zipfile holds it to, and the bound was counted by)."""
    try:
        descriptor = os.open(target, CREATE, 0o600)
    except OSError as exc:
        raise UnsafeArchive(f"the entry {printable(entry.filename)[:200]!r}: {exc}") from None
    try:
        with os.fdopen(descriptor, "wb") as out, opened.open(entry) as source:
            while chunk := source.read(CHUNK):
                out.write(chunk)
    except (zipfile.BadZipFile, ValueError, EOFError, NotImplementedError) as exc:
        reason = printable(str(exc))[:200]
        raise UnsafeArchive(f"the entry {printable(entry.filename)[:200]!r}: {reason}") from None
