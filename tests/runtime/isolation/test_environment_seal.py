"""Sealing an installed environment: what the installer (an agent user) left is copied into
a new folder, evalward's and read-only, and what it could use to reach outside is refused.
Real files, real owners, real processes: needs root."""

from __future__ import annotations

import os
import py_compile
import stat
import subprocess
from pathlib import Path

import pytest

from evalward.errors import AgentRunError
from evalward.runtime.isolation.seal import seal
from evalward.runtime.processes.strays import Spared, end_strays

pytestmark = pytest.mark.integration

BUILDER = 10001
TIMESTAMP = py_compile.PycInvalidationMode.TIMESTAMP
STRAY_UID = 3_100_000 + os.getpid() % 100_000
"""The installing user whose strays a test ends: no agent pair any job or worker claims
(10001-12000), whose end would take this test's processes first, nor another worker's."""
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


def sealed(top: Path) -> Path:
    """`seal` of `top` as a build is sealed; the copy."""
    target = top.with_name("sealed")
    seal(top, target, {BUILDER}, 0)
    return target


@needs_root
def test_what_the_installer_left_becomes_evalwards_and_read_only(tmp_path: Path) -> None:
    source = installed(tmp_path)
    assert seal(source, tmp_path / "sealed", {BUILDER}, 0) == 2
    top = tmp_path / "sealed"
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
def test_the_bytecode_compiled_at_install_is_still_valid_once_sealed(tmp_path: Path) -> None:
    """Python uses a module's `.pyc` only while its source has the modification time (and
    size) recorded in it; the agent user cannot write a new one into the sealed copy, so a
    copy that took new times would have every start compile the SDK from source."""
    top = installed(tmp_path)
    source = top / "venv" / "lib.py"
    os.utime(source, ns=(1_600_000_000_000_000_000, 1_600_000_000_123_456_789))
    compiled = Path(py_compile.compile(str(source), doraise=True, invalidation_mode=TIMESTAMP))
    for path in (compiled.parent, compiled):
        os.chown(path, BUILDER, BUILDER)
    copy = sealed(top) / "venv"
    header = (copy / "__pycache__" / compiled.name).read_bytes()[:16]
    info = (copy / "lib.py").stat()
    assert info.st_mtime_ns == 1_600_000_000_123_456_789
    assert int.from_bytes(header[8:12], "little") == int(info.st_mtime)
    assert int.from_bytes(header[12:16], "little") == info.st_size


@needs_root
def test_a_link_out_to_a_place_an_agent_user_can_change_is_refused(tmp_path: Path) -> None:
    top = installed(tmp_path)
    planted = tmp_path / "planted"
    planted.mkdir()
    os.chown(planted, BUILDER, BUILDER)
    (top / "venv" / "escape").symlink_to(planted)
    with pytest.raises(AgentRunError, match=r"the link venv/escape -> .*planted"):
        sealed(top)


@needs_root
def test_a_link_climbing_out_by_its_relative_path_is_refused(tmp_path: Path) -> None:
    top = installed(tmp_path)
    (tmp_path / "outside.py").write_text("")
    os.chown(tmp_path / "outside.py", BUILDER, BUILDER)
    (top / "venv" / "sneaky.py").symlink_to("../../outside.py")
    with pytest.raises(AgentRunError, match="leads out of the environment"):
        sealed(top)


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
        sealed(top)  # evalward is root: root's own files are refused too
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
    assert seal(top, tmp_path / "sealed", {BUILDER}, 0) == 3  # tool, lib.py, the binary once
    copy = tmp_path / "sealed" / "venv"
    linked = (copy / "bin" / "esbuild").stat()
    assert (linked.st_uid, stat.S_IMODE(linked.st_mode)) == (0, 0o555)
    assert linked.st_ino == (copy / "a-platform-package" / "esbuild").stat().st_ino


