"""An environment on disk (`runtime/environments/environment_files.py`): the installer's copy of
the checkout leaves out what it must not see and what is not a file, folder or link; a kept
entry is restored only when its record is its own key's, read as an untrusted file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalward.runtime.environments.environment_files import (
    RECORD,
    copy_source,
    everything,
    kept_state,
)

pytestmark = pytest.mark.unit


def test_the_installer_s_copy_leaves_out_what_it_is_told_and_special_files(
    tmp_path: Path,
) -> None:
    source = tmp_path / "checkout"
    (source / "agent" / ".evalward").mkdir(parents=True)
    (source / "agent" / "requirements.txt").write_text("httpx\n", encoding="utf-8")
    (source / "agent" / ".evalward" / "secret").write_text("x", encoding="utf-8")
    (source / "agent" / "link").symlink_to("requirements.txt")
    os.mkfifo(source / "agent" / "pipe")
    target = tmp_path / "copy"
    copy_source(source, target, frozenset({"agent/.evalward"}))
    copied = sorted(p.relative_to(target).as_posix() for p in everything(target))
    assert copied == ["agent", "agent/link", "agent/requirements.txt"]
    assert (target / "agent" / "link").is_symlink()  # copied as a link, not followed


def _entry(tmp_path: Path, record: object) -> Path:
    kept = tmp_path / "entry"
    kept.mkdir()
    (kept / RECORD).write_text(json.dumps(record), encoding="utf-8")
    return kept


def test_an_entry_recorded_for_its_key_can_be_restored(tmp_path: Path) -> None:
    assert kept_state(_entry(tmp_path, {"key": "k1"}), "k1") == "ok"
    assert kept_state(tmp_path / "absent", "k1") == ""  # nothing kept: nothing to say


@pytest.mark.parametrize("record", [{"key": "other"}, ["k1"], {"no": "key"}])
def test_an_entry_recorded_for_another_key_or_none_is_refused(
    tmp_path: Path, record: object
) -> None:
    assert kept_state(_entry(tmp_path, record), "k1") == f"{RECORD} is another environment's"


def test_an_entry_without_a_record_or_with_a_fifo_for_one_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert kept_state(empty, "k1") == f"it has no {RECORD}"
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / RECORD)
    state = kept_state(fifo, "k1")  # read without waiting on it
    assert state.startswith(f"its {RECORD} ")
    assert state != "ok"
