"""A program a run left behind grows a file of the playground's folder while evalward reads
it, a gigabyte at a time (a sparse file's size costs nothing): the read went on for as long
as the program did, past every bound and through SIGTERM (its thread kept the process). A
file is read no further than its size as it was opened."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from evalward.runtime.playground.files import _entry

pytestmark = pytest.mark.hostile

MIB, GIB = 1024 * 1024, 1024 * 1024 * 1024


def _grow_once_open(path: Path, start: int, stop: threading.Event) -> None:
    """Once a descriptor of this process leads to `path`, its size 1 GiB more, four times."""
    while not stop.is_set():
        for fd in os.listdir("/proc/self/fd"):
            try:
                if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                    for step in range(1, 5):
                        os.truncate(path, start + step * GIB)
                    return
            except OSError:
                continue


def test_a_file_is_read_no_further_than_its_size_as_it_was_opened(tmp_path: Path) -> None:
    path = tmp_path / "grow.bin"
    path.write_bytes(b"x" * (32 * MIB))
    stop = threading.Event()
    grower = threading.Thread(target=_grow_once_open, args=(path, 32 * MIB, stop))
    grower.start()
    folder = os.open(tmp_path, os.O_RDONLY)
    try:
        kept, _ = _entry("grow.bin", folder, 0)
    finally:
        stop.set()
        grower.join()
        os.close(folder)
    # read as it was opened, or (grown before its size was taken) recorded by its size alone
    if "sha256" in kept:
        assert kept == {"bytes": 32 * MIB, "sha256": hashlib.sha256(b"x" * (32 * MIB)).hexdigest()}
    else:
        assert kept["bytes"] > 32 * MIB, kept
    assert path.stat().st_size == 32 * MIB + 4 * GIB  # it did grow
