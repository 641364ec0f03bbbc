"""The workspace handed back to its owner when the action ends (`action/ownership.py`), as root
on a real tree: what root wrote changes hands, a file with another name and anything behind a
link stay as they are, and nothing happens unless root runs it for another user's workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalward.action.ownership import hand_back

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="only root changes owners (CI runs as root)"),
]
RUNNER = 1001


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    os.chown(workspace, RUNNER, RUNNER)
    return workspace


def test_what_root_wrote_is_given_back_folders_on_the_way_included(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    results = workspace / "out" / "results"
    results.mkdir(parents=True)
    (results / "results.json").write_text("{}", encoding="utf-8")
    (workspace / ".evalward" / "cache").mkdir(parents=True)
    (workspace / ".evalward" / "cache" / "entry").write_text("x", encoding="utf-8")
    changed = hand_back(workspace, [results])
    for path in (
        workspace / "out",
        results,
        results / "results.json",
        workspace / ".evalward",
        workspace / ".evalward" / "cache" / "entry",
    ):
        assert path.lstat().st_uid == RUNNER, path
    assert changed == 6
    assert hand_back(workspace, [results]) == 0  # nothing of root's left


def test_a_file_with_another_name_and_what_is_behind_a_link_stay_root_s(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("root's", encoding="utf-8")
    results = workspace / "out"
    results.mkdir()
    os.link(outside / "passwd", results / "linked")  # a second name of a file outside
    (results / "pointer").symlink_to(outside / "passwd")
    (workspace / "via").symlink_to(outside)
    hand_back(workspace, [results, workspace / "via"])
    assert (outside / "passwd").stat().st_uid == 0
    assert outside.stat().st_uid == 0
    assert results.lstat().st_uid == RUNNER
    assert (results / "pointer").lstat().st_uid == 0  # a link: only regular files change hands


def test_a_workspace_root_owns_is_left_as_it_is(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "out").mkdir(parents=True)
    assert hand_back(workspace, [workspace / "out"]) == 0
    assert (workspace / "out").lstat().st_uid == 0
