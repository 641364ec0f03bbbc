"""Files someone else may have placed are read without waiting on them: a FIFO, a device, a
link or an endless file is refused at once (each case would block or flood a plain read)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalward.files.safe_files import UnsafeFile, read_regular
from evalward.past.history import _load as load_history
from evalward.past.status import StatusStore
from evalward.stages.result_cache_db import ResultStore


def test_a_regular_file_is_read_within_its_bound(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"12345")
    assert read_regular(tmp_path / "f", 5) == b"12345"
    with pytest.raises(UnsafeFile, match="is larger than 4 bytes"):
        read_regular(tmp_path / "f", 4)


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
    assert load_history(tmp_path / "suite.json", "suite") == {"name": "suite", "history": []}
    (tmp_path / "status").mkdir()
    os.mkfifo(tmp_path / "status" / "suite.json")
    store = StatusStore(tmp_path / "status")
    assert store.read("suite") is None
    assert "is a FIFO, not a regular file" in store.problems[0]
