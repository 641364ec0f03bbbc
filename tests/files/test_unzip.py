"""An archive from elsewhere is unpacked whole into evalward's folder or not at all
(`files/unzip.py`): every entry that could write outside it, or past a bound, refuses it
before one file is written (the action's `base-cache` runs it on a push run's artifact,
tests/action/trusted/test_base_cache_artifact.py)."""

from __future__ import annotations

import io
import stat
import zipfile
from pathlib import Path

import pytest

from evalward.errors import UnsafeArchive
from evalward.files.unzip import unzip

pytestmark = pytest.mark.hostile

BOUNDS = {"max_bytes": 1000, "max_entries": 5}


def archive(*entries: tuple[str | zipfile.ZipInfo, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as written:
        for name, content in entries:
            written.writestr(name, content)
    return buffer.getvalue()


def of_kind(name: str, kind: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (kind | 0o644) << 16
    return info


def test_files_and_folders_are_unpacked_owner_only_and_kept_out_entries_are_not(
    tmp_path: Path,
) -> None:
    data = archive(
        ("results/results.sqlite", "db"),
        ("scores/", ""),
        ("environments/base/bin/python", "#!/bin/sh"),
    )
    written = unzip(data, tmp_path, **BOUNDS, keep=lambda n: n.parts[0] != "environments")
    assert written == 1
    assert (tmp_path / "results" / "results.sqlite").read_text() == "db"
    assert (tmp_path / "scores").is_dir()
    assert not (tmp_path / "environments").exists()
    assert stat.S_IMODE((tmp_path / "results" / "results.sqlite").stat().st_mode) == 0o600


@pytest.mark.filterwarnings("ignore:Duplicate name")
@pytest.mark.parametrize(
    ("entries", "said"),
    [
        ((("/etc/evalward", "x"),), "not a plain relative name"),
        ((("a/../../b", "x"),), "not a plain relative name"),
        ((("a\\..\\b", "x"),), "not a plain relative name"),
        (((of_kind("fifo", stat.S_IFIFO), ""),), "not a file or a folder"),
        (((of_kind("dev", stat.S_IFCHR), ""),), "not a file or a folder"),
        (((of_kind("link", stat.S_IFLNK), "/etc/passwd"),), "not a file or a folder"),
        ((("a", "x"), ("a", "y")), "a name appears twice"),
        ((("a", "x"), ("a/b", "y")), "is a file and a folder of other entries"),
        ((("a/b", "y"), ("a", "x")), "is a file and a folder of other entries"),
        ((("a/", ""), ("a/b/c", "y"), ("a/b", "x")), "is a file and a folder of other entries"),
        ((("x" * 256, "y"),), "is a name longer than a file system takes"),
        (((("d" * 250 + "/") * 17 + "f", "y"),), "is a name longer than a file system takes"),
        (tuple((f"f{i}", "") for i in range(6)), "6 entries, more than the 5 allowed"),
        ((("big", "x" * 1001),), "1,009 bytes unpacked, more than the 1,000 allowed"),
    ],
)
def test_a_hostile_entry_refuses_the_whole_archive(
    tmp_path: Path, entries: tuple[tuple[str | zipfile.ZipInfo, str], ...], said: str
) -> None:
    into = tmp_path / "into"
    into.mkdir()
    data = archive(("first", "written?"), *entries) if len(entries) < 5 else archive(*entries)
    with pytest.raises(UnsafeArchive, match=said.replace("\\", "\\\\")):
        unzip(data, into, **BOUNDS)
    assert list(into.iterdir()) == []


def test_what_is_not_a_zip_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsafeArchive, match="not a zip archive"):
        unzip(b"<html>not found</html>", tmp_path, **BOUNDS)
