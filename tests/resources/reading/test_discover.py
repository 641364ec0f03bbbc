"""Which files of a tree may hold resources (`resources/reading/discover.py`): every YAML file under
the configured roots, less the built-in excludes, `evalward.yaml` itself and its `exclude`
globs; never a folder reached by a link out of the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.resources.reading.discover import discover, excluded
from evalward.resources.reading.repo_config import RepoConfig

pytestmark = pytest.mark.unit


def _tree(root: Path, names: list[str]) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("kind: Agent\n", encoding="utf-8")


def _found(root: Path, config: RepoConfig) -> list[str]:
    return sorted(path.relative_to(root).as_posix() for path in discover(root, config))


def test_every_yaml_file_but_the_built_in_excludes_and_the_configuration(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        [
            "evalward.yaml",
            "agents/bot.yaml",
            "evals/bot.yml",
            "evals/notes.txt",
            "node_modules/pkg/x.yaml",
            ".venv/lib/y.yaml",
            ".git/z.yaml",
            "sub/evalward.yaml",
        ],
    )
    assert _found(tmp_path, RepoConfig()) == [
        "agents/bot.yaml",
        "evals/bot.yml",
        "sub/evalward.yaml",
    ]


def test_roots_and_exclude_globs_narrow_it(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        ["agents/bot.yaml", "agents/drafts/old.yaml", "agents/x.tmp.yaml", "ci/workflow.yaml"],
    )
    config = RepoConfig.model_validate(
        {"roots": ["agents"], "exclude": ["agents/drafts", "*.tmp.yaml"]}
    )
    assert _found(tmp_path, config) == ["agents/bot.yaml"]


def test_a_root_that_is_a_link_out_of_the_repository_is_not_walked(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _tree(outside, ["secret.yaml"])
    repo = tmp_path / "repo"
    _tree(repo, ["agents/bot.yaml"])
    (repo / "linked").symlink_to(outside)
    config = RepoConfig.model_validate({"roots": ["agents", "linked"]})
    assert _found(repo, config) == ["agents/bot.yaml"]


def test_an_exclude_matches_a_path_its_name_or_a_folder_above_it(tmp_path: Path) -> None:
    path = tmp_path / "evals" / "wip" / "a.yaml"
    assert excluded(path, tmp_path, ["evals/wip/a.yaml"])
    assert excluded(path, tmp_path, ["a.yaml"])
    assert excluded(path, tmp_path, ["evals/wip"])
    assert excluded(path, tmp_path, ["evals/*/a.yaml"])
    assert not excluded(path, tmp_path, ["evals/w"])
    assert not excluded(path, tmp_path, [])
