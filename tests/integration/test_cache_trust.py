"""Which result caches the action reads: never one the commit under test can fill."""

from __future__ import annotations

import os
from pathlib import Path

from evalward.action import _committed_cache
from evalward.git import Git
from gitrepo import GitRepo


def test_an_untracked_cache_in_the_checkout_or_one_outside_it_is_trusted(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("code", {"agents/a.yaml": "x: 1\n"})
    (repo.path / ".evalward" / "cache" / "results").mkdir(parents=True)
    (repo.path / ".evalward" / "cache" / "results" / "k.json").write_text("{}")
    git = Git(repo.path)
    assert _committed_cache(git, repo.path, repo.path / ".evalward" / "cache") is None
    assert _committed_cache(git, repo.path, tmp_path / "elsewhere") is None


def test_committed_files_or_a_committed_symlink_make_the_cache_untrusted(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("forged", {"ci/cache/results/ab/ab12.json": "{}"})
    git = Git(repo.path)
    reason = _committed_cache(git, repo.path, repo.path / "ci" / "cache")
    assert reason is not None and "1 file(s) under ci/cache are committed" in reason

    os.symlink("ci", repo.path / ".evalward")
    repo.commit("a link to it")
    reason = _committed_cache(git, repo.path, repo.path / ".evalward" / "cache")
    assert reason is not None and ".evalward is a symbolic link" in reason
