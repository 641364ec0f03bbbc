"""What the run, plan and merge commands check before a run (`cli/_local.py`), on real
repositories: the root is a folder, `--base` names a commit of a repository that has one, and
each mistake is one message saying what to give instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.cli._local import check_base, repository
from evalward.errors import ConfigError
from evalward.git import Git
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


def test_the_root_is_a_folder(tmp_path: Path) -> None:
    assert repository(str(tmp_path)) == tmp_path.resolve()
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match="file: not a directory; give a folder of the repo"):
        repository(str(tmp_path / "file"))


def test_the_root_is_the_top_of_the_working_tree_a_folder_is_in(tmp_path: Path) -> None:
    """As git finds it from a folder inside, a name that ends in a space or a line break
    included (git ends the line it names the top with after it)."""
    top = GitRepo(tmp_path / "a repo \n").path
    inner = top / "agents" / "deeper"
    inner.mkdir(parents=True)
    assert repository(str(inner)) == top.resolve()
    assert Git(inner).top() == top.resolve()
    assert not Git(inner).is_top() and Git(top).is_top()


def test_a_base_that_is_a_branch_tag_or_commit_is_taken(repo: GitRepo) -> None:
    first = repo.commit("first", {"a.txt": "1"})
    repo.git("tag", "v1")
    git = Git(repo.path)
    for base in ("main", "v1", first, first[:8]):
        check_base(git, base)
    check_base(git, None)


def test_a_base_that_names_nothing_says_what_to_give(repo: GitRepo) -> None:
    repo.commit("first", {"a.txt": "1"})
    with pytest.raises(ConfigError) as raised:
        check_base(Git(repo.path), "mian")
    said = str(raised.value)
    assert said.startswith(
        f"--base mian: no branch, tag or commit 'mian' in {repo.path} (did you mean 'main'?); "
    ), said
    assert "or leave out --base to run every Eval" in said


def test_a_folder_without_git_is_said_so(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(ConfigError, match="is not in a git repository, so there is nothing"):
        check_base(Git(plain), "main")


def test_an_orphan_branch_is_said_to_be_one_not_an_empty_repository(tmp_path: Path) -> None:
    unborn = GitRepo(tmp_path / "unborn")
    unborn.commit("first", {"a.txt": "1"})
    unborn.git("checkout", "-q", "--orphan", "fresh")  # a HEAD with no commit, main has one
    with pytest.raises(ConfigError, match="HEAD: the branch fresh has no commit yet"):
        check_base(Git(unborn.path), "main")
