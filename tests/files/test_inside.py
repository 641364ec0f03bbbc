"""What stays inside the repository (`files/inside.py`), on a real tree with links: a path
from the root, `..` and links that leave refused; the old relative rule as a second
candidate; what is on the way to a folder evalward needs; every path a read depends on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalward.errors import OutsideRepository
from evalward.files.inside import (
    file_on_the_way,
    leads_outside,
    leaves_repository,
    link_on_the_way,
    looked_up,
    program_path,
    reference_candidates,
    repo_path,
)

pytestmark = pytest.mark.unit


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "agents" / "prompts").mkdir(parents=True)
    (root / "agents" / "prompts" / "bot.md").write_text("Be kind.", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("key", encoding="utf-8")
    (root / "out").symlink_to(tmp_path / "secret.txt")
    (root / "alias").symlink_to("agents/prompts")
    (root / "loop").symlink_to("loop")
    return root


def test_a_path_is_read_from_the_root_whatever_names_it(repo: Path) -> None:
    real = repo.resolve()
    assert repo_path(repo, "agents/prompts/bot.md") == real / "agents/prompts/bot.md"
    assert repo_path(repo, "/agents/prompts/bot.md") == real / "agents/prompts/bot.md"
    assert repo_path(repo, "alias/bot.md") == real / "agents/prompts/bot.md"
    assert repo_path(repo, "loop") == real / "loop"  # reads as missing, not outside


@pytest.mark.parametrize("reference", ["../secret.txt", "out", "/../secret.txt", "a/../../x"])
def test_a_path_that_leaves_the_repository_is_refused(repo: Path, reference: str) -> None:
    with pytest.raises(OutsideRepository):
        repo_path(repo, reference)


def test_links_are_followed_to_see_where_they_lead(repo: Path) -> None:
    assert leads_outside(repo, repo / "out")
    assert not leads_outside(repo, repo / "alias" / "bot.md")
    assert not leads_outside(repo, repo / "loop")


def test_where_a_link_leads_is_read_from_the_links_of_the_repository_alone(
    repo: Path, tmp_path: Path
) -> None:
    """A link out says so by what it says: a place outside that leads back in (the
    machine's, which no commit holds) is not looked at, where `leads_outside` follows it."""
    (tmp_path / "back").symlink_to(repo / "agents")
    (repo / "via-outside").symlink_to(tmp_path / "back")
    (repo / "up").symlink_to("agents/../..")
    (repo / "chained").symlink_to("alias/../../out")
    (repo / "absolute-in").symlink_to(repo.resolve() / "agents")

    assert not leads_outside(repo, repo / "via-outside")
    for out in ("via-outside", "out", "up", "chained"):
        assert leaves_repository(repo, repo / out), out
    for inside in ("alias", "alias/bot.md", "absolute-in", "loop", "missing"):
        assert not leaves_repository(repo, repo / inside), inside
    assert leaves_repository(repo, tmp_path / "back")


def test_a_program_is_a_path_only_when_it_has_a_slash(repo: Path) -> None:
    assert program_path(repo, "python3") is None
    assert program_path(repo, "./agents/prompts/bot.md") == repo.resolve() / "agents/prompts/bot.md"
    with pytest.raises(OutsideRepository):
        program_path(repo, "../secret.txt")


def test_the_old_rule_is_a_second_candidate_after_the_root() -> None:
    assert reference_candidates("agents/bot.yaml", "prompts/bot.md") == [
        "prompts/bot.md",
        "agents/prompts/bot.md",
    ]
    assert reference_candidates("agents/bot.yaml", "/prompts/bot.md") == ["prompts/bot.md"]
    assert reference_candidates("bot.yaml", "prompts/bot.md") == ["prompts/bot.md"]
    assert reference_candidates("agents/bot.yaml", "../agents/x.md") == [
        "../agents/x.md",
        "agents/x.md",
    ]


def test_what_stands_on_the_way_to_a_folder_is_found(repo: Path) -> None:
    (repo / "results").write_text("a file where a folder must be", encoding="utf-8")
    assert file_on_the_way(repo, repo / "results" / "run") == repo / "results"
    assert file_on_the_way(repo, repo / "agents" / "new") is None
    assert file_on_the_way(repo, repo.parent / "elsewhere") is None
    assert link_on_the_way(repo, repo / "alias" / "deeper") == repo / "alias"
    assert link_on_the_way(repo, repo / "agents" / "prompts") is None
    os.mkfifo(repo / "pipe")
    assert file_on_the_way(repo, repo / "pipe" / "x") == repo / "pipe"


def test_a_read_depends_on_every_link_and_folder_on_its_way(repo: Path) -> None:
    assert looked_up(repo, "alias/bot.md") == {
        "alias",
        "agents",
        "agents/prompts",
        "agents/prompts/bot.md",
    }
    assert looked_up(repo, "agents/prompts/bot.md") == {
        "agents",
        "agents/prompts",
        "agents/prompts/bot.md",
    }
    assert looked_up(repo, "out") == {"out"}  # a link out of the repository ends the walk
