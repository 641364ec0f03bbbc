"""Files someone else may have placed are read without waiting on them: a FIFO, a device, a
link or an endless file is refused at once (each case would block or flood a plain read)."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest

from evalward.errors import UnsafeFile
from evalward.files.safe_files import hash_regular, read_regular
from evalward.past.history import _load as load_history
from evalward.past.status import StatusStore
from evalward.plan.result_cache_db import ResultStore

pytestmark = pytest.mark.unit


def test_a_regular_file_is_read_within_its_bound(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"12345")
    assert read_regular(tmp_path / "f", 5) == b"12345"
    with pytest.raises(UnsafeFile, match="is larger than 4 bytes"):
        read_regular(tmp_path / "f", 4)


def test_a_file_larger_than_its_bound_is_refused_before_a_byte_is_read(tmp_path: Path) -> None:
    with (tmp_path / "sparse").open("wb") as sparse:
        sparse.truncate(1 << 40)  # a terabyte that takes no disk, and would take no end to read
    with pytest.raises(UnsafeFile, match="is larger than 1024 bytes"):
        read_regular(tmp_path / "sparse", 1024)


def test_a_file_is_hashed_whole_in_chunks_and_a_fifo_or_a_link_is_refused(tmp_path: Path) -> None:
    content = bytes(range(256)) * 10_000  # more than one chunk
    (tmp_path / "f").write_bytes(content)
    assert hash_regular(tmp_path / "f") == hashlib.sha256(content).hexdigest()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to(tmp_path / "f")
    for name, said in (("fifo", "is a FIFO"), ("link", "is a symbolic link")):
        with pytest.raises(UnsafeFile, match=said):
            hash_regular(tmp_path / name)


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: os.mkfifo(p), "is a FIFO, not a regular file"),
        (lambda p: p.symlink_to("/dev/zero"), "is a symbolic link, not a regular file"),
        (lambda p: p.mkdir(), "is a folder, not a regular file"),
    ],
)
def test_what_is_not_a_regular_file_is_refused_without_waiting(
    tmp_path: Path, make: object, said: str
) -> None:
    path = tmp_path / "x"
    make(path)  # type: ignore[operator]
    with pytest.raises(UnsafeFile, match=said):
        read_regular(path, 100)
    with pytest.raises(UnsafeFile, match="is a character device"):
        read_regular("/dev/zero", 100)


def test_a_result_cache_whose_database_is_a_fifo_is_set_aside(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "results.sqlite")
    assert ResultStore(tmp_path, create=False).get("k") is None
    store = ResultStore(tmp_path, create=True)
    store.put("k", "v")
    store.commit()
    assert store.get("k") == "v"
    assert (tmp_path / "results.sqlite.unreadable").exists()


def test_past_runs_files_that_are_fifos_count_as_none(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "suite.json")
    said = io.StringIO()
    assert load_history(tmp_path / "suite.json", "suite", said) == {
        "name": "suite",
        "history": [],
    }
    assert "set aside as suite.json.unreadable" in said.getvalue()
    (tmp_path / "status").mkdir()
    os.mkfifo(tmp_path / "status" / "suite.json")
    store = StatusStore(tmp_path / "status")
    assert store.read("suite") is None
    assert "is a FIFO, not a regular file" in store.problems[0]
