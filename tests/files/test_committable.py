"""What git would commit of a working tree, each path asked once (`files/committable.py`):
tracked is committable whatever `.gitignore` says, untracked only when not ignored, and the
answers hold for the run."""

from __future__ import annotations

import pytest

from evalward.files.committable import WorkingTreeAnswers
from evalward.git import Git
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


def _repo(repo: GitRepo) -> WorkingTreeAnswers:
    repo.commit("base", {"agents/bot.yaml": "kind: Agent\n", "keep.log": "tracked\n"})
    repo.write(
        {
            ".gitignore": "*.log\nbuild/\n",
            "agents/new.yaml": "kind: Agent\n",
            "debug.log": "ignored\n",
            "build/out.txt": "ignored\n",
        }
    )
    return WorkingTreeAnswers(Git(repo.path))


def test_tracked_and_untracked_unignored_files_are_committable(repo: GitRepo) -> None:
    answers = _repo(repo)
    asked = ["agents/bot.yaml", "keep.log", "agents/new.yaml", "debug.log", "build/out.txt"]
    assert answers.committable(asked) == {"agents/bot.yaml", "keep.log", "agents/new.yaml"}
    assert answers.committable([]) == set()


def test_the_ignored_paths_are_listed_an_ignored_folder_once(repo: GitRepo) -> None:
    assert _repo(repo).ignored() == {"debug.log", "build"}


def test_an_answer_holds_for_the_run_once_given(repo: GitRepo) -> None:
    answers = _repo(repo)
    assert answers.committable(["agents/new.yaml", "debug.log"]) == {"agents/new.yaml"}
    # the working tree changes under the run: what it was told stands
    (repo.path / ".gitignore").write_text("agents/\n", encoding="utf-8")
    assert answers.committable(["agents/new.yaml", "debug.log"]) == {"agents/new.yaml"}
    # a path not asked before is asked of git as the tree is now
    repo.write({"agents/third.yaml": "kind: Agent\n", "notes.txt": "x\n"})
    assert answers.committable(["agents/third.yaml", "notes.txt"]) == {"notes.txt"}
