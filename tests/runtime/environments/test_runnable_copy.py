"""The installer evalward ships, run by an agent user when evalward itself is installed where
that user cannot go (a virtualenv under root's 0700 home, as on a self-hosted runner).
Real files, a real second user: needs root."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalward.runtime.environments.installers import open_to_others, runnable_copy
from support.agentuser import AGENT_UID

pytestmark = pytest.mark.integration

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="running as a second user needs root")


@pytest.fixture
def live() -> Iterator[Path]:
    """A folder every user may enter, as the environments' live folder is."""
    root = Path(tempfile.mkdtemp(prefix="evalward-tools-"))
    root.chmod(0o711)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def run_as_agent(program: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(program)],
        user=AGENT_UID,
        group=AGENT_UID,
        extra_groups=[],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@needs_root
@pytest.mark.usefixtures("head_strays_made")
def test_a_program_in_a_private_folder_is_run_from_a_copy_the_agent_user_may_run(
    tmp_path: Path, live: Path
) -> None:
    private = tmp_path / "venv" / "bin"
    private.mkdir(parents=True)
    tmp_path.chmod(0o700)
    program = private / "uv"
    program.write_text("#!/bin/sh\necho installer ran as $(id -u)\n")
    program.chmod(0o755)
    assert not open_to_others(program)
    with pytest.raises(PermissionError):
        run_as_agent(program)

    copy = runnable_copy(program, live / ".tools")

    assert copy == live / ".tools" / "uv" and open_to_others(copy)
    ran = run_as_agent(copy)
    assert ran.returncode == 0 and ran.stdout.strip() == f"installer ran as {AGENT_UID}"
    assert runnable_copy(program, live / ".tools") == copy  # made once, then reused
    assert sorted(p.name for p in (live / ".tools").iterdir()) == ["uv"]


def test_a_program_others_may_run_is_used_where_it_is(tmp_path: Path, live: Path) -> None:
    shared = Path(tempfile.mkdtemp(prefix="evalward-shared-"))
    try:
        shared.chmod(0o755)
        program = shared / "uv"
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
        if not open_to_others(shared.parent):  # a machine whose temp folder is private
            pytest.skip(f"{shared.parent} is not open to other users here")
        assert runnable_copy(program, live / ".tools") == program
        assert not (live / ".tools").exists()
        program.chmod(0o750)
        assert not open_to_others(program)
    finally:
        shutil.rmtree(shared, ignore_errors=True)
