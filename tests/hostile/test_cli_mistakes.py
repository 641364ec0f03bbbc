"""User mistakes and hostile inputs at the command line: each gives one message naming the
file or the setting and exit 2, never a traceback and never a silent pass, and what a run has
already computed is not lost to a mistake it could have found before running."""

from __future__ import annotations

import subprocess

import pytest

from clirun import evalward
from gitrepo import GitRepo


def refused(done: subprocess.CompletedProcess[str], *said: str) -> None:
    """A configuration error: exit 2, one message naming what it is about, no traceback."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    for words in said:
        assert words in done.stderr, done.stderr


# --- init ----------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["agents", ".github"])
def test_init_writes_nothing_where_a_file_stands_for_a_folder_it_needs(
    repo: GitRepo, where: str
) -> None:
    (repo.path / where).write_text("notes\n")

    done = evalward("init", cwd=repo.path)

    refused(done, f"{where}: a file", "needs a folder", "nothing was written")
    assert sorted(p.name for p in repo.path.iterdir()) == sorted([".git", where])


def test_init_writes_nothing_where_gitignore_is_a_folder(repo: GitRepo) -> None:
    (repo.path / ".gitignore").mkdir()

    done = evalward("init", cwd=repo.path)

    refused(done, ".gitignore: a folder", "nothing was written")
    assert sorted(p.name for p in repo.path.iterdir()) == [".git", ".gitignore"]


def test_init_keeps_a_gitignore_that_is_not_utf8_byte_for_byte(repo: GitRepo) -> None:
    # git reads .gitignore as bytes: a Latin-1 file name in it is the user's business
    (repo.path / ".gitignore").write_bytes(b"caf\xe9/\n")

    done = evalward("init", cwd=repo.path)

    assert done.returncode == 0, done.stderr
    assert (repo.path / ".gitignore").read_bytes() == b"caf\xe9/\n.evalward/\n"
