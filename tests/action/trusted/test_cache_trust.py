"""Which caches the action reads: never one the commit under test can fill."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalward.action.trusted.trust import untrusted_cache
from evalward.git import Git
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


def test_an_untracked_cache_in_the_checkout_or_one_outside_it_is_trusted(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("code", {"agents/a.yaml": "x: 1\n"})
    (repo.path / ".evalward" / "cache" / "results").mkdir(parents=True)
    (repo.path / ".evalward" / "cache" / "results" / "k.json").write_text("{}")
    git = Git(repo.path)
    assert untrusted_cache(git, repo.path, repo.path / ".evalward" / "cache") is None
    assert untrusted_cache(git, repo.path, tmp_path / "elsewhere") is None


def test_committed_files_or_a_committed_symlink_make_the_cache_untrusted(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("forged", {"ci/cache/results/ab/ab12.json": "{}"})
    git = Git(repo.path)
    reason = untrusted_cache(git, repo.path, repo.path / "ci" / "cache")
    assert reason is not None and "1 file(s) under ci/cache are committed" in reason

    os.symlink("ci", repo.path / ".evalward")
    repo.commit("a link to it")
    reason = untrusted_cache(git, repo.path, repo.path / ".evalward" / "cache")
    assert reason is not None and ".evalward is a symbolic link" in reason


def test_a_cache_inside_a_submodule_or_a_nested_repository_is_untrusted(tmp_path: Path) -> None:
    """The outer index does not list a submodule's files: they pass a "tracked?" check."""
    inner = GitRepo(tmp_path / "forged-results")
    inner.commit("results", {"cache/results/ab/ab12.json": "{}"})
    repo = GitRepo(tmp_path / "repo")
    repo.commit("code", {"agents/a.yaml": "x: 1\n"})
    repo.git(
        "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner.path), "vendor"
    )
    repo.commit("a submodule")
    git = Git(repo.path)
    assert git.tracked("vendor/cache") == []
    reason = untrusted_cache(git, repo.path, repo.path / "vendor" / "cache")
    assert reason is not None and "vendor is a git submodule" in reason

    # Not checked out (no `.git` inside): still a gitlink in the index.
    repo.git("submodule", "deinit", "-q", "-f", "vendor")
    assert untrusted_cache(git, repo.path, repo.path / "vendor" / "cache") is not None

    GitRepo(repo.path / "tools" / "nested").commit("its own", {"x.txt": "x"})
    reason = untrusted_cache(git, repo.path, repo.path / "tools" / "nested" / "cache")
    assert reason is not None and "tools/nested is a git submodule or a repository" in reason


def test_one_reading_of_the_index_finds_what_ls_files_finds_under_a_path(tmp_path: Path) -> None:
    """`untrusted_cache` reads the index once for both its questions; what it finds under a
    path is what `git ls-files -- <path>` finds: not a sibling that only shares the prefix,
    and every name whatever its bytes."""
    repo = GitRepo(tmp_path / "repo")
    names = {
        ".evalward/status/a.json": "{}",
        ".evalward/status-old/b.json": "{}",  # shares the prefix, is not under it
        ".evalward/statusfile": "x",
        ".evalward/status/with space\nand newline.json": "{}",
        "top.txt": "x",
    }
    repo.commit("files", names)
    odd = os.fsdecode(b".evalward/status/\xff\xfe.json")  # not UTF-8
    (repo.path / odd).write_text("{}")
    repo.git("add", "-A")
    repo.commit("an odd name")
    git = Git(repo.path)
    index = git.index()
    for path in (".evalward/status", ".evalward", ".evalward/statusfile", "nowhere", "."):
        assert index.under(path) == git.tracked(path), path
    reason = untrusted_cache(git, repo.path, repo.path / ".evalward" / "status")
    assert reason is not None and "3 file(s) under .evalward/status are committed" in reason
    assert untrusted_cache(git, repo.path, repo.path / ".evalward" / "stat") is None