@needs_root
def test_a_link_chain_through_a_link_to_the_root_is_resolved_hop_by_hop(tmp_path: Path) -> None:
    """`venv/hop -> /` passes a check of each link by its text; `venv/bin/tool ->
    ../hop<a folder of the installer's>/tool` reads as inside the environment, but leads to
    a file the agent user can rewrite after the seal."""
    top = installed(tmp_path)
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "tool").write_text("#!/bin/sh\n")
    os.chown(planted, BUILDER, BUILDER)
    (top / "venv" / "hop").symlink_to("/")
    (top / "venv" / "bin" / "tool2").symlink_to(f"../hop{planted}/tool")
    with pytest.raises(AgentRunError, match=r"the link venv/bin/tool2 -> \.\./hop/.*planted/tool"):
        sealed(top)
    assert not (tmp_path / "sealed").exists(), "nothing of a refused seal is left"


@needs_root
def test_links_to_files_no_agent_user_can_change_are_kept(tmp_path: Path) -> None:
    """The interpreter a virtualenv links to, through a chain (python3 -> python ->
    /usr/bin/env), and a link inside the environment."""
    top = installed(tmp_path)
    (top / "venv" / "inside").symlink_to("bin/python3")
    (top / "venv" / "through-root").symlink_to("/usr/../usr/bin/env")
    copy = sealed(top)
    assert (copy / "venv" / "inside").resolve() == Path("/usr/bin/env").resolve()
    assert (copy / "venv" / "through-root").is_symlink()


@needs_root
def test_a_file_open_for_writing_before_the_seal_cannot_change_the_sealed_copy(
    tmp_path: Path,
) -> None:
    """A process the installer left (here, this test's descriptor) writes after the seal:
    the copy is made of new files, so it writes only the old one."""
    top = installed(tmp_path)
    with (top / "venv" / "lib.py").open("a") as kept_open:
        copy = sealed(top)
        kept_open.write("x = 'rewritten after the seal'\n")
    assert (copy / "venv" / "lib.py").read_text() == "x = 1\n"
    assert (copy / "venv" / "lib.py").stat().st_ino != (top / "venv" / "lib.py").stat().st_ino


@needs_root
def test_every_process_of_the_installing_user_ends_but_the_spared(tmp_path: Path) -> None:
    """A process that left the install's session (setsid) and keeps forking ends; a program
    evalward started as the same user (another agent of the side, mid-run) does not."""
    uid = STRAY_UID
    spared = subprocess.Popen(["sleep", "60"], user=uid, group=uid, start_new_session=True)
    stray = subprocess.Popen(
        ["sh", "-c", "while true; do sleep 60 & sleep 0.01; done"],
        user=uid,
        group=uid,
        start_new_session=True,
    )
    try:
        assert end_strays(uid, Spared(frozenset({spared.pid}))) >= 1
        assert stray.wait(timeout=30) == -9
        assert spared.poll() is None, "the spared session runs on"
        assert end_strays(uid, Spared(frozenset({spared.pid}))) == 0, "nothing of the stray is left"
    finally:
        spared.kill()
        spared.wait()
        stray.kill()
        stray.wait()


@needs_root
def test_a_link_that_leaves_and_comes_back_through_a_changeable_folder_is_refused(
    tmp_path: Path,
) -> None:
    """`venv/back` ends inside the environment, but by way of a link in a folder the agent
    user keeps, which it can point elsewhere after the seal; and a loop of links."""
    top = installed(tmp_path)
    planted = tmp_path / "planted"
    planted.mkdir()
    os.chown(planted, BUILDER, BUILDER)
    (planted / "again").symlink_to(tmp_path / "sealed" / "venv" / "lib.py")
    (top / "venv" / "back").symlink_to(planted / "again")
    with pytest.raises(AgentRunError, match=r"venv/back -> .*planted/again, which leads out of"):
        sealed(top)
    (tmp_path / "loop").mkdir()
    looping = installed(tmp_path / "loop")  # a seal takes its source: a new one
    (looping / "venv" / "one").symlink_to("two")
    (looping / "venv" / "two").symlink_to("one")
    with pytest.raises(AgentRunError, match=r"leads out of the environment in a loop"):
        sealed(looping)
