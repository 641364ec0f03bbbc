"""Sealing an installed environment: what the installer (an agent user) left becomes
evalward's and read-only, and what it could use to reach outside is refused. Real files,
real owners: needs root."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from evalward.errors import AgentRunError
from evalward.runtime.seal import seal

BUILDER = 10001
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")


def installed(tmp_path: Path) -> Path:
    """A folder as an installer running as BUILDER leaves it."""
    top = tmp_path / "env"
    (top / "venv" / "bin").mkdir(parents=True)
    (top / "venv" / "bin" / "tool").write_text("#!/bin/sh\n")
    (top / "venv" / "bin" / "tool").chmod(0o4777)  # setuid, writable by all
    (top / "venv" / "lib.py").write_text("x = 1\n")
    (top / "venv" / "bin" / "python").symlink_to("/usr/bin/env")
    (top / "venv" / "bin" / "python3").symlink_to("python")
    os.mkfifo(top / "venv" / "pipe")
    for path in [top, *top.rglob("*")]:
        os.chown(path, BUILDER, BUILDER, follow_symlinks=False)
    return top


@needs_root
def test_what_the_installer_left_becomes_evalwards_and_read_only(tmp_path: Path) -> None:
    top = installed(tmp_path)
    assert seal(top, BUILDER, 0) == 2
    for path in [top, *top.rglob("*")]:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            continue
        assert info.st_uid == 0, path
        assert not info.st_mode & 0o222, f"{path} is writable"
        assert not info.st_mode & (stat.S_ISUID | stat.S_ISGID), f"{path} keeps setuid"
    assert stat.S_IMODE((top / "venv" / "bin" / "tool").stat().st_mode) == 0o555
    assert not (top / "venv" / "pipe").exists(), "special files are removed"


@needs_root
def test_a_link_out_to_a_place_an_agent_user_can_change_is_refused(tmp_path: Path) -> None:
    top = installed(tmp_path)
    planted = tmp_path / "planted"
    planted.mkdir()
    os.chown(planted, BUILDER, BUILDER)
    (top / "venv" / "escape").symlink_to(planted)
    with pytest.raises(AgentRunError, match=r"the link venv/escape -> .*planted"):
        seal(top, BUILDER, 0)


@needs_root
def test_a_link_climbing_out_by_its_relative_path_is_refused(tmp_path: Path) -> None:
    top = installed(tmp_path)
    (tmp_path / "outside.py").write_text("")
    os.chown(tmp_path / "outside.py", BUILDER, BUILDER)
    (top / "venv" / "sneaky.py").symlink_to("../../outside.py")
    with pytest.raises(AgentRunError, match="leads out of the environment"):
        seal(top, BUILDER, 0)


@needs_root
def test_a_hard_link_to_another_users_file_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    """A hard link the installer made to a file it does not own (where the kernel allows it)
    must not make evalward hand that file's content to everyone."""
    secret = tmp_path / "secret"
    secret.write_text("root only")
    secret.chmod(0o600)
    top = installed(tmp_path)
    os.link(secret, top / "venv" / "looks-harmless.txt")
    with pytest.raises(AgentRunError, match="belongs to uid 0"):
        seal(top, BUILDER, 0)  # evalward is root: root's own files are refused too
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


@needs_root
def test_a_hard_link_between_two_files_of_the_environment_is_sealed_once(tmp_path: Path) -> None:
    """As esbuild's installer leaves its binary: one file, linked into two packages."""
    top = installed(tmp_path)
    binary = top / "venv" / "a-platform-package" / "esbuild"
    binary.parent.mkdir()
    binary.write_bytes(b"\x7fELF")
    binary.chmod(0o755)
    os.link(binary, top / "venv" / "bin" / "esbuild")
    for path in (binary.parent, binary):
        os.chown(path, BUILDER, BUILDER)
    assert seal(top, BUILDER, 0) == 3  # tool, lib.py and the binary, counted once
    linked = (top / "venv" / "bin" / "esbuild").stat()
    assert (linked.st_uid, stat.S_IMODE(linked.st_mode)) == (0, 0o555)
    assert linked.st_ino == binary.stat().st_ino
