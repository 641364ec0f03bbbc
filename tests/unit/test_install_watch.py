"""What an install has written is counted as the seal counts it: each file once however many
hard links it has, links not followed, and no further than the cap needs."""

from __future__ import annotations

import os
from pathlib import Path

from evalward.runtime.environments.install_watch import measure


def test_hard_links_count_once_and_links_are_not_followed(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "a.bin").write_bytes(b"x" * 1000)
    os.link(tmp_path / "lib" / "a.bin", tmp_path / "lib" / "b.bin")  # as uv links its cache
    (tmp_path / "out").symlink_to("/usr")  # never walked
    assert measure(tmp_path) == (3, 1000)  # lib, its file (twice named), the link


def test_counting_stops_past_the_most_it_needs(tmp_path: Path) -> None:
    for number in range(50):
        (tmp_path / f"f{number}").touch()
    assert measure(tmp_path, most=10)[0] == 11
    assert measure(tmp_path)[0] == 50
