"""The places any user may write are walked once and kept for the machine's other jobs while
its boot and mounts are the same and the walk is recent; otherwise walked again."""

from __future__ import annotations

import json
import time
from pathlib import Path

from evalward.runtime import shared_places
from evalward.runtime.shared_places import found


def test_a_kept_walk_serves_the_same_mounts_and_a_changed_mount_table_walks_again(
    tmp_path: Path,
) -> None:
    mounts = tmp_path / "mountinfo"
    mounts.write_text("")  # no writable mount: the walk finds the fixed folders alone
    kept = tmp_path / "places"
    walked = found(kept, mounts)
    record = json.loads(kept.read_text())
    assert [Path(f) for f in record["folders"]] == list(walked.folders)

    planted = tmp_path / "open"
    planted.mkdir()
    record["folders"] = [str(planted)]
    kept.write_text(json.dumps(record))
    assert found(kept, mounts).folders == (planted,)  # read, not walked

    mounts.write_text("another mount table\n")
    assert found(kept, mounts).folders == walked.folders  # walked again
    assert json.loads(kept.read_text())["folders"] != [str(planted)]


def test_a_walk_older_than_its_time_is_made_again(tmp_path: Path) -> None:
    mounts = tmp_path / "mountinfo"
    mounts.write_text("")
    kept = tmp_path / "places"
    walked = found(kept, mounts)
    record = json.loads(kept.read_text())
    record["folders"] = [str(tmp_path)]
    record["at"] = time.time() - shared_places.KEPT_SECONDS - 1
    kept.write_text(json.dumps(record))
    assert found(kept, mounts).folders == walked.folders


def test_an_unreadable_kept_walk_is_walked_again(tmp_path: Path) -> None:
    mounts = tmp_path / "mountinfo"
    mounts.write_text("")
    kept = tmp_path / "places"
    kept.write_text("{not json")
    assert found(kept, mounts).folders == shared_places.find(mounts).folders
