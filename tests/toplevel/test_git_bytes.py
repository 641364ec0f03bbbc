"""The git layer with file names a pull request chooses: read back exactly, never confused with
one another, never a crash."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalward.git import Git
from evalward.text.escaping import printable
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

LATIN1 = os.fsdecode(b"evals/caf\xe9.yaml")


def _hostile_repo(tmp_path: Path) -> tuple[GitRepo, str]:
    repo = GitRepo(tmp_path / "repo")
    repo.write(
        {
            "evals/a\nHEAD:w.yaml": "newline\n",
            "w.yaml": "planted\n",
            "evals/b.yaml": "real b\n",
            "-rf": "dash\n",
            "*.yaml": "star\n",
            "shared/prompt.md": "shared\n",
        }
    )
    Path(repo.path / LATIN1).write_bytes(b"latin\n")
    os.symlink("../shared/prompt.md", repo.path / "evals" / "prompt.md")
    os.symlink("../../etc/passwd", repo.path / "evals" / "out.md")
    os.symlink("evals", repo.path / "linked")
    return repo, repo.commit("hostile names")


def test_contents_are_read_by_path_whatever_the_path_holds(tmp_path: Path) -> None:
    repo, commit = _hostile_repo(tmp_path)
    git = Git(repo.path)

    read = git.read_files(
        commit,
        ["evals/a\nHEAD:w.yaml", "evals/b.yaml", LATIN1, "-rf", "*.yaml", "missing\nw.yaml"],
    )

    assert read == {
        "evals/a\nHEAD:w.yaml": b"newline\n",
        "evals/b.yaml": b"real b\n",
        LATIN1: b"latin\n",
        "-rf": b"dash\n",
        "*.yaml": b"star\n",
    }
    assert Path(repo.path / LATIN1).read_bytes() == b"latin\n", "the name maps back to the file"


def test_links_are_followed_inside_the_tree_only(tmp_path: Path) -> None:
    repo, commit = _hostile_repo(tmp_path)
    git = Git(repo.path)

    read = git.read_files(commit, ["evals/prompt.md", "evals/out.md", "linked/b.yaml"])

    assert read == {"evals/prompt.md": b"shared\n", "linked/b.yaml": b"real b\n"}
    assert git.links_among(commit, ["evals/prompt.md", "evals/b.yaml"]) == {"evals/prompt.md"}


def test_paths_written_with_dots_are_resolved_in_the_tree_never_handed_to_git(
    tmp_path: Path,
) -> None:
    """A definition may name `../x`, `./x` or `a//b`: git would read such a path from its
    working directory and fail the whole gate on one that leads out of the repository."""
    repo, commit = _hostile_repo(tmp_path)
    git = Git(repo.path)
    asked = ["../shared/prompt.md", "evals/../shared/prompt.md", "./evals/b.yaml", "evals//b.yaml"]

    read = git.read_files(commit, asked)

    assert read == {
        "evals/../shared/prompt.md": b"shared\n",
        "./evals/b.yaml": b"real b\n",
        "evals//b.yaml": b"real b\n",
    }
    # normalised from the root: `../shared/prompt.md` leads out of the repository
    assert git.needed_for(commit, asked) == ["evals/b.yaml", "shared/prompt.md"]
    assert git.links_among(commit, ["../evals/prompt.md", "evals/prompt.md"]) == {"evals/prompt.md"}


def test_pathspecs_are_literal_and_listings_decode_any_byte(tmp_path: Path) -> None:
    repo, commit = _hostile_repo(tmp_path)
    git = Git(repo.path)

    assert git.tracked("*.yaml") == ["*.yaml"]
    assert git.tracked("-rf") == ["-rf"]
    assert LATIN1 in git.files_in(commit, "evals")
    changed = {c.path for c in git.changed_files(git.resolve("HEAD"), None)}
    assert changed == set()
    Path(repo.path / LATIN1).write_bytes(b"edited\n")
    assert git.dirty_paths() == {LATIN1}
    assert {c.path for c in git.changed_files(commit, None)} == {LATIN1}


def test_a_name_that_cannot_be_shown_is_quoted_and_escaped() -> None:
    assert printable("evals/ok.yaml") == "evals/ok.yaml"
    assert printable("evals/é.yaml") == "evals/é.yaml"
    assert printable("evals/a\nHEAD:w.yaml") == '"evals/a\\nHEAD:w.yaml"'
    assert printable(LATIN1) == '"evals/caf\\xe9.yaml"'
    assert printable("x\u202ey") == '"x\\u202ey"'
    assert printable('say "hi"') == '"say \\"hi\\""'


def test_dirty_paths_asked_where_they_are_are_literal_and_decode_any_byte(tmp_path: Path) -> None:
    """Only where the definitions look is asked of git: each path is a name, never a glob or
    pathspec magic, and what git answers maps back to the same bytes."""
    repo, _ = _hostile_repo(tmp_path)
    git = Git(repo.path)
    Path(repo.path / "w.yaml").write_text("edited\n")
    Path(repo.path / LATIN1).write_bytes(b"edited\n")
    (repo.path / "evals" / "new\nfile.md").write_text("untracked\n")
    (repo.path / ":(glob)**").write_text("untracked\n")

    assert git.dirty_paths(["*.yaml", "-rf"]) == set()
    assert git.dirty_paths(["evals"]) == {LATIN1, "evals/new\nfile.md"}
    assert git.dirty_paths([":(glob)**"]) == {":(glob)**"}
    assert git.dirty_paths(["shared"], ["**/*.yaml"]) == {LATIN1, "w.yaml"}
    assert git.dirty_paths([]) == set()
