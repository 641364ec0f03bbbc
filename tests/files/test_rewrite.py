"""A user's file rewritten whole or not at all (`files/rewrite.py`): through a link the file
it names, its mode kept, a new one with the mode the umask gives, and a write that fails
leaving the file as it was with nothing beside it."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from evalward.files.rewrite import NotCreated, create_all, rewrite

pytestmark = pytest.mark.unit


def test_the_file_a_link_names_is_rewritten_with_its_mode(tmp_path: Path) -> None:
    kept = tmp_path / "kept.yaml"
    kept.write_bytes(b"old\n")
    kept.chmod(0o640)
    link = tmp_path / "link.yaml"
    link.symlink_to(kept.name)
    rewrite(link, b"new\n")
    assert link.is_symlink() and kept.read_bytes() == b"new\n"
    assert kept.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.yaml", "link.yaml"]


def test_a_new_file_gets_the_mode_the_umask_gives(tmp_path: Path) -> None:
    mask = os.umask(0o027)
    try:
        rewrite(tmp_path / ".gitignore", b".evalward/\n")
    finally:
        os.umask(mask)
    assert (tmp_path / ".gitignore").stat().st_mode & 0o777 == 0o640


def test_a_write_that_fails_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = tmp_path / "kept.yaml"
    kept.write_bytes(b"old\n")

    def refuse(self: Path, target: Path) -> Path:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        rewrite(kept, b"new\n")
    assert kept.read_bytes() == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.yaml"]


def test_create_all_makes_every_file_or_none(tmp_path: Path) -> None:
    """A file that is there already is never written over: the ones made before it are
    taken back, and the refusal names it."""
    made = create_all({tmp_path / "a" / "one.yaml": "1\n", tmp_path / "two.yaml": "2\n"})
    assert [p.read_text() for p in made] == ["1\n", "2\n"]
    (tmp_path / "kept.yaml").write_text("mine\n")
    with pytest.raises(NotCreated) as failed:
        create_all({tmp_path / "three.yaml": "3\n", tmp_path / "kept.yaml": "theirs\n"})
    assert failed.value.path == tmp_path / "kept.yaml"
    assert isinstance(failed.value.error, FileExistsError)
    assert not (tmp_path / "three.yaml").exists()
    assert (tmp_path / "kept.yaml").read_text() == "mine\n"
